package main

import (
	"errors"
	"fmt"

	"github.com/mcphub/mcphub/registry"
	"github.com/spf13/cobra"
)

// newEnableCmd is `mcphub enable NAME` and, with enable false, `mcphub
// disable NAME`.
func newEnableCmd(a *app, enable bool) *cobra.Command {
	verb, short := "enable", "Enable a server in the registry (a running hub starts it)"
	if !enable {
		verb, short = "disable", "Disable a server in the registry (a running hub stops it)"
	}
	return &cobra.Command{
		Use:   verb + " NAME",
		Short: short,
		Long: short + `.

This edits enabled = true/false in hub.toml, keeping everything else in the
file as it was; a running hub applies the change on its own.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := registry.SetEnabled(a.configPath, args[0], enable); err != nil {
				if errors.Is(err, registry.ErrUnknownServer) {
					return err
				}
				return a.printRegistryErrors(err)
			}
			fmt.Fprintf(a.stdout, "%sd %s in %s\n", verb, args[0], a.configPath)
			if enable {
				if reg, err := a.loadExistingRegistry(); err == nil && reg != nil && reg.Server(args[0]) != nil {
					a.warnUnset(cmd.Context(), args[0], reg.Server(args[0]).Vars())
				}
			}
			return nil
		},
	}
}
