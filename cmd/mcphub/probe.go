package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/probe"
)

type probeFlags struct {
	req     probe.Request
	timeout time.Duration
	asJSON  bool
	verbose bool
}

const probeLong = `Connect to one MCP server the way the hub would, and show what it offers.

probe starts a stdio server (everything after --) or reaches a remote one
(--url), performs the MCP handshake and prints the server's name and version,
the negotiated protocol version, the transport, its capabilities and
instructions, and its tools, prompts, resources and resource templates.
With --call it then calls a tool and prints its result, showing progress
notifications and log messages as they arrive; --call and --args may be
repeated, the first --args going with the first --call, and so on.

probe speaks the protocol era the hub would: over Streamable HTTP it asks
server/discover first and speaks 2026-07-28 to a server that offers it;
a stdio server gets a session. --protocol pins a revision instead. When a
server asks for input (a session-era request, or a 2026-07-28
input_required result), probe answers roots/list with no roots and
declines an elicitation; it cannot sample.

Use it to debug a server before you add it to the registry.

A remote server that asks for OAuth sign-in is signed in to in the browser
as mcphub login does (dynamic client registration, or the client that
--client-id and --client-secret name, or the client ID metadata document
at --client-metadata-url). Its tokens are kept only for the run, unless
--save names the registry server with the same URL: they are then kept
for the hub as mcphub login keeps them.`

const probeExample = `  mcphub probe -- npx -y @modelcontextprotocol/server-everything
  mcphub probe --url http://127.0.0.1:3000/mcp --header "Authorization=Bearer $TOKEN"
  mcphub probe --url http://127.0.0.1:3000/sse --transport sse
  mcphub probe --url http://127.0.0.1:3000/mcp --call add --args '{"a":1,"b":2}'
  mcphub probe --url http://127.0.0.1:3000/mcp --call a --args '{"x":1}' --call b
  mcphub probe --protocol 2025-11-25 -- ./my-server
  mcphub probe --url https://mcp.tracker.example.com/mcp --client-id mcphub --client-secret '${SECRET}' --save tracker`

func newProbeCmd(a *app) *cobra.Command {
	var f probeFlags
	cmd := &cobra.Command{
		Use:     "probe (--url URL | -- COMMAND [ARGS...])",
		Short:   "Connect to one MCP server and show what it offers; optionally call a tool",
		Long:    probeLong,
		Example: probeExample,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.req.Version = mcphubVersion()
			plan, err := f.req.Plan(args)
			if err != nil {
				return err
			}
			return runProbe(cmd.Context(), a, plan, f)
		},
	}
	fl := cmd.Flags()
	registerTarget(fl, &f.req.Target, client.TransportAuto)
	fl.StringArrayVar(&f.req.Calls, "call", nil, "call this tool after listing (repeatable)")
	fl.StringArrayVar(&f.req.Args, "args", nil, "the arguments of the --call in the same position, a JSON object (default {})")
	fl.StringVar(&f.req.Protocol, "protocol", "auto", "the protocol revision to speak: auto, or one of "+strings.Join(jsonrpc.Versions, ", "))
	fl.DurationVar(&f.timeout, "timeout", 60*time.Second, "how long to wait for connecting and for each request")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON object instead of tables")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "log the connection's debug messages to stderr")
	fl.StringVar(&f.req.ClientID, "client-id", "", "sign in as this client registered beforehand with the server's authorization server")
	fl.StringVar(&f.req.ClientSecret, "client-secret", "", "the registered client's secret (with --client-id); '${VAR}' reads it from the environment, out of the process list")
	fl.StringVar(&f.req.ClientMetadataURL, "client-metadata-url", "", "sign in with the client ID metadata document at this https URL")
	fl.StringSliceVar(&f.req.Scopes, "scope", nil, "ask for these scopes instead of the ones the server names (repeat, or comma-separated)")
	fl.StringVar(&f.req.Save, "save", "", "keep the tokens for the registry server NAME (same URL), as mcphub login does")
	return cmd
}

// runProbe runs the plan, printing its report as text as it goes or, with
// --json, as one JSON object at the end. With --save, the registry server
// is looked up first, and a running hub is told of the tokens a sign-in
// kept for it.
func runProbe(ctx context.Context, a *app, plan *probe.Plan, f probeFlags) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	o := probe.Options{Timeout: f.timeout, Log: a.stderr, Verbose: f.verbose, Interactive: isTerminal(a.stderr)}
	if !f.asJSON {
		o.Out = a.stdout
	}
	var keeper grantKeeper
	if f.req.Save != "" {
		spec, err := a.remoteSpec(f.req.Save)
		if err != nil {
			return fmt.Errorf("--save: %w", err)
		}
		var closeStore func()
		if keeper, closeStore, err = a.cliGrantsFor(); err != nil {
			return err
		}
		defer closeStore()
		o.Save, o.Store = spec, keeper
	}
	report, err := probe.Run(ctx, plan, o)
	if err != nil {
		return err
	}
	if f.req.Save != "" && report.SignedIn {
		// This run signed in: the hub is told of the new tokens.
		fmt.Fprintf(a.stderr, "tokens kept for %s in the %s; hub: %s\n", f.req.Save, keeper.Backend(), a.tellHubs(ctx, keeper, f.req.Save))
	}
	if f.asJSON {
		return report.WriteJSON(a.stdout)
	}
	return nil
}
