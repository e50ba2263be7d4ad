package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/registry"
)

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
			res, err := registry.Validate(path)
			if asJSON && res.Error != "" {
				if err := a.printJSON(res); err != nil {
					return err
				}
				return exitError{code: 1}
			}
			if err != nil {
				return a.printRegistryErrors(err)
			}
			if asJSON {
				return a.printJSON(res)
			}
			fmt.Fprintln(a.stdout, res.Summary())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as one JSON object")
	return cmd
}
