package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

func newRestartCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "restart NAME",
		Short: "Restart one server of the running hub",
		Long: `Ask the running hub to restart one server: a fresh connection (a new process
for a stdio server) is started and swapped in once it has connected, then
the old one stops. Calls in flight on the old connection fail; none is
replayed.

--json prints the hub's answer: {"server": "NAME", "status": "restarting"}.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeServers(enabledServer),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			t, _, err := a.statusTarget()
			if err != nil {
				return err
			}
			res, err := t.RestartServer(ctx, args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(res)
			}
			fmt.Fprintf(a.stdout, "restarting %s; see mcphub status\n", args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the hub's answer as one JSON object")
	return cmd
}
