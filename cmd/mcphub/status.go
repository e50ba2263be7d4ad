package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/internal/termtext"
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
			printStatus(a, st)
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
	reg, err := registry.Parse(a.configPath, registry.DefaultRegistry(), os.LookupEnv)
	if err != nil {
		return hubclient.Target{}, true, fmt.Errorf("the built-in default registry: %w", err)
	}
	tok, _ := hubclient.Token(reg)
	return a.locator().For(reg, tok), true, nil
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
	info := hubclient.LiveRunInfo(a.dataDir)
	if info == nil {
		if info, err = hubclient.ReadRunInfo(a.dataDir); err != nil {
			return hubclient.Target{}, nil, exitError{code: 1, why: fmt.Sprintf("the registry %s does not load, and no hub is recorded in %s: fix the problems printed on stderr, then start one with: mcphub serve", a.configPath, a.dataDir)}
		}
	}
	return hubclient.RunTarget(info, ""), nil, nil
}

func printStatus(a *app, st *api.Status) {
	fmt.Fprintf(a.stdout, "mcphub %s at %s, %d sessions\n\n", st.Version, st.URL, st.Sessions)
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATE\tPID\tPROTOCOL\tUPTIME\tTOOLS\tRESTARTS\tLAST ERROR")
	for _, s := range st.Servers {
		pid, uptime, protocol := "-", "-", "-"
		if s.PID > 0 {
			pid = fmt.Sprint(s.PID)
		}
		if s.Protocol != "" {
			protocol = s.Protocol
		}
		if s.UptimeSeconds > 0 {
			uptime = (time.Duration(s.UptimeSeconds) * time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", s.Name, s.State, pid, protocol, uptime, s.Tools, s.Restarts, termtext.OneLine(s.LastError, 80))
	}
	tw.Flush()
	// A failed server's whole reason, when the table had to cut it: it is
	// what the user needs to fix it (which variable, which line).
	for _, s := range st.Servers {
		if s.State != api.StateConnected && termtext.OneLine(s.LastError, 80) != termtext.OneLine(s.LastError, len(s.LastError)+1) {
			fmt.Fprintf(a.stdout, "\n%s: %s\n", s.Name, strings.ReplaceAll(strings.TrimSpace(s.LastError), "\n", "\n  "))
		}
	}
	printProfiles(a, st)
	if len(st.NeedsRestart) > 0 {
		fmt.Fprintf(a.stdout, "\nhub.toml changed %s, which needs a restart to take effect; the hub keeps the one it started with (restart it: stop mcphub serve and start it again, or mcphub service stop && mcphub service start)\n",
			strings.Join(st.NeedsRestart, ", "))
	}
	if st.RegistryError != "" {
		fmt.Fprintf(a.stdout, "\nthe registry on disk does not load; the hub keeps running its last good registry:\n%s\n", st.RegistryError)
	}
}

// printProfiles prints the hub's profiles, when it has any: a table (no
// tool counts for a profile with a problem, which keeps it from serving),
// then each such problem, and the names each profile could not expose as
// they are.
func printProfiles(a *app, st *api.Status) {
	if len(st.Profiles) == 0 {
		return
	}
	fmt.Fprintln(a.stdout)
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROFILE\tMODE\tSERVERS\tLISTED\tTOOLS\tSESSIONS\tURL")
	for _, p := range st.Profiles {
		servers := "-"
		if len(p.Servers) > 0 {
			servers = termtext.OneLine(strings.Join(p.Servers, ","), 40)
		}
		listed, tools := fmt.Sprint(p.Listed), fmt.Sprint(p.Tools)
		if p.Problem != "" {
			listed, tools = "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", p.Name, p.Mode, servers, listed, tools, p.Sessions, p.URL)
	}
	tw.Flush()
	for _, p := range st.Profiles {
		if p.Problem != "" {
			fmt.Fprintf(a.stdout, "\nprofile %s serves nothing until its table is fixed:\n  %s\n", p.Name, strings.ReplaceAll(strings.TrimSpace(p.Problem), "\n", "\n  "))
		}
	}
	conflicts := false
	for _, p := range st.Profiles {
		if len(p.Conflicts) == 0 {
			continue
		}
		if !conflicts {
			fmt.Fprintln(a.stdout)
			conflicts = true
		}
		fmt.Fprintf(a.stdout, "profile %s: names not exposed as offered: %s\n", p.Name, strings.Join(p.Conflicts, "; "))
	}
}
