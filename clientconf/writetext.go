package clientconf

import (
	"fmt"
	"io"
)

// The text of mcphub connect: the entry a person pastes, and what Write
// did, as lines or as one JSON object.

// WriteEntry prints the hub's entry e, called name, for a person to paste
// into client c's file, and for Claude Code the claude mcp add line that
// adds it instead (stdio tells which kind of entry e is).
func (c Client) WriteEntry(w io.Writer, file, name string, e Entry, stdio bool) {
	where := fmt.Sprintf("under %q in %s", c.Key, file)
	if c.Format == FormatTOML {
		where = "to " + file
	}
	fmt.Fprintf(w, "# %s: add this %s (or run mcphub connect %s --write)\n%s", c.Title, where, c.Name, c.Snippet(name, e))
	if c.Name == "claude" {
		fmt.Fprintf(w, "# or:\n%s\n", claudeAddLine(name, e, stdio))
	}
}

// WriteNotEditable says that Write left file alone because the entry
// called name is where mcphub cannot edit it (err, ErrNotEditable): with
// asJSON as res with its Error, else with the entry e to put there by hand.
func (c Client) WriteNotEditable(w io.Writer, res Result, file, name string, e Entry, err error, asJSON bool) {
	msg := fmt.Sprintf("the entry %q is %v; replace it by hand", name, err)
	if asJSON {
		res.Error = msg + " (mcphub connect " + c.Name + " prints it)"
		res.WriteJSON(w)
		return
	}
	fmt.Fprintf(w, "%s: %s with:\n%s", file, msg, c.Snippet(name, e))
}

// AddNotes adds to the result of writing client c's file what its user
// should know: warning (a tool cap the endpoint exceeds) and note from the
// running hub, that the file now holds the hub's token (VS Code's, which
// often sits in version control), and which client to restart.
func (r *Result) AddNotes(c Client, holdsToken bool, warning, note string) {
	if warning != "" {
		r.Warnings = append(r.Warnings, warning)
	}
	if note != "" {
		r.Notes = append(r.Notes, note)
	}
	if c.Name == "vscode" && holdsToken {
		r.Notes = append(r.Notes, r.File+" now holds the hub's token; keep it out of version control")
	}
	if r.Wrote && (c.Name == "claude-desktop" || c.Name == "claude") {
		r.Notes = append(r.Notes, "restart "+c.Title+" to load it")
	}
}

// WriteJSON prints the result as one JSON object on a line, connect
// --json's answer.
func (r Result) WriteJSON(w io.Writer) {
	b, _ := marshal(r)
	fmt.Fprintf(w, "%s\n", b)
}

// WriteText prints the result for a person: what was backed up, removed,
// written and kept, and the notes on w; the warnings on warn, as every
// other warning goes.
func (r Result) WriteText(w, warn io.Writer) {
	if !r.Wrote {
		fmt.Fprintf(w, "%s is already up to date\n", r.File)
	}
	if r.Backup != "" {
		fmt.Fprintf(w, "backed up %s to %s\n", r.File, r.Backup)
	}
	for _, rm := range r.Removed {
		fmt.Fprintf(w, "removed %q from %s (%s)\n", rm.Name, r.File, rm.Reason)
	}
	if r.Wrote {
		fmt.Fprintf(w, "wrote server %q into %s\n", r.Entry, r.File)
	}
	for _, k := range r.Kept {
		fmt.Fprintf(w, "kept %q in %s: %s\n", k.Name, r.File, k.Note)
	}
	if r.Strict {
		fmt.Fprintf(w, "note: %s has comments or trailing commas, which %s may not accept\n", r.File, r.Title)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, wn := range r.Warnings {
		fmt.Fprintf(warn, "warning: %s\n", wn)
	}
}
