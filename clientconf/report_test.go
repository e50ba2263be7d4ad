package clientconf

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcphub/mcphub/registry"
)

// TestAddImported adds what is new, skips what exists and the hub's own
// entries, notes the disabled servers on warn, and tells each on out.
func TestAddImported(t *testing.T) {
	config := filepath.Join(t.TempDir(), "hub.toml")
	if err := os.WriteFile(config, []byte("[servers.old]\ncommand = \"old-mcp\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := ImportResult{
		Specs:      []registry.ServerSpec{{Name: "new", Command: "new-mcp", Disabled: true}, {Name: "old", Command: "other"}},
		HubEntries: []string{"mcphub"},
		Secrets:    []ImportedSecret{{Var: "NEW_TOKEN", Where: "servers.new.env.NEW_TOKEN"}},
	}
	var out, warn bytes.Buffer
	rep := AddImported(config, res, map[string]string{"new": "imported \"new\" disabled: ..."}, false, &out, &warn)
	if strings.Join(rep.Added, ",") != "new" || len(rep.Skipped) != 2 || len(rep.Disabled) != 1 || len(rep.Failed) != 0 || rep.Error != "" {
		t.Errorf("report = %+v", rep)
	}
	if len(rep.Secrets) != 1 || rep.Secrets[0] != (ReportedVar{Var: "NEW_TOKEN", Where: "servers.new.env.NEW_TOKEN"}) {
		t.Errorf("secrets = %+v", rep.Secrets)
	}
	want := "added new\nskipped old: it exists already (use --force to replace it)\nimported 1 servers into " + config + " (1 disabled, 2 skipped, 0 failed)\n"
	if out.String() != want {
		t.Errorf("out = %q, want %q", out.String(), want)
	}
	if warn.String() != "note: imported \"new\" disabled: ...\n" {
		t.Errorf("warn = %q", warn.String())
	}
}

// TestUnsetVarsWords: the note of a disabled server names what it lacks
// and how to enable it; the warning names what only this shell holds.
func TestUnsetVarsWords(t *testing.T) {
	u := UnsetVars{Server: "gh", Missing: []string{"A"}, Moved: []string{"B", "C"}, Disabled: true}
	want := `imported "gh" disabled: A is not set in the running hub (pid 7), and B, C must hold the secret from f.json, which this shell does not hold under that name; set them where mcphub starts, then: mcphub enable gh`
	if got := u.Note("the running hub (pid 7)", "f.json"); got != want {
		t.Errorf("note = %q\nwant   %q", got, want)
	}
	if u.Warning("x", "f.json") != "" || (UnsetVars{Server: "gh"}).Note("x", "f.json") != "" {
		t.Error("words for nothing")
	}
	u = UnsetVars{Server: "gh", Unsure: []string{"T"}}
	if w := u.Warning("the running hub (pid 7)", "f.json"); !strings.HasPrefix(w, `T is not set in the running hub (pid 7), so "gh" will show failed until it is; this shell holds the value from f.json`) {
		t.Errorf("warning = %q", w)
	}
}

// TestResultWriteText says what Write did, and puts warnings on warn.
func TestResultWriteText(t *testing.T) {
	c, _ := Lookup("claude")
	res := Result{File: "f.json", Wrote: true, Backup: "f.json.bak", Entry: "mcphub", Title: c.Title,
		Removed: []Removed{{Name: "gh", Reason: "the hub serves it"}}, Kept: []Kept{{Name: "x", Note: "differs"}}}
	res.AddNotes(c, false, "too many tools", "")
	var out, warn bytes.Buffer
	res.WriteText(&out, &warn)
	want := "backed up f.json to f.json.bak\nremoved \"gh\" from f.json (the hub serves it)\nwrote server \"mcphub\" into f.json\n" +
		"kept \"x\" in f.json: differs\nnote: restart Claude Code to load it\n"
	if out.String() != want || warn.String() != "warning: too many tools\n" {
		t.Errorf("out = %q\nwant  %q\nwarn = %q", out.String(), want, warn.String())
	}
}
