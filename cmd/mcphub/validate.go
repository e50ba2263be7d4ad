package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/internal/termtext"
	"github.com/mcphub/mcphub/registry"
)

// validateResult is what validate found, its --json answer.
type validateResult struct {
	File     string            `json:"file"`
	Valid    bool              `json:"valid"`
	Servers  int               `json:"servers"`
	Enabled  int               `json:"enabled"`
	Profiles int               `json:"profiles"`
	Problems []validateProblem `json:"problems"`
	// Error sums the problems up, as every failed --json run says.
	Error string `json:"error,omitempty"`
}

// validateProblem is one problem of the file, with its position.
type validateProblem struct {
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Key     string `json:"key,omitempty"`
	Message string `json:"message"`
}

func newValidateCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate [FILE]",
		Short: "Check a registry file and print every problem with file:line:col",
		Long: `Check a registry file (default: the configured registry) and print every
problem, each with its file, line and column, the key it is about, and what
would be valid. Exits 1 when there is any problem, 0 when the file is valid.
${VAR} references are checked against this shell's environment.

--json prints one object, also when the file has problems (exit status 1):
  {"file": "hub.toml", "valid": false, "servers": 0, "enabled": 0, "profiles": 0,
   "problems": [{"line": 3, "col": 1, "key": "hub.auth", "message": "..."}],
   "error": "hub.toml has 1 problem"}`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			path := a.configPath
			if len(args) == 1 {
				path = args[0]
			}
			reg, err := registry.Load(path)
			var errs registry.Errors
			if asJSON && errors.As(err, &errs) {
				res := validateResult{File: path, Problems: make([]validateProblem, len(errs))}
				for i, e := range errs {
					res.Problems[i] = validateProblem{Line: e.Line, Col: e.Col, Key: e.Key, Message: e.Msg}
				}
				res.Error = fmt.Sprintf("%s has %d %s", path, len(errs), termtext.Plural(len(errs), "problem", "problems"))
				if err := a.printJSON(res); err != nil {
					return err
				}
				return exitError{code: 1}
			}
			if err != nil {
				return a.printRegistryErrors(err)
			}
			res := validateResult{File: path, Valid: true, Servers: len(reg.Servers), Profiles: len(reg.Profiles), Problems: []validateProblem{}}
			for _, s := range reg.Servers {
				if s.Enabled {
					res.Enabled++
				}
			}
			if asJSON {
				return a.printJSON(res)
			}
			msg := fmt.Sprintf("%s is valid: %d servers (%d enabled)", path, res.Servers, res.Enabled)
			if res.Profiles > 0 {
				msg += fmt.Sprintf(", %d %s", res.Profiles, termtext.Plural(res.Profiles, "profile", "profiles"))
			}
			fmt.Fprintln(a.stdout, msg)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as one JSON object")
	return cmd
}
