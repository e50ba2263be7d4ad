package registry

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mcphub/mcphub/internal/termtext"
)

// What the CLI says about a registry file: its problems, and what mcphub
// validate found, as text or as the JSON scripts read.

// WriteText prints every problem, one per line, as file:line:col: key:
// message, and returns the sentence that sums them up and says the fix:
// the reason a command that cannot go on without the registry gives for
// its exit.
func (es Errors) WriteText(w io.Writer) string {
	lines := make([]string, len(es))
	for i, e := range es {
		fmt.Fprintln(w, e)
		lines[i] = e.Error()
	}
	n := len(es)
	return fmt.Sprintf("the registry has %d %s; fix %s and run the command again: %s",
		n, termtext.Plural(n, "problem", "problems"), termtext.Plural(n, "it", "them"), strings.Join(lines, "; "))
}

// Validation is what mcphub validate found in a registry file, its --json
// answer: how many servers and profiles a valid file has, or every
// problem of one that is not.
type Validation struct {
	File     string    `json:"file"`
	Valid    bool      `json:"valid"`
	Servers  int       `json:"servers"`
	Enabled  int       `json:"enabled"`
	Profiles int       `json:"profiles"`
	Problems []Problem `json:"problems"`
	// Error sums the problems up, as every failed --json run says.
	Error string `json:"error,omitempty"`
}

// Problem is one problem of the file, with its position.
type Problem struct {
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Key     string `json:"key,omitempty"`
	Message string `json:"message"`
}

// Validate loads the registry file at path, as Load does, and sums up what
// it found. err is Load's: an Errors value when the file has problems (the
// Validation then lists them and says so in its Error), or another error
// when the file cannot be read at all.
func Validate(path string) (Validation, error) {
	reg, err := Load(path)
	var errs Errors
	if errors.As(err, &errs) {
		res := Validation{File: path, Problems: make([]Problem, len(errs))}
		for i, e := range errs {
			res.Problems[i] = Problem{Line: e.Line, Col: e.Col, Key: e.Key, Message: e.Msg}
		}
		res.Error = fmt.Sprintf("%s has %d %s", path, len(errs), termtext.Plural(len(errs), "problem", "problems"))
		return res, err
	}
	if err != nil {
		return Validation{File: path}, err
	}
	res := Validation{File: path, Valid: true, Servers: len(reg.Servers), Profiles: len(reg.Profiles), Problems: []Problem{}}
	for _, s := range reg.Servers {
		if s.Enabled {
			res.Enabled++
		}
	}
	return res, nil
}

// Summary is the line mcphub validate prints for a valid file: "hub.toml
// is valid: 3 servers (2 enabled), 1 profile".
func (v Validation) Summary() string {
	msg := fmt.Sprintf("%s is valid: %d servers (%d enabled)", v.File, v.Servers, v.Enabled)
	if v.Profiles > 0 {
		msg += fmt.Sprintf(", %d %s", v.Profiles, termtext.Plural(v.Profiles, "profile", "profiles"))
	}
	return msg
}
