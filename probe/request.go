package probe

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/oauth"
	"github.com/mcphub/mcphub/registry"
)

// Request is a probe as mcphub probe's command line asks for it, before
// it is checked. Its messages name the flags, since the user typed them.
type Request struct {
	// Target names the server: a URL, or a stdio command given to Plan.
	Target registry.Target
	// Calls are tools to call after listing; Args[i], a JSON object, is
	// the arguments of Calls[i] ({} when there are fewer Args).
	Calls, Args []string
	// Protocol pins a protocol revision; "" or "auto" lets the era probe
	// choose as the hub would.
	Protocol string
	// ClientID, ClientSecret, ClientMetadataURL and Scopes sign in to a
	// remote server behind OAuth as this client; ClientSecret may be
	// '${NAME}', read from the environment so that it stays out of the
	// process list.
	ClientID, ClientSecret, ClientMetadataURL string
	Scopes                                    []string
	// Save names the registry server (of the same URL) whose tokens the
	// sign-in keeps; it asks for a sign-in too (see Options.Save).
	Save string
	// Version is mcphub's version, sent as the client's.
	Version string
}

// Plan is a checked Request: how to connect, and what to call then.
type Plan struct {
	Config client.Config
	Calls  []PlannedCall
}

// PlannedCall is one tool to call, with its arguments (a JSON object).
type PlannedCall struct{ Tool, Args string }

// Plan checks r with command (everything after --, for a stdio server)
// and turns it into a Plan, refusing mixed or missing targets with a
// message that says what to do.
func (r Request) Plan(command []string) (*Plan, error) {
	cfg := client.Config{Name: "probe", ClientInfo: client.Implementation{Name: "mcphub-probe", Version: r.Version}}
	t, err := r.Target.Resolve(command, client.TransportAuto, "probe")
	if err != nil {
		return nil, err
	}
	cfg.URL, cfg.Transport, cfg.Headers = t.URL, t.Transport, t.Headers
	cfg.Command, cfg.Args, cfg.Env, cfg.Dir = t.Command, t.Args, t.Env, t.Cwd
	cfg.Name = "remote"
	if t.Command != "" {
		cfg.Name = t.Command
	}
	calls, err := r.calls()
	if err != nil {
		return nil, err
	}
	if r.Protocol != "" && r.Protocol != registry.ProtocolAuto {
		if err := registry.CheckProtocol(r.Protocol); err != nil {
			return nil, fmt.Errorf("--protocol: %w", err)
		}
		cfg.ProtocolVersion = r.Protocol
	}
	if cfg.OAuth, err = r.oauth(cfg.URL); err != nil {
		return nil, err
	}
	return &Plan{Config: cfg, Calls: calls}, nil
}

// calls pairs Calls and Args by position.
func (r Request) calls() ([]PlannedCall, error) {
	if len(r.Args) > len(r.Calls) {
		return nil, fmt.Errorf("%d --args for %d --call: each --args goes with the --call in the same position", len(r.Args), len(r.Calls))
	}
	for _, a := range r.Args {
		if !json.Valid([]byte(a)) || !strings.HasPrefix(strings.TrimSpace(a), "{") {
			return nil, fmt.Errorf("--args must be a JSON object, got %q", a)
		}
	}
	calls := make([]PlannedCall, len(r.Calls))
	for i, tool := range r.Calls {
		calls[i] = PlannedCall{Tool: tool, Args: "{}"}
		if i < len(r.Args) {
			calls[i].Args = r.Args[i]
		}
	}
	return calls, nil
}

// oauth is the sign-in the flags ask for, or nil when they name none.
func (r Request) oauth(url string) (*oauth.Config, error) {
	signIn := r.ClientID != "" || r.ClientSecret != "" || r.ClientMetadataURL != "" || r.Save != "" || len(r.Scopes) > 0
	if signIn && url == "" {
		return nil, errors.New("--client-id, --client-secret, --client-metadata-url, --scope and --save sign in to a remote server: give --url")
	}
	if r.ClientSecret != "" && r.ClientID == "" {
		return nil, errors.New("--client-secret needs --client-id")
	}
	// '${NAME}' (quoted, so that the shell leaves it) reads the secret
	// from the environment, as the registry's client_secret does, which
	// keeps it out of the process list.
	secret, unset, err := registry.Expand(r.ClientSecret, os.LookupEnv)
	switch {
	case err != nil:
		return nil, fmt.Errorf("--client-secret: %w", err)
	case len(unset) > 0:
		return nil, fmt.Errorf("--client-secret names ${%s}, which is not set in this shell", unset[0])
	}
	if !signIn {
		return nil, nil
	}
	return &oauth.Config{ClientID: r.ClientID, ClientSecret: secret, ClientMetadataURL: r.ClientMetadataURL, Scopes: r.Scopes}, nil
}
