package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/internal/redact"
	"github.com/mcphub/mcphub/internal/termtext"
	"github.com/mcphub/mcphub/registry"
)

// listEntry is one server in `mcphub list`, also its --json form. Env and
// header values are never part of it.
type listEntry struct {
	Name      string   `json:"name"`
	Kind      string   `json:"kind"`
	Command   string   `json:"command,omitempty"`
	Args      []string `json:"args,omitempty"`
	EnvKeys   []string `json:"env_keys,omitempty"`
	URL       string   `json:"url,omitempty"`
	Transport string   `json:"transport,omitempty"`
	Enabled   bool     `json:"enabled"`
	Prefix    string   `json:"prefix"`
	Share     string   `json:"share"`
	Protocol  string   `json:"protocol"`
	// Problem says why the hub cannot serve the entry as written (an unset
	// ${VAR}, say), with file:line and the fix; the hub shows it failed.
	Problem string `json:"problem,omitempty"`
	// Live is the running hub's view, absent when no hub runs.
	Live *api.ServerStatus `json:"live,omitempty"`
	// HubError says why the hub could not be asked (it refused the
	// token, a TLS mismatch, not mcphub's answer); absent when it answered
	// or none runs. It is the same sentence for every entry, and holds no
	// secret.
	HubError string `json:"hub_error,omitempty"`
}

func newListCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the registry's servers, with their live state when a hub is running",
		Long: `List the servers in the registry: name, kind, command or URL, whether it is
enabled, and its prefix. When a hub is running (found as status finds it),
each server's live state is shown too (connected, starting, restarting,
failed with the last error) with its tool count; a note on stderr says when
the hub holding the data directory serves another registry than --config.
When a hub runs but cannot be asked (it refuses the token, say), the
reason is printed on stderr. Env and header values are never shown. Without
a registry file, list says so and creates none.

--json prints an array with one object per server: name, kind, command,
args, env_keys (names only), url (its secrets masked), transport, enabled,
prefix, share, problem, live (the hub's view, when a hub runs) and
hub_error (why the hub could not be asked, when it could not).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reg, err := a.loadExistingRegistry()
			if err != nil {
				return a.printRegistryErrors(err)
			}
			if reg == nil {
				if asJSON {
					fmt.Fprintln(a.stdout, "[]")
					return nil
				}
				fmt.Fprintln(a.stdout, a.noRegistryHint())
				return nil
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			tok, _ := hubclient.Token(reg)
			t := a.locator().For(reg, tok)
			st, serr := t.Status(ctx)
			a.locator().NoteServed(a.stderr, t)
			entries := listEntries(reg, st)
			hubErr := ""
			if serr != nil && !errors.Is(serr, hubclient.ErrNoHub) {
				hubErr = fmt.Sprintf("could not ask the hub at %s: %v", t.Listen, serr)
				fmt.Fprintln(a.stderr, hubErr)
				for i := range entries {
					entries[i].HubError = hubErr
				}
			}
			if asJSON {
				return a.printJSON(entries)
			}
			printList(a, entries, st != nil)
			switch {
			case st != nil:
				fmt.Fprintf(a.stdout, "\nhub running at %s with %d sessions\n", st.URL, st.Sessions)
				if st.RegistryError != "" {
					fmt.Fprintf(a.stdout, "the hub keeps its last good registry; the file has errors:\n%s\n", st.RegistryError)
				}
			case hubErr == "":
				fmt.Fprintf(a.stdout, "\nno hub running at %s (start one with: mcphub serve)\n", t.Listen)
			default:
				fmt.Fprintf(a.stdout, "\nthe hub at %s could not be asked (the reason is on stderr)\n", t.Listen)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	return cmd
}

func listEntries(reg *registry.Registry, st *api.Status) []listEntry {
	live := map[string]*api.ServerStatus{}
	if st != nil {
		for i := range st.Servers {
			live[st.Servers[i].Name] = &st.Servers[i]
		}
	}
	entries := make([]listEntry, 0, len(reg.Servers))
	for _, s := range reg.Servers {
		e := listEntry{Name: s.Name, Kind: string(s.Kind()), Enabled: s.Enabled, Prefix: s.Prefix, Share: s.Share, Protocol: s.Protocol, Problem: s.Problem, Live: live[s.Name]}
		if s.Kind() == registry.KindRemote {
			e.URL, e.Transport = redact.URL(s.URL), s.Transport
		} else {
			e.Command, e.Args = s.Command, s.Args
			for k := range s.Env {
				e.EnvKeys = append(e.EnvKeys, k)
			}
		}
		entries = append(entries, e)
	}
	return entries
}

func printList(a *app, entries []listEntry, live bool) {
	if len(entries) == 0 {
		fmt.Fprintf(a.stdout, "no servers in %s; add one with: mcphub add NAME -- COMMAND [ARGS...]\n", a.configPath)
		return
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	header := "NAME\tKIND\tCOMMAND / URL\tENABLED\tPREFIX"
	if live {
		header += "\tSTATE\tTOOLS"
	}
	fmt.Fprintln(tw, header)
	for _, e := range entries {
		target := e.URL
		if e.Kind == string(registry.KindStdio) {
			target = strings.Join(append([]string{e.Command}, e.Args...), " ")
		}
		prefix := e.Prefix
		if prefix == "" {
			prefix = "(none)"
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%v\t%s", e.Name, e.Kind, termtext.OneLine(target, 60), e.Enabled, prefix)
		if live {
			state, tools := "-", "-"
			if e.Live != nil {
				state, tools = e.Live.State, strconv.Itoa(e.Live.Tools)
				if e.Live.LastError != "" && e.Live.State != api.StateConnected {
					state += ": " + termtext.OneLine(e.Live.LastError, 80)
				}
			}
			line += "\t" + state + "\t" + tools
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	for _, e := range entries {
		if e.Problem != "" {
			fmt.Fprintf(a.stdout, "%s cannot be served as written:\n  %s\n", e.Name, strings.ReplaceAll(e.Problem, "\n", "\n  "))
		}
		if e.Live != nil && len(e.Live.Conflicts) > 0 {
			fmt.Fprintf(a.stdout, "%s: names not exposed as offered: %s\n", e.Name, strings.Join(e.Live.Conflicts, "; "))
		}
	}
}
