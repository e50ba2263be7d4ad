package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/redact"
	"github.com/mcphub/mcphub/internal/termtext"
	"github.com/mcphub/mcphub/oauth"
	"github.com/mcphub/mcphub/registry"
)

type probeFlags struct {
	targetFlags
	calls    []string
	args     []string
	protocol string
	timeout  time.Duration
	asJSON   bool
	verbose  bool
	// Sign-in to a server behind OAuth (--url only).
	clientID, clientSecret, clientMetadataURL, save string
	scopes                                          []string
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
			cfg, err := f.config(args)
			if err != nil {
				return err
			}
			return runProbe(cmd.Context(), a, cfg, f)
		},
	}
	fl := cmd.Flags()
	f.targetFlags.register(fl, client.TransportAuto)
	fl.StringArrayVar(&f.calls, "call", nil, "call this tool after listing (repeatable)")
	fl.StringArrayVar(&f.args, "args", nil, "the arguments of the --call in the same position, a JSON object (default {})")
	fl.StringVar(&f.protocol, "protocol", "auto", "the protocol revision to speak: auto, or one of "+strings.Join(jsonrpc.Versions, ", "))
	fl.DurationVar(&f.timeout, "timeout", 60*time.Second, "how long to wait for connecting and for each request")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON object instead of tables")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "log the connection's debug messages to stderr")
	fl.StringVar(&f.clientID, "client-id", "", "sign in as this client registered beforehand with the server's authorization server")
	fl.StringVar(&f.clientSecret, "client-secret", "", "the registered client's secret (with --client-id); '${VAR}' reads it from the environment, out of the process list")
	fl.StringVar(&f.clientMetadataURL, "client-metadata-url", "", "sign in with the client ID metadata document at this https URL")
	fl.StringSliceVar(&f.scopes, "scope", nil, "ask for these scopes instead of the ones the server names (repeat, or comma-separated)")
	fl.StringVar(&f.save, "save", "", "keep the tokens for the registry server NAME (same URL), as mcphub login does")
	return cmd
}

// config turns the flags into a client configuration, refusing mixed or
// missing targets with a message that says what to do.
func (f *probeFlags) config(args []string) (client.Config, error) {
	cfg := client.Config{Name: "probe", ClientInfo: client.Implementation{Name: "mcphub-probe", Version: mcphubVersion()}}
	t, err := f.resolve(args, client.TransportAuto, "probe")
	if err != nil {
		return cfg, err
	}
	cfg.URL, cfg.Transport, cfg.Headers = t.url, t.transport, t.headers
	cfg.Command, cfg.Args, cfg.Env, cfg.Dir = t.command, t.args, t.env, t.cwd
	cfg.Name = "remote"
	if t.command != "" {
		cfg.Name = t.command
	}
	if len(f.args) > len(f.calls) {
		return cfg, fmt.Errorf("%d --args for %d --call: each --args goes with the --call in the same position", len(f.args), len(f.calls))
	}
	for _, a := range f.args {
		if !json.Valid([]byte(a)) || !strings.HasPrefix(strings.TrimSpace(a), "{") {
			return cfg, fmt.Errorf("--args must be a JSON object, got %q", a)
		}
	}
	if f.protocol != "" && f.protocol != registry.ProtocolAuto {
		if err := registry.CheckProtocol(f.protocol); err != nil {
			return cfg, fmt.Errorf("--protocol: %w", err)
		}
		cfg.ProtocolVersion = f.protocol
	}
	signIn := f.clientID != "" || f.clientSecret != "" || f.clientMetadataURL != "" || f.save != "" || len(f.scopes) > 0
	if signIn && cfg.URL == "" {
		return cfg, errors.New("--client-id, --client-secret, --client-metadata-url, --scope and --save sign in to a remote server: give --url")
	}
	if f.clientSecret != "" && f.clientID == "" {
		return cfg, errors.New("--client-secret needs --client-id")
	}
	// '${NAME}' (quoted, so that the shell leaves it) reads the secret
	// from the environment, as the registry's client_secret does, which
	// keeps it out of the process list.
	secret, unset, err := registry.Expand(f.clientSecret, os.LookupEnv)
	switch {
	case err != nil:
		return cfg, fmt.Errorf("--client-secret: %w", err)
	case len(unset) > 0:
		return cfg, fmt.Errorf("--client-secret names ${%s}, which is not set in this shell", unset[0])
	}
	f.clientSecret = secret
	if signIn {
		cfg.OAuth = &oauth.Config{ClientID: f.clientID, ClientSecret: f.clientSecret, ClientMetadataURL: f.clientMetadataURL, Scopes: f.scopes}
	}
	return cfg, nil
}

// probeHandler shows what the server sends on its own while probe runs.
type probeHandler struct{ out io.Writer }

