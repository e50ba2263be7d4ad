package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/hubclient"
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
			res, err := t.Restart(ctx, args[0])
			if he := (*hubclient.HubError)(nil); errors.As(err, &he) && he.Status == http.StatusNotFound && he.Reason != "" {
				return unknownServerError(ctx, t, args[0], he)
			}
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

// unknownServerError is the hub's refusal to restart name, with what the
// hub does serve: its enabled servers, or how to enable name when the hub
// has it disabled.
func unknownServerError(ctx context.Context, t hubclient.Target, name string, refused *hubclient.HubError) error {
	st, err := t.Status(ctx)
	if err != nil {
		return refused
	}
	var enabled []string
	for _, s := range st.Servers {
		switch {
		case s.Name == name && s.State == api.StateDisabled:
			return fmt.Errorf("%w; %s is disabled: enable it with mcphub enable %s", refused, name, name)
		case s.State != api.StateDisabled:
			enabled = append(enabled, s.Name)
		}
	}
	if len(enabled) == 0 {
		return fmt.Errorf("%w; it serves no enabled server (add one with: mcphub add NAME -- COMMAND [ARGS...])", refused)
	}
	return fmt.Errorf("%w; its enabled servers: %s (see mcphub status)", refused, strings.Join(enabled, ", "))
}
