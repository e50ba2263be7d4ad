package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/hub"
)

func newSessionsCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List the running hub's client sessions; sessions rm ID ends one",
		Long: `List the client sessions of the running hub: the client's name and
version, the protocol version, age, idle time, open streams and the events
kept for resumption. Sessions survive hub restarts until they have been idle
for [hub] session_ttl.

  mcphub sessions rm ID   ends a session, as a DELETE from its client would`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var list []hub.SessionInfo
			if err := a.control(cmd.Context(), http.MethodGet, "/control/sessions", http.StatusOK, &list); err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(list)
			}
			if len(list) == 0 {
				fmt.Fprintln(a.stdout, "no sessions")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tENDPOINT\tCLIENT\tPROTOCOL\tAGE\tIDLE\tSTREAMS\tEVENTS")
			for _, s := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s %s\t%s\t%s\t%s\t%d\t%d\n", s.ID, s.Endpoint, s.Client, s.ClientVersion, s.Protocol,
					time.Duration(s.AgeSeconds)*time.Second, time.Duration(s.IdleSeconds)*time.Second, s.OpenStreams, s.StoredEvents)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(&cobra.Command{
		Use:   "rm ID",
		Short: "End one session of the running hub",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.control(cmd.Context(), http.MethodDelete, "/control/sessions?id="+url.QueryEscape(args[0]), http.StatusNoContent, nil); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "ended session %s\n", args[0])
			return nil
		},
	})
	return cmd
}
