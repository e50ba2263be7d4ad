package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/registry"
	"github.com/mcphub/mcphub/stdioface"
)

const stdioLong = `Speak MCP over standard input and output, for clients that can only start
stdio servers (Claude Desktop and the like), and relay everything to the
running hub: the client sees every server of the registry, as it would at
the hub's /mcp endpoint, through one stdio server entry.

Claude Desktop (claude_desktop_config.json):
  {"mcpServers": {"mcphub": {"command": "/abs/path/mcphub", "args": ["stdio"]}}}
Add "--config", "/abs/path/hub.toml" to args when the registry is not in
its default place.

When no hub is running, one is started in the background with the same
registry and data directory (mcphub serve, its output in serve.log in the
data directory); it keeps running after the client quits, and serves every
other client too. A hub this command started is started again if it dies.

The hub keeps the session in its data directory: when the hub restarts, the
relay reconnects (for up to 5 minutes) and resumes the same session, so the
client notices nothing; a request that was in flight gets its answer when
the hub can still give it, else an error saying the hub restarted.

A client of the 2026-07-28 revision, which opens no session (its requests
carry the revision's _meta), is relayed statelessly: each of its requests
goes to the hub as its own request. One made while the hub is down waits
for it, as above; one whose answer the hub was still streaming when it
went away fails and is not resumed.

With --server NAME, the client sees that one server with its own tool names
(the hub's /NAME/mcp endpoint) instead of every server with prefixed names.
With --profile NAME, it sees the profile's view ([profiles.NAME] in the
registry, the hub's /profiles/NAME/mcp endpoint): the servers and tools the
profile selects, named and changed as it says, or in search mode three tools
that find and call them.

Nothing but MCP messages is written to standard output; diagnostics go to
standard error.`

func newStdioCmd(a *app) *cobra.Command {
	var server, profile, logLevel string
	cmd := &cobra.Command{
		Use:   "stdio",
		Short: "Serve the hub over stdin/stdout, for stdio-only clients such as Claude Desktop",
		Long:  stdioLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStdio(a, cmd, hubclient.View{Server: server, Profile: profile}, logLevel)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&server, "server", "", "relay to one server's own endpoint (/NAME/mcp) instead of the merged /mcp")
	cmd.RegisterFlagCompletionFunc("server", a.completeServerFlag(enabledServer))
	fl.StringVar(&profile, "profile", "", "relay to a profile's endpoint (/profiles/NAME/mcp) instead of the merged /mcp")
	cmd.RegisterFlagCompletionFunc("profile", a.completeProfileFlag)
	fl.StringVar(&logLevel, "log-level", "info", "log level on standard error: debug, info, warn or error")
	return cmd
}

// runStdio checks the flags and the registry, then hands the face to
// stdioface.Run, which finds or starts the hub and relays to v's endpoint
// until stdin ends or a signal comes.
func runStdio(a *app, cmd *cobra.Command, v hubclient.View, logLevel string) error {
	if v.Server != "" && v.Profile != "" {
		return fmt.Errorf("give --server or --profile, not both: --server relays one server's own endpoint, --profile a profile's (see %s --help)", cmd.CommandPath())
	}
	log, _, err := newLogger(a, "text", logLevel)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A client that dies closes our stdout; writing to it must fail with
	// EPIPE, which ends the relay through its normal shutdown (the hub
	// session deleted), instead of killing the face by SIGPIPE.
	signal.Ignore(syscall.SIGPIPE)

	reg, err := a.loadRegistry()
	if err != nil {
		fmt.Fprintf(a.stderr, "the registry %s does not load:\n", a.configPath)
		a.printRegistryErrors(err)
		reg = nil // a running hub keeps its last good registry: it may still serve
	}
	if reg != nil {
		if err := a.checkRegistryView(reg, v); err != nil {
			return err
		}
	}
	exe, _ := os.Executable() // "" when unknown: then no hub can be started
	return stdioface.Run(ctx, stdioface.Config{
		ConfigPath: a.configPath, DataDir: a.dataDir, Registry: reg, Executable: exe,
		View: v, In: cmd.InOrStdin(), Out: a.stdout, Stderr: a.stderr, Log: log,
	})
}

// checkRegistryView makes sure the registry has v's server, enabled, or
// its profile, without a problem, before a hub is found or started for it
// (stdio) or a client is pointed at it (connect).
func (a *app) checkRegistryView(reg *registry.Registry, v hubclient.View) error {
	switch {
	case v.Server != "":
		switch s := reg.Server(v.Server); {
		case s == nil:
			return fmt.Errorf("no server %q in %s (see mcphub list)", v.Server, a.configPath)
		case !s.Enabled:
			return fmt.Errorf("server %q is disabled (turn it on with: mcphub enable %s)", v.Server, v.Server)
		}
	case v.Profile != "":
		p := reg.Profile(v.Profile)
		if p == nil {
			return hubclient.NoProfileErr(v.Profile, reg.Path, reg.Profiles, func(p *registry.Profile) string { return p.Name })
		}
		if p.Problem != "" {
			return fmt.Errorf("profile %s serves nothing until its table in %s is fixed (mcphub validate shows every problem):\n%s", v.Profile, reg.Path, p.Problem)
		}
	}
	return nil
}