func (h probeHandler) HandleNotification(m *jsonrpc.Message, _ json.RawMessage) {
	switch m.Method {
	case "notifications/progress":
		var p struct {
			Progress float64  `json:"progress"`
			Total    *float64 `json:"total"`
			Message  string   `json:"message"`
		}
		json.Unmarshal(m.Params, &p)
		line := fmt.Sprintf("progress %g", p.Progress)
		if p.Total != nil {
			line += fmt.Sprintf("/%g", *p.Total)
		}
		if p.Message != "" {
			line += " " + p.Message
		}
		fmt.Fprintln(h.out, line)
	case "notifications/message":
		var p struct {
			Level  string          `json:"level"`
			Logger string          `json:"logger"`
			Data   json.RawMessage `json:"data"`
		}
		json.Unmarshal(m.Params, &p)
		fmt.Fprintf(h.out, "log %s %s %s\n", p.Level, p.Logger, p.Data)
	default:
		fmt.Fprintf(h.out, "notification %s %s\n", m.Method, m.Params)
	}
}

func (h probeHandler) HandleRequest(_ context.Context, m *jsonrpc.Message, _ json.RawMessage) (json.RawMessage, error) {
	switch m.Method {
	case "roots/list":
		return json.RawMessage(`{"roots":[]}`), nil
	case "elicitation/create":
		msg, _ := jsonrpc.StringMember(m.Params, "message")
		fmt.Fprintf(h.out, "the server asked: %s; probe declines\n", termtext.OneLine(msg, 200))
		return json.RawMessage(`{"action":"decline"}`), nil
	}
	fmt.Fprintf(h.out, "the server asked for %s; probe cannot answer it\n", m.Method)
	return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "mcphub probe does not answer %s", m.Method)
}

func runProbe(ctx context.Context, a *app, cfg client.Config, f probeFlags) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
	// A probe signs in when asked to (a sign-in flag), or when someone
	// can answer a browser: at a terminal, or with $BROWSER set. A script
	// gets the server's refusal at once instead of a browser waiting.
	if cfg.URL != "" && cfg.OAuth == nil && (os.Getenv("BROWSER") != "" || isTerminal(a.stderr)) {
		cfg.OAuth = &oauth.Config{}
	}
	var si *oauth.Loopback
	if cfg.OAuth != nil {
		var err error
		if si, err = a.probeSignIn(&cfg, f); err != nil {
			return err
		}
		defer si.Close()
	}
	conn := client.New(cfg, probeHandler{out: a.stderr})
	defer conn.Close()

	cctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	if err := conn.Start(cctx); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	report, err := collectProbe(cctx, conn)
	if err != nil {
		return err
	}
	if !f.asJSON {
		printProbe(a.stdout, report)
	}

	for i, tool := range f.calls {
		args := "{}"
		if i < len(f.args) {
			args = f.args[i]
		}
		callCtx, cancel := context.WithTimeout(ctx, f.timeout)
		params := fmt.Appendf(nil, `{"name":%s,"arguments":%s,"_meta":{"progressToken":"probe"}}`, jsonrpc.Quote(tool), args)
		res, err := conn.CallAnswering(callCtx, "tools/call", params)
		cancel()
		if err != nil {
			return fmt.Errorf("call %s: %w", tool, err)
		}
		report.CallResult = res
		report.Calls = append(report.Calls, probeCall{Tool: tool, Result: res})
		if !f.asJSON {
			printCallResult(a.stdout, tool, res)
		}
	}
	if f.save != "" && si.Fetched() > 0 {
		// This run signed in: the hub is told of the new tokens.
		fmt.Fprintf(a.stderr, "tokens kept for %s in the %s; hub: %s\n", f.save, a.oauthStore().Backend(), a.reconnectOnHub(ctx, f.save))
	}
	if f.asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	}
	return nil
}

// probeReport is what probe found, also its --json output.
type probeReport struct {
	Server            client.Implementation `json:"serverInfo"`
	ProtocolVersion   string                `json:"protocolVersion"`
	Transport         string                `json:"transport"`
	Capabilities      json.RawMessage       `json:"capabilities"`
	Instructions      string                `json:"instructions,omitempty"`
	Tools             []json.RawMessage     `json:"tools"`
	Prompts           []json.RawMessage     `json:"prompts"`
	Resources         []json.RawMessage     `json:"resources"`
	ResourceTemplates []json.RawMessage     `json:"resourceTemplates"`
	// CallResult is the last call's result; Calls has every call's.
	CallResult json.RawMessage `json:"callResult,omitempty"`
	Calls      []probeCall     `json:"calls,omitempty"`
}

// probeCall is one --call's result.
type probeCall struct {
	Tool   string          `json:"tool"`
	Result json.RawMessage `json:"result"`
}

