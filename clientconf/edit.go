package clientconf

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
)

// ErrNotEditable means an entry is written in a form mcphub does not edit
// (a Codex entry inline in [mcp_servers]); Write changes nothing and the
// user edits it by hand (Client.Snippet prints what to write).
var ErrNotEditable = errors.New("written inline, not as its own table")

// clientDoc is a client's config file being edited in memory. Edits touch
// only the entries they name; every other byte stays as it was.
type clientDoc interface {
	// entries lists the servers the file holds.
	entries() ([]clientEntry, error)
	// set adds the entry called name or, when it is there, changes the
	// members mcphub writes (ownedKeys) to e's and keeps the others.
	set(name string, e Entry) (setAction, error)
	// remove deletes the entry called name.
	remove(name string) error
	// bytes returns the file as edited.
	bytes() ([]byte, error)
}

// setAction is what set did to the hub's entry.
type setAction int

const (
	setUnchanged setAction = iota
	setAdded
	setUpdated
)

// ownedKeys are the members of the hub's entry that mcphub writes: those
// that say how to reach the hub. Whatever else the entry holds (a client's
// alwaysAllow, disabled, timeouts, tool approvals) is the user's and stays.
var ownedKeys = []string{"type", "url", "serverUrl", "httpUrl", "headers", "http_headers", "command", "args"}

// keysToSet are e's keys in its order, then the owned keys it lacks, which
// set removes.
func keysToSet(e Entry) []string {
	var keys []string
	for _, f := range e {
		keys = append(keys, f.Key)
	}
	for _, k := range ownedKeys {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// fieldOf returns the value e gives key k.
func fieldOf(e Entry, k string) (any, bool) {
	for _, f := range e {
		if f.Key == k {
			return f.Value, true
		}
	}
	return nil, false
}

// sameValue reports whether two decoded values (from JSON, TOML or an
// entry) are the same JSON value.
func sameValue(a, b any) bool {
	ra, errA := json.Marshal(a)
	rb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return false
	}
	var va, vb any
	return json.Unmarshal(ra, &va) == nil && json.Unmarshal(rb, &vb) == nil && reflect.DeepEqual(va, vb)
}

// parseClientDoc parses a client's file; data is nil for a file that does
// not exist yet.
func parseClientDoc(path string, data []byte, c Client) (clientDoc, error) {
	if c.Format == FormatTOML {
		return parseTOMLDoc(path, data)
	}
	return parseJSONDoc(path, data, c.Key)
}
