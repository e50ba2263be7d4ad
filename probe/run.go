package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/redact"
	"github.com/mcphub/mcphub/oauth"
	"github.com/mcphub/mcphub/registry"
)

// Report is what a probe found, and mcphub probe's --json output.
type Report struct {
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
	Calls      []Call          `json:"calls,omitempty"`
	// SignedIn is whether this run signed in in the browser, which with
	// Options.Save means new tokens were kept for the registry server.
	SignedIn bool `json:"-"`
}

// Call is one tool call's result.
type Call struct {
	Tool   string          `json:"tool"`
	Result json.RawMessage `json:"result"`
}

// Options are how Run runs a Plan.
type Options struct {
	// Timeout bounds connecting and listing, and then each call.
	Timeout time.Duration
	// Out gets the report as text as it is found; nil prints nothing (the
	// caller prints the returned Report, as --json does).
	Out io.Writer
	// Log gets the connection's warnings (with Verbose, its debug
	// messages too), what the server sends on its own, and the sign-in's
	// prompts; nil discards them.
	Log     io.Writer
	Verbose bool
	// Interactive says someone can answer a browser (the command runs at
	// a terminal): a remote server that asks for sign-in is then signed
	// in to, as it is with $BROWSER set or a sign-in in the Plan. Else a
	// script gets the server's refusal at once, not a browser waiting.
	Interactive bool
	// Save is the registry server, of the Plan's URL, whose tokens the
	// sign-in keeps in Store, where mcphub login keeps them. nil keeps
	// them for the run only.
	Save  *registry.Server
	Store oauth.TokenStore
}

// Run connects as p says, lists what the server offers, prints it to
// o.Out, then makes p's calls in order, printing each result, and returns
// the report. Progress, log messages and the server's requests go to
// o.Log as they arrive.
func Run(ctx context.Context, p *Plan, o Options) (*Report, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	cfg := p.Config
	level := slog.LevelWarn
	if o.Verbose {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(o.Log, &slog.HandlerOptions{Level: level}))
	switch {
	case cfg.OAuth != nil:
		oc := *cfg.OAuth // the sign-in below fills it in; p stays as it was
		cfg.OAuth = &oc
	case cfg.URL != "" && (os.Getenv("BROWSER") != "" || o.Interactive):
		cfg.OAuth = &oauth.Config{}
	}
	var si *oauth.Loopback
	if cfg.OAuth != nil {
		var err error
		if si, err = signIn(&cfg, o); err != nil {
			return nil, err
		}
		defer si.Close()
	}
	conn := client.New(cfg, handler{out: o.Log})
	defer conn.Close()

	cctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if err := conn.Start(cctx); err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	report, err := Collect(cctx, conn)
	if err != nil {
		return nil, err
	}
	if o.Out != nil {
		report.WriteText(o.Out)
	}
	for _, c := range p.Calls {
		callCtx, cancel := context.WithTimeout(ctx, o.Timeout)
		params := fmt.Appendf(nil, `{"name":%s,"arguments":%s,"_meta":{"progressToken":"probe"}}`, jsonrpc.Quote(c.Tool), c.Args)
		res, err := conn.CallAnswering(callCtx, "tools/call", params)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("call %s: %w", c.Tool, err)
		}
		call := Call{Tool: c.Tool, Result: res}
		report.CallResult = res
		report.Calls = append(report.Calls, call)
		if o.Out != nil {
			call.WriteText(o.Out)
		}
	}
	report.SignedIn = si.Fetched() > 0
	return report, nil
}

// Collect reports what conn's server offers: its handshake, and every
// page of each list its capabilities announce.
func Collect(ctx context.Context, conn *client.Conn) (*Report, error) {
	init := conn.Initialize()
	r := &Report{Server: init.ServerInfo, ProtocolVersion: init.ProtocolVersion, Transport: conn.Transport(),
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

// signIn readies a sign-in for a probe of a remote server: the browser's
// redirect listener, and where the tokens go (nowhere beyond the run, or
// with o.Save where mcphub login keeps them for that server, with its
// oauth settings where the Plan names none).
func signIn(cfg *client.Config, o Options) (*oauth.Loopback, error) {
	if spec := o.Save; spec != nil {
		if oauth.CanonicalResource(spec.URL) != oauth.CanonicalResource(cfg.URL) {
			return nil, fmt.Errorf("--save %s: that server's url is %s, not %s; tokens are kept for the URL they were issued for", spec.Name, redact.URL(spec.URL), redact.URL(cfg.URL))
		}
		cfg.OAuth.Store = o.Store
		if o := spec.OAuth; o != nil && cfg.OAuth.ClientID == "" && cfg.OAuth.ClientMetadataURL == "" {
			cfg.OAuth.ClientID, cfg.OAuth.ClientSecret, cfg.OAuth.ClientMetadataURL = o.ClientID, o.ClientSecret, o.ClientMetadataURL
		}
		if o := spec.OAuth; o != nil && len(cfg.OAuth.Scopes) == 0 {
			cfg.OAuth.Scopes = o.Scopes
		}
	}
	si, err := oauth.ListenLoopback(cfg.Name, o.Log, oauth.LoopbackPort)
	if err != nil {
		return nil, err
	}
	cfg.OAuth.Fetch, cfg.OAuth.RedirectURL = si.Fetch, si.RedirectURL()
	return si, nil
}
