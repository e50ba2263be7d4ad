package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/registry"
)

// enableResult is what enable or disable did, its --json answer.
type enableResult struct {
	Name     string   `json:"name"`
	Enabled  bool     `json:"enabled"`
	File     string   `json:"file"`
	Warnings []string `json:"warnings"`
}

// newEnableCmd is `mcphub enable NAME` and, with enable false, `mcphub
// disable NAME`.
func newEnableCmd(a *app, enable bool) *cobra.Command {
	verb, short := "enable", "Enable a server in the registry (a running hub starts it)"
	complete := a.completeServers(disabledServer)
	if !enable {
		verb, short = "disable", "Disable a server in the registry (a running hub stops it)"
		complete = a.completeServers(enabledServer)
	}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   verb + " NAME",
		Short: short,
		Long: short + `.

This edits enabled = true/false in hub.toml, keeping everything else in the
file as it was; a running hub applies the change on its own.

--json prints {"name": "NAME", "enabled": ` + fmt.Sprint(enable) + `, "file": "/path/to/hub.toml",
"warnings": [...]}; warnings are the ones printed on stderr (a variable
the hub lacks, say).`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: complete,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := registry.SetEnabled(a.configPath, args[0], enable); err != nil {
				if errors.Is(err, registry.ErrUnknownServer) {
					return err
				}
				return a.printRegistryErrors(err)
			}
			if !asJSON {
				fmt.Fprintf(a.stdout, "%sd %s in %s\n", verb, args[0], a.configPath)
			}
			warnings := a.captureWarnings(func() {
				if !enable {
					return
				}
				if reg, err := a.loadExistingRegistry(); err == nil && reg != nil && reg.Server(args[0]) != nil {
					tok, _ := hubclient.Token(reg)
					a.warnUnset(cmd.Context(), a.locator().For(reg, tok), args[0], reg.Server(args[0]).Vars())
				}
			})
			if asJSON {
				return a.printJSON(enableResult{Name: args[0], Enabled: enable, File: a.configPath, Warnings: warnings})
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what changed as one JSON object")
	return cmd
}
