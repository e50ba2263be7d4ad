package clientconf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mcphub/mcphub/registry"
)

// Result is what Write did to a client's file, as connect --json prints
// it. It holds names, paths and reasons, never a token or another secret
// value.
type Result struct {
	Client string `json:"client"`
	File   string `json:"file"`
	// Wrote is false when the file was up to date already.
	Wrote  bool   `json:"wrote"`
	Backup string `json:"backup"`
	// Added or Updated is the hub's entry's name when it was added or
	// changed.
	Added   string    `json:"added,omitempty"`
	Updated string    `json:"updated,omitempty"`
	Removed []Removed `json:"removed"`
	Kept    []Kept    `json:"kept"`
	// Notes are more things to know, such as a client to restart.
	Notes []string `json:"notes,omitempty"`
	// Warnings are what may keep the entry from working as meant, such
	// as a tool cap of the client the endpoint exceeds.
	Warnings []string `json:"warnings,omitempty"`
	// Error says why nothing was written, when the entry cannot be edited.
	Error string `json:"error,omitempty"`
	// Strict is set when a client that wants standard JSON has a file
	// with comments or trailing commas, which it may not accept.
	Strict bool `json:"-"`
	// Title is the client's name in messages.
	Title string `json:"-"`
	// Entry is the hub's entry's name.
	Entry string `json:"-"`
}

// Removed is an entry Write removed from the client's file, and why.
type Removed struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Kept is an entry Write left in the client's file, and why.
type Kept struct {
	Name string `json:"name"`
	Note string `json:"note"`
}

// Move asks Write to also remove the client's entries that the hub now
// serves, so that no server runs twice.
type Move struct {
	// Registry is the hub's registry: an entry that runs just what one of
	// its enabled servers runs goes.
	Registry *registry.Registry
	// Self tells the hub apart from upstreams: older entries for the hub
	// (or for Profile) under another name go.
	Self registry.Self
	// Profile is the profile the hub's entry points at; "" for /mcp.
	Profile string
}

// Write adds or updates the hub's entry e, called name, in client c's
// file and, with move, removes the entries the hub serves. The file is
// read, edited, checked and replaced in one go, keeping a backup of the old
// one beside it; if it changes meanwhile (a client that rewrites its own
// file), the whole edit starts over. An entry mcphub cannot edit (a Codex
// entry written inline) makes it return ErrNotEditable and write nothing.
func Write(c Client, file, name string, e Entry, move *Move) (Result, error) {
	res := Result{Client: c.Name, File: file, Title: c.Title, Entry: name, Removed: []Removed{}, Kept: []Kept{}}
	for attempt := 1; ; attempt++ {
		f, err := readClientFile(file)
		if err != nil {
			return res, err
		}
		doc, err := parseClientDoc(file, f.content(), c)
		if err != nil {
			return res, err
		}
		plan := movePlan{notes: map[string]string{}}
		if move != nil {
			if plan, err = planMove(doc, move.Registry, move.Self, name, move.Profile); err != nil {
				return res, err
			}
		}
		out, action, err := editClientDoc(doc, name, e, &plan)
		if errors.Is(err, ErrNotEditable) {
			return res, err
		}
		if err != nil {
			return res, fmt.Errorf("%s: %w", file, err)
		}
		if err := verifyEdit(file, out, c, name, e, plan.remove); err != nil {
			return res, err
		}
		res.Removed, res.Kept = res.Removed[:0], res.Kept[:0]
		for _, k := range plan.keep {
			note := plan.notes[k.name]
			if note == "" {
				note = "the hub does not serve it (mcphub import " + file + " adds it)"
			}
			res.Kept = append(res.Kept, Kept{Name: k.name, Note: note})
		}
		if f.exists && bytes.Equal(out, f.content()) {
			return res, nil
		}
		backup, err := f.replace(f.withBOM(out), time.Now())
		if errors.Is(err, errChanged) && attempt < 3 {
			continue
		}
		if err != nil {
			return res, fmt.Errorf("%s: %w", file, err)
		}
		res.Wrote, res.Backup = true, backup
		switch action {
		case setAdded:
			res.Added = name
		case setUpdated:
			res.Updated = name
		}
		for i, r := range plan.remove {
			res.Removed = append(res.Removed, Removed{Name: r.name, Reason: plan.why[i]})
		}
		if d, ok := doc.(*jsonDoc); ok && c.Format == FormatJSON && !d.strict {
			res.Strict = true
		}
		return res, nil
	}
}

// editClientDoc sets the hub's entry and removes the planned entries. An
// entry that cannot be removed is moved from plan.remove to plan.keep,
// with a note saying why.
func editClientDoc(doc clientDoc, name string, e Entry, plan *movePlan) ([]byte, setAction, error) {
	action, err := doc.set(name, e)
	if err != nil {
		return nil, action, err
	}
	var removed []clientEntry
	var why []string
	for i, r := range plan.remove {
		err := doc.remove(r.name)
		switch {
		case errors.Is(err, ErrNotEditable):
			plan.notes[r.name] = fmt.Sprintf("%s, but it is %v; remove it by hand", plan.why[i], err)
			plan.keep = append(plan.keep, r)
		case err != nil:
			return nil, action, err
		default:
			removed, why = append(removed, r), append(why, plan.why[i])
		}
	}
	plan.remove, plan.why = removed, why
	out, err := doc.bytes()
	return out, action, err
}

// verifyEdit parses the edited file again and checks that it holds the
// hub's entry as intended and none of the removed ones, before anything is
// written.
func verifyEdit(file string, out []byte, c Client, name string, want Entry, removed []clientEntry) error {
	doc, err := parseClientDoc(file, out, c)
	if err != nil {
		return fmt.Errorf("the edited file would not parse, so it was not written: %w", err)
	}
	list, err := doc.entries()
	if err != nil {
		return err
	}
	var fields map[string]any
	raw, _ := marshal(want)
	_ = json.Unmarshal(raw, &fields)
	w := entryOf(name, fields, false)
	ok := false
	for _, got := range list {
		if got.name == name {
			ok = got.command == w.command && slices.Equal(got.args, w.args) && got.url == w.url
		}
		if slices.ContainsFunc(removed, func(r clientEntry) bool { return r.name == got.name }) {
			return fmt.Errorf("%s: the edit left %q in place, so it was not written", file, got.name)
		}
	}
	if !ok {
		return fmt.Errorf("%s: the edit did not leave the entry %q as intended, so it was not written", file, name)
	}
	return nil
}
