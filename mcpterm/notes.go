package mcpterm

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/hubclient"
)

// noteMissing says on Stderr which servers the merged view (or a
// profile's) lacks because they are not connected, so that a short list is
// not taken for all there is. kind is what they would add: "tools",
// "prompts", "resources". It says nothing when the hub's status cannot be
// had.
func (c *Client) noteMissing(ctx context.Context, s *hubclient.Session, kind string) {
	if s.View().Server != "" {
		return
	}
	st, err := s.Target().Status(ctx)
	if err != nil {
		return
	}
	c.NoteDown(st, s.View().Profile, kind)
}

// NoteDown says on Stderr which servers of the hub's status st are not
// connected, so their kind ("tools") are missing from /mcp, which has
// every server, or from profile's endpoint, which has those it selects; a
// server waiting for a sign-in gets the login command. A report of the
// hub's tools (tokens) notes them as the lists do.
func (c *Client) NoteDown(st *api.Status, profile, kind string) {
	var only []string
	if profile != "" {
		p := hubclient.FindProfile(st, profile)
		if p == nil {
			return
		}
		only = p.Servers
	}
	var down []api.ServerStatus
	for _, srv := range st.Servers {
		if profile != "" && !slices.Contains(only, srv.Name) {
			continue
		}
		switch srv.State {
		case api.StateConnected, api.StateDisabled:
		case api.StateNeedsLogin:
			fmt.Fprintf(c.Stderr, "note: server %s needs you to sign in: run mcphub login %s\n", srv.Name, srv.Name)
		default:
			down = append(down, srv)
		}
	}
	switch len(down) {
	case 0:
	case 1:
		fmt.Fprintf(c.Stderr, "note: server %s is %s, so its %s are missing; see mcphub status or mcphub logs %s\n",
			down[0].Name, down[0].State, kind, down[0].Name)
	default:
		names := make([]string, len(down))
		for i, srv := range down {
			names[i] = fmt.Sprintf("%s (%s)", srv.Name, srv.State)
		}
		fmt.Fprintf(c.Stderr, "note: servers %s are not connected, so their %s are missing; see mcphub status\n",
			strings.Join(names, ", "), kind)
	}
}
