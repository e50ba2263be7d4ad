package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/registry"
)

func newStatusCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the running hub's servers and their state",
		Long: `Ask the running hub for its state: each server's state (connected,
starting, restarting, crash-loop, failed, needs-login, disabled), pid,
uptime, the tools clients see (after allow/deny), restarts and last error,
plus the registry error when the file on disk does not load and the [hub]
settings that need a restart to take effect (listen, tls_cert, tls_key).
When the hub serves profiles, a second table gives each profile's mode,
servers, the tools its tools/list holds (the three search tools in search
mode) and all it serves ("-" for a profile whose table has a problem, which
serves nothing), its sessions and its URL, and below it what is wrong with
a profile's table and the names a profile could not expose as they are. The hub is found where the hub holding the data
directory recorded it listens (serve --listen, or port 0, may differ from
the registry), else at the registry's listen address. A hub holding the
data directory that serves another registry than --config is never sent
its token: the registry's listen address is asked, and a note on stderr
says which registry that hub serves. Exits 1 when no hub is
running. Without a registry file, status asks the hub recorded in the data
directory, else the default address, and creates no registry.

--json prints the hub's status object, as GET /readyz answers it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, noRegistry, err := a.statusTarget()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			st, err := t.Status(ctx)
			a.locator().NoteServed(a.stderr, t)
			if errors.Is(err, hubclient.ErrNoHub) {
				why := fmt.Sprintf("no mcphub is running at %s (start one with: mcphub serve)", t.Listen)
				if asJSON {
					return exitError{code: 1, why: why}
				}
				fmt.Fprintln(a.stdout, why)
				if noRegistry {
					fmt.Fprintln(a.stdout, a.noRegistryHint())
				}
				return exitError{code: 1}
			}
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(st)
			}
			hubclient.WriteStatus(a.stdout, st)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the hub's status JSON")
	return cmd
}

// statusTarget is the hub status asks, found as target finds it but without
// creating the registry: when there is no registry file, the live hub
// recorded in the data directory (a hub serving another registry), else the
// address of the built-in default registry. noRegistry reports that case.
func (a *app) statusTarget() (t hubclient.Target, noRegistry bool, err error) {
	if _, err := os.Stat(a.configPath); !errors.Is(err, fs.ErrNotExist) {
		t, _, err := a.target()
		return t, false, err
	}
	t, err = a.locator().Default()
	return t, true, err
}

// locator finds the hub of --config and --data-dir.
func (a *app) locator() hubclient.Locator {
	return hubclient.Locator{ConfigPath: a.configPath, DataDir: a.dataDir}
}

// target finds the running hub: where the live hub holding the data
// directory recorded it listens when it serves this registry (see
// hubclient.Locator.For), else at the registry's listen address; when the
// registry does not load (the hub keeps its last good one), at the address
// the hub recorded in the data directory, sent no token. Registry problems
// are printed, not fatal: status must work precisely when the file is
// broken.
func (a *app) target() (hubclient.Target, *registry.Registry, error) {
	reg, err := a.loadRegistry()
	if err == nil {
		tok, _ := hubclient.Token(reg)
		return a.locator().For(reg, tok), reg, nil
	}
	fmt.Fprintf(a.stderr, "the registry does not load:\n")
	a.printRegistryErrors(err)
	t, err := a.locator().Recorded()
	if err != nil {
		return hubclient.Target{}, nil, exitError{code: 1, why: fmt.Sprintf("the registry %s does not load, and no hub is recorded in %s: fix the problems printed on stderr, then start one with: mcphub serve", a.configPath, a.dataDir)}
	}
	return t, nil, nil
}
