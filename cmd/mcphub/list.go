package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

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
			sl := a.locator().ListServers(ctx, reg, a.stderr)
			if asJSON {
				return a.printJSON(sl.Entries)
			}
			sl.WriteText(a.stdout, a.configPath)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	return cmd
}
