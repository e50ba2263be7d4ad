package registry

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Sentinel errors for the edit functions, so that callers can choose an exit
// code or a hint with errors.Is without matching message text.
var (
	// ErrServerExists reports that AddServer was asked to add a name that
	// the registry already has and force was not set.
	ErrServerExists = errors.New("server already exists")
	// ErrUnknownServer reports that an edit named a server the registry does
	// not have.
	ErrUnknownServer = errors.New("unknown server")
)

// Error is one problem in a registry file, with the position of the key (or,
// when the key has no line of its own, of its table header) that caused it.
// Its text never contains the value of an environment variable.
type Error struct {
	// File is the registry path as it was given to Load or Parse.
	File string
	// Line and Col are 1-based; Col counts bytes.
	Line, Col int
	// Key is the dotted TOML key the problem is about, such as
	// servers.github.env.GITHUB_TOKEN; it is empty for syntax errors.
	Key string
	// Msg says what is wrong and what would be valid.
	Msg string

	server    string // the server the problem belongs to, if any
	profile   string // the profile the problem belongs to, when inProfile
	inProfile bool   // the problem belongs to a profile (whose name may be "")
	unset     bool   // the problem is only an unset ${VAR}
}

// Error formats the problem as file:line:col: key: message, the form that
// editors and terminals turn into a link.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	fmt.Fprintf(&b, ":%d:%d: ", e.Line, e.Col)
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in one registry file, sorted by position, so
// that a validate command can show all of them at once. Parse and Load return
// an Errors value whenever the file is not valid.
type Errors []*Error

// Error prints one problem per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes each *Error to errors.As and errors.Is.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

func (es Errors) sort() {
	slices.SortStableFunc(es, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col),
			cmp.Compare(a.Key, b.Key), cmp.Compare(a.Msg, b.Msg))
	})
}

// filter returns the errors that keep is true for.
func (es Errors) filter(keep func(*Error) bool) Errors {
	var out Errors
	for _, e := range es {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// unpositioned formats errors as key: message, for problems in text that is
// not on disk (the result of an edit), where a line number would mislead.
func (es Errors) unpositioned() string {
	lines := make([]string, len(es))
	for i, e := range es {
		if e.Key != "" {
			lines[i] = e.Key + ": " + e.Msg
		} else {
			lines[i] = e.Msg
		}
	}
	return strings.Join(lines, "\n")
}
