package main

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"
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
