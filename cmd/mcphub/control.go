package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/registry"
)

func newRestartCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "restart NAME",
		Short: "Restart one server of the running hub",
		Long: `Ask the running hub to restart one server: a fresh connection (a new process
for a stdio server) is started and swapped in once it has connected, then
the old one stops. Calls in flight on the old connection fail; none is
replayed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.control(cmd.Context(), http.MethodPost, "/control/restart?server="+url.QueryEscape(args[0]), http.StatusAccepted, nil); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "restarting %s; see mcphub status\n", args[0])
			return nil
		},
	}
}

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
		RunE: func(_ *cobra.Command, args []string) error {
			if err := registry.SetEnabled(a.configPath, args[0], enable); err != nil {
				if errors.Is(err, registry.ErrUnknownServer) {
					return err
				}
				return a.printRegistryErrors(err)
			}
			fmt.Fprintf(a.stdout, "%sd %s in %s\n", verb, args[0], a.configPath)
			return nil
		},
	}
}
