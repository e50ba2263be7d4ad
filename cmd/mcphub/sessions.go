package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/hubclient"
)

// sessionEnded is what sessions rm did, its --json answer.
type sessionEnded struct {
	ID    string `json:"id"`
	Ended bool   `json:"ended"`
}

func newSessionsCmd(a *app) *cobra.Command {
	var asJSON, rmJSON bool
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List the running hub's client sessions; sessions rm ID ends one",
		Long: `List the client sessions of the running hub: the client's name and
version, the protocol version, age, idle time, open streams and the events
kept for resumption. Sessions survive hub restarts until they have been idle
for [hub] session_ttl.

  mcphub sessions rm ID   ends a session, as a DELETE from its client would

--json prints the hub's array of sessions, as GET /control/sessions answers.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, _, err := a.statusTarget()
			if err != nil {
				return err
			}
			list, err := t.Sessions(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				if list == nil {
					list = []api.SessionInfo{}
				}
				return a.printJSON(list)
			}
			return hubclient.WriteSessions(a.stdout, list)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	rm := &cobra.Command{
		Use:   "rm ID",
		Short: "End one session of the running hub",
		Long: `End one session of the running hub, as a DELETE from its client would; its
client must initialize a new one. mcphub sessions lists the IDs.

--json prints {"id": "ID", "ended": true}.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeSessions,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, _, err := a.statusTarget()
			if err != nil {
				return err
			}
			if err := t.EndSessionByID(cmd.Context(), args[0]); err != nil {
				return err
			}
			if rmJSON {
				return a.printJSON(sessionEnded{ID: args[0], Ended: true})
			}
			fmt.Fprintf(a.stdout, "ended session %s\n", args[0])
			return nil
		},
	}
	rm.Flags().BoolVar(&rmJSON, "json", false, "print what was ended as one JSON object")
	cmd.AddCommand(rm)
	return cmd
}

// completeSessions completes the ID of sessions rm with the running hub's
// sessions, each described by its client. It asks the hub only when the
// registry loads, and completes nothing, silently, when no hub answers.
func (a *app) completeSessions(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	reg, err := a.loadExistingRegistry()
	if err != nil || reg == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	tok, _ := hubclient.Token(reg)
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	list, err := a.locator().For(reg, tok).Sessions(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, s := range list {
		if strings.HasPrefix(s.ID, toComplete) {
			out = append(out, cobra.CompletionWithDesc(s.ID, strings.TrimSpace(s.Client+" "+s.ClientVersion)))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
