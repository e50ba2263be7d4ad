package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/registry"
)

func newValidateCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "validate [FILE]",
		Short: "Check a registry file and print every problem with file:line:col",
		Long: `Check a registry file (default: the configured registry) and print every
problem, each with its file, line and column, the key it is about, and what
would be valid. Exits 1 when there is any problem, 0 when the file is valid.
${VAR} references are checked against this shell's environment.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			path := a.configPath
			if len(args) == 1 {
				path = args[0]
			}
			reg, err := registry.Load(path)
			if err != nil {
				return a.printRegistryErrors(err)
			}
			enabled := 0
			for _, s := range reg.Servers {
				if s.Enabled {
					enabled++
				}
			}
			fmt.Fprintf(a.stdout, "%s is valid: %d servers (%d enabled)\n", path, len(reg.Servers), enabled)
			return nil
		},
	}
}
