package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/internal/textdist"
	"github.com/mcphub/mcphub/oauth"
	"github.com/mcphub/mcphub/registry"
)

// Keeper is the store a sign-in keeps tokens in, which can say where
// that is ("keychain", or "file: PATH"), as *keychain.Store does: the
// messages name it.
type Keeper interface {
	oauth.TokenStore
	Backend() string
}

// SignInOptions are how SignIn signs in.
type SignInOptions struct {
	// Timeout bounds the whole sign-in, the user's time in the browser
	// included.
	Timeout time.Duration
	// Log gets the sign-in's prompts (the URL to open) and the
	// connection's warnings; nil discards them.
	Log io.Writer
	// Version is mcphub's version, sent as the client's.
	Version string
}

// Login is what SignIn or SignOut did, and mcphub login's and logout's
// --json answer.
type Login struct {
	Server string `json:"server"`
	// SignedIn is false when the server let mcphub in without a sign-in
	// (nothing was kept, and the stored grant is as it was), and after
	// SignOut.
	SignedIn bool `json:"signed_in"`
	// Tools is how many tools the signed-in connection listed.
	Tools int `json:"tools"`
	// Store is where the tokens are kept: "keychain" or "file: PATH".
	Store string `json:"store"`
	// Hub says what the running hub was told: "reconnecting", "no hub
	// running", or why it could not be told. The caller tells it (see
	// hubclient.Target.ReconnectWithTokens); "unchanged" when nothing
	// was kept.
	Hub string `json:"hub"`
	// ListErr is why listing the tools failed after a sign-in that
	// succeeded (and was kept); worth a warning, not a failure.
	ListErr error `json:"-"`
}

// SignIn signs in to the registry's remote server spec in the browser, as
// the hub connects to it, and keeps the new tokens in store for the hub.
// The connection sees the stored grant without its token, so that the
// user is asked again while mcphub's registration with the authorization
// server is reused, and the stored token is replaced only when the new
// sign-in succeeds. Its errors say what to do, naming `login NAME`.
func SignIn(ctx context.Context, spec *registry.Server, store Keeper, o SignInOptions) (*Login, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	name := spec.Name
	si, err := oauth.ListenLoopback(name, o.Log, oauth.LoopbackPort)
	if err != nil {
		return nil, err
	}
	defer si.Close()
	cfg := client.Config{Name: name, URL: spec.URL, Transport: spec.Transport, Headers: spec.Headers,
		ClientInfo: client.Implementation{Name: "mcphub", Version: o.Version}, OAuth: OAuthConfig(spec.OAuth)}
	view := oauth.Tokenless(store)
	cfg.OAuth.Store, cfg.OAuth.Fetch, cfg.OAuth.RedirectURL = view, si.Fetch, si.RedirectURL()
	cfg.Logger = slog.New(slog.NewTextHandler(o.Log, &slog.HandlerOptions{Level: slog.LevelWarn}))
	conn := client.New(cfg, nil)
	defer conn.Close()
	// Some servers let initialize through and ask for sign-in on the
	// first list: the tools are listed before the grant is looked at.
	sctx, cancel := context.WithTimeout(ctx, o.Timeout)
	err = conn.Start(sctx)
	var tools []json.RawMessage
	if err == nil {
		tools, err = conn.ListAll(sctx, "tools/list")
	}
	cancel()
	if errors.Is(err, context.DeadlineExceeded) && si.Fetched() > 0 {
		return nil, fmt.Errorf("login %s: no answer from the browser within %s; run it again, or give it longer with --timeout", name, o.Timeout)
	}
	if !view.Saved() {
		// No new token was stored: the sign-in failed, could not be
		// kept, or was never asked for. The stored grant is as it was.
		switch {
		case err != nil:
			return nil, fmt.Errorf("login %s: %w", name, err)
		case si.Fetched() > 0:
			return nil, fmt.Errorf("login %s: signed in, but the tokens could not be kept in the %s (see the warning above)", name, store.Backend())
		}
		return &Login{Server: name, Store: store.Backend(), Hub: "unchanged"}, nil
	}
	return &Login{Server: name, SignedIn: true, Tools: len(tools), Store: store.Backend(), ListErr: err}, nil
}

// SignOut forgets what store keeps for the registry's remote server spec:
// its tokens and its client registration. The authorization server may
// still list the grant.
func SignOut(spec *registry.Server, store Keeper) (*Login, error) {
	if err := store.Delete(oauth.CanonicalResource(spec.URL)); err != nil {
		return nil, fmt.Errorf("logout %s: %w", spec.Name, err)
	}
	return &Login{Server: spec.Name, Store: store.Backend()}, nil
}

// OAuthConfig is the OAuth client's configuration for a registry server's
// oauth key (nil: none, so discovery and dynamic registration decide):
// the sign-in of login and probe --save, and the hub's refreshing
// connections, present the same client.
func OAuthConfig(o *registry.OAuth) *oauth.Config {
	c := &oauth.Config{}
	if o != nil {
		c.ClientID, c.ClientSecret, c.ClientMetadataURL, c.Scopes = o.ClientID, o.ClientSecret, o.ClientMetadataURL, o.Scopes
	}
	return c
}

// RemoteServer returns reg's remote server called name, the one a
// sign-in is for, or an error that says what to do: the names it may
// have meant, why a stdio server needs none, or the entry's problem.
// configPath names the registry file in the messages.
func RemoteServer(reg *registry.Registry, configPath, name string) (*registry.Server, error) {
	spec := reg.Server(name)
	if spec == nil {
		var names []string
		for _, s := range reg.Servers {
			if s.Kind() == registry.KindRemote {
				names = append(names, s.Name)
			}
		}
		msg := fmt.Sprintf("%s has no server %q", configPath, name)
		if close := textdist.Suggest(name, names, 3); len(close) > 0 {
			msg += " (did you mean " + strings.Join(close, ", ") + "?)"
		}
		return nil, errors.New(msg)
	}
	if spec.Kind() != registry.KindRemote {
		return nil, fmt.Errorf("%s is a stdio server: it gets its credentials from its env in %s, not from a sign-in", name, configPath)
	}
	if spec.Problem != "" {
		return nil, fmt.Errorf("fix the entry of %s first:\n%s", name, spec.Problem)
	}
	return spec, nil
}