func collectProbe(ctx context.Context, conn *client.Conn) (*probeReport, error) {
	init := conn.Initialize()
	r := &probeReport{Server: init.ServerInfo, ProtocolVersion: init.ProtocolVersion, Transport: conn.Transport(),
		Capabilities: init.Capabilities, Instructions: init.Instructions}
	var caps map[string]json.RawMessage
	json.Unmarshal(init.Capabilities, &caps)
	lists := []struct {
		capability, method string
		into               *[]json.RawMessage
	}{
		{"tools", "tools/list", &r.Tools},
		{"prompts", "prompts/list", &r.Prompts},
		{"resources", "resources/list", &r.Resources},
		{"resources", "resources/templates/list", &r.ResourceTemplates},
	}
	for _, l := range lists {
		if _, ok := caps[l.capability]; !ok {
			continue
		}
		items, err := conn.ListAll(ctx, l.method)
		if err != nil {
			return nil, err
		}
		*l.into = items
	}
	return r, nil
}

func printProbe(w io.Writer, r *probeReport) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "server\t%s %s\n", r.Server.Name, r.Server.Version)
	fmt.Fprintf(tw, "protocol\t%s over %s\n", r.ProtocolVersion, r.Transport)
	fmt.Fprintf(tw, "capabilities\t%s\n", describeCapabilities(r.Capabilities))
	if r.Instructions != "" {
		fmt.Fprintf(tw, "instructions\t%s\n", termtext.OneLine(r.Instructions, 200))
	}
	tw.Flush()
	printItems(w, "tools", r.Tools, "name", "description")
	printItems(w, "prompts", r.Prompts, "name", "description")
	printItems(w, "resources", r.Resources, "uri", "name")
	printItems(w, "resource templates", r.ResourceTemplates, "uriTemplate", "name")
}

// describeCapabilities renders {"tools":{"listChanged":true},...} as
// "tools (listChanged), ...".
func describeCapabilities(raw json.RawMessage) string {
	var caps map[string]map[string]any
	json.Unmarshal(raw, &caps)
	names := make([]string, 0, len(caps))
	for name, sub := range caps {
		var flags []string
		for k, v := range sub {
			if b, ok := v.(bool); ok && b {
				flags = append(flags, k)
			}
		}
		sort.Strings(flags)
		if len(flags) > 0 {
			name += " (" + strings.Join(flags, ", ") + ")"
		}
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func printItems(w io.Writer, title string, items []json.RawMessage, keyField, descField string) {
	fmt.Fprintf(w, "\n%s (%d)\n", title, len(items))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, it := range items {
		var m map[string]any
		json.Unmarshal(it, &m)
		key, _ := m[keyField].(string)
		desc, _ := m[descField].(string)
		fmt.Fprintf(tw, "  %s\t%s\n", key, termtext.OneLine(desc, 100))
	}
	tw.Flush()
}

func printCallResult(w io.Writer, tool string, res json.RawMessage) {
	var r struct {
		Content []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			MimeType string `json:"mimeType"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	json.Unmarshal(res, &r)
	status := "result"
	if r.IsError {
		status = "error result"
	}
	fmt.Fprintf(w, "\n%s of %s:\n", status, tool)
	for _, c := range r.Content {
		switch c.Type {
		case "text":
			fmt.Fprintln(w, c.Text)
		default:
			fmt.Fprintf(w, "[%s %s]\n", c.Type, c.MimeType)
		}
	}
	if len(r.Content) == 0 {
		fmt.Fprintln(w, string(res))
	}
}

// probeSignIn readies a sign-in for a probe of a remote server: the
// browser's redirect listener, and where the tokens go (nowhere beyond the
// run, or with --save where mcphub login keeps them for that server).
func (a *app) probeSignIn(cfg *client.Config, f probeFlags) (*oauth.Loopback, error) {
	if f.save != "" {
		spec, err := a.remoteSpec(f.save)
		if err != nil {
			return nil, fmt.Errorf("--save: %w", err)
		}
		if oauth.CanonicalResource(spec.URL) != oauth.CanonicalResource(cfg.URL) {
			return nil, fmt.Errorf("--save %s: that server's url is %s, not %s; tokens are kept for the URL they were issued for", f.save, redact.URL(spec.URL), redact.URL(cfg.URL))
		}
		cfg.OAuth.Store = a.oauthStore()
		if o := spec.OAuth; o != nil && f.clientID == "" && f.clientMetadataURL == "" {
			cfg.OAuth.ClientID, cfg.OAuth.ClientSecret, cfg.OAuth.ClientMetadataURL = o.ClientID, o.ClientSecret, o.ClientMetadataURL
		}
		if o := spec.OAuth; o != nil && len(f.scopes) == 0 {
			cfg.OAuth.Scopes = o.Scopes
		}
	}
	si, err := oauth.ListenLoopback(cfg.Name, a.stderr, oauth.LoopbackPort)
	if err != nil {
		return nil, err
	}
	cfg.OAuth.Fetch, cfg.OAuth.RedirectURL = si.Fetch, si.RedirectURL()
	return si, nil
}
