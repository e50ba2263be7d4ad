package clientconf

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mcphub/mcphub/internal/termtext"
	"github.com/mcphub/mcphub/registry"
)

// ImportReport is what an import did to the registry, mcphub import's
// --json answer. It holds names, never a value of the imported entries.
type ImportReport struct {
	File     string         `json:"file"`
	Registry string         `json:"registry"`
	Added    []string       `json:"added"`
	Disabled []ImportReason `json:"disabled"`
	Skipped  []ImportReason `json:"skipped"`
	Failed   []ImportReason `json:"failed"`
	Secrets  []ReportedVar  `json:"secrets"`
	Notes    []string       `json:"notes"`
	// Error says that some servers could not be added; the exit status
	// is 1 then.
	Error string `json:"error,omitempty"`
}

// ImportReason is a server an import did something to, and why.
type ImportReason struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// ReportedVar is a variable that now stands for a literal secret, and the
// first place that held it: names, never the value.
type ReportedVar struct {
	Var   string `json:"var"`
	Where string `json:"where"`
}

// AddImported writes the imported servers of res into the registry at
// config (replacing servers of the same name with force) and reports what
// it did; disabled are the notes of the servers DisableUnset disabled, by
// name (UnsetVars.Note). It tells each server as it goes: what was added
// or skipped on out (io.Discard for a --json run) and the disabled notes
// and failures on warn. The report's File and Notes are the caller's.
func AddImported(config string, res ImportResult, disabled map[string]string, force bool, out, warn io.Writer) ImportReport {
	rep := ImportReport{Registry: config, Added: []string{}, Disabled: []ImportReason{}, Skipped: []ImportReason{},
		Failed: []ImportReason{}, Secrets: []ReportedVar{}}
	for _, s := range res.Secrets {
		rep.Secrets = append(rep.Secrets, ReportedVar{Var: s.Var, Where: s.Where})
	}
	for _, name := range res.HubEntries {
		rep.Skipped = append(rep.Skipped, ImportReason{Name: name, Reason: "it points at this hub, which cannot be its own upstream"})
	}
	for _, s := range res.Specs {
		err := registry.AddServer(config, s, force)
		switch {
		case err == nil:
			rep.Added = append(rep.Added, s.Name)
			fmt.Fprintf(out, "added %s\n", s.Name)
			if n, ok := disabled[s.Name]; ok {
				rep.Disabled = append(rep.Disabled, ImportReason{Name: s.Name, Reason: n})
				fmt.Fprintf(warn, "note: %s\n", n)
			}
		case errors.Is(err, registry.ErrServerExists):
			rep.Skipped = append(rep.Skipped, ImportReason{Name: s.Name, Reason: "it exists already (use --force to replace it)"})
			fmt.Fprintf(out, "skipped %s: it exists already (use --force to replace it)\n", s.Name)
		default:
			rep.Failed = append(rep.Failed, ImportReason{Name: s.Name, Reason: err.Error()})
			fmt.Fprintf(warn, "could not add %s: %v\n", s.Name, err)
		}
	}
	fmt.Fprintf(out, "imported %d servers into %s (%d disabled, %d skipped, %d failed)\n",
		len(rep.Added), config, len(rep.Disabled), len(rep.Skipped), len(rep.Failed))
	if n := len(rep.Failed); n > 0 {
		rep.Error = fmt.Sprintf("%d %s could not be added to %s: %s", n, termtext.Plural(n, "server", "servers"), config, rep.Failed[0].Reason)
	}
	return rep
}

// WriteNotes prints, on w, what the import of file noted: each note of
// the reading, and for each literal secret the variable that now stands
// for it and where to set it (its name, never its value).
func (r ImportResult) WriteNotes(w io.Writer, file string) {
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, s := range r.Secrets {
		fmt.Fprintf(w, "note: %s: the literal secret now reads ${%s}; set %s where mcphub runs (its value is in %s)\n",
			s.Where, s.Var, s.Var, file)
	}
}

// Warning says, when the server refers to variables (Unsure) this shell
// holds with the value from file but the hub's environment (where) lacks,
// that the server will show failed until the hub has them and how to give
// them; "" when there are none.
func (u UnsetVars) Warning(where, file string) string {
	n := len(u.Unsure)
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%s %s not set in %s, so %q will show failed until %s; this shell holds the value from %s: restart the hub from here, or set %s where mcphub starts",
		strings.Join(u.Unsure, ", "), termtext.Plural(n, "is", "are"), where, u.Server, termtext.Plural(n, "it is", "they are"), file, termtext.Plural(n, "it", "them"))
}

// Note says why the imported server is disabled (the variables the hub's
// environment, where, lacks, and those that must hold a secret of file)
// and how to enable it; "" when it was not disabled.
func (u UnsetVars) Note(where, file string) string {
	if !u.Disabled {
		return ""
	}
	var why []string
	if len(u.Missing) > 0 {
		why = append(why, fmt.Sprintf("%s %s not set in %s", strings.Join(u.Missing, ", "), termtext.Plural(len(u.Missing), "is", "are"), where))
	}
	if len(u.Moved) > 0 {
		why = append(why, fmt.Sprintf("%s must hold the secret from %s, which this shell does not hold under that name", strings.Join(u.Moved, ", "), file))
	}
	n := len(u.Missing) + len(u.Moved)
	return fmt.Sprintf("imported %q disabled: %s; set %s where mcphub starts, then: mcphub enable %s",
		u.Server, strings.Join(why, ", and "), termtext.Plural(n, "it", "them"), u.Server)
}

// DisableUnsetNoted is DisableUnset with its words: it disables the
// servers that lack a variable in the hub's environment (where, which
// lacks unset), warns on warn of those that will fail until the hub is
// restarted from this shell, and returns the note that says why each
// disabled server is, by name, for AddImported.
func (r *ImportResult) DisableUnsetNoted(unset []string, where, file string, warn io.Writer) map[string]string {
	notes := map[string]string{}
	for _, u := range r.DisableUnset(unset) {
		if w := u.Warning(where, file); w != "" {
			fmt.Fprintf(warn, "warning: %s\n", w)
		}
		if n := u.Note(where, file); n != "" {
			notes[u.Server] = n
		}
	}
	return notes
}
