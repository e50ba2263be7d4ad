package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"os"

	"github.com/mcphub/mcphub/bridge"
	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/hub"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/oauth"
	"github.com/mcphub/mcphub/probe"
	"github.com/mcphub/mcphub/registry"
	"github.com/mcphub/mcphub/store"
)

// newStoredUpstream makes each registry server a supervised bridge.Server.
// With db, an HTTP server's connection state is saved as it changes and
// offered back on the next start (its session and streams resume), and every
// server's catalog is cached (see bridge.Config.Store). Only the first
// upstream of a server in this run resumes its stored session, and only the
// one the hub serves calls on writes it (see bridge.Claims): a replacement
// starts its own session, and the connection it replaces ends its session
// when it closes. onProcess, when set, learns of every stdio server's
// process group. A remote server signs in with the grant mcphub login kept
// in tokens (nil: none), refreshed ahead of expiry; the hub itself never
// opens a browser.
func newStoredUpstream(log *slog.Logger, db *store.Store, tokens oauth.TokenStore, onProcess func(int, bool)) hub.NewUpstreamFunc {
	claims := bridge.NewClaims()
	pings := bridge.NewPingBudget(bridge.DefaultPingSpacing, bridge.DefaultPingBurst)
	return func(spec *registry.Server, hc registry.Hub, events hub.UpstreamEvents) hub.Upstream {
		cfg := bridgeConfig(log, spec, hc, events, tokens, onProcess)
		cfg.PingBudget = pings
		if db != nil {
			cfg.Store, cfg.Claims = db, claims
		}
		return upstream{bridge.New(cfg)}
	}
}

// bridgeConfig is the bridge.Config of one registry server: its client
// (process or URL, the hub's limits, its sign-in) and the hub's callbacks.
func bridgeConfig(log *slog.Logger, spec *registry.Server, hc registry.Hub, events hub.UpstreamEvents, tokens oauth.TokenStore, onProcess func(int, bool)) bridge.Config {
	cc := client.Config{
		Command: spec.Command, Args: spec.Args, Env: spec.Env, Dir: spec.Cwd,
		EnvPassthrough: spec.EnvAllow, InheritEnv: spec.InheritEnv, EnvDeny: spec.EnvDeny,
		URL: spec.URL, Transport: spec.Transport, Headers: spec.Headers,
		ClientInfo:      client.Implementation{Name: "mcphub", Version: mcphubVersion()},
		ProtocolVersion: spec.ProtocolVersion(),
		OnProcess:       onProcess,
		// A line or body over this is never read whole: the call it
		// answers fails at once, saying the size (see messageLimit).
		MaxMessageBytes: messageLimit(hc.MaxResponseBytes),
	}
	if spec.Kind() == registry.KindRemote && tokens != nil {
		cc.OAuth = probe.OAuthConfig(spec.OAuth)
		cc.OAuth.Store = tokens
		name := spec.Name
		cc.OAuth.OnRefreshFailed = func(err error) {
			log.Warn("the server's token could not be refreshed; it needs a new sign-in", "server", name, "err", err, "fix", "mcphub login "+name)
		}
	}
	// "mcphub" as a command means this very binary, so the default
	// registry's demo server works without mcphub on PATH (go run).
	if cc.Command == "mcphub" {
		if exe, err := os.Executable(); err == nil {
			cc.Command = exe
		}
	}
	cfg := bridge.Config{
		Name: spec.Name, Client: cc, Share: spec.Share,
		ConnectTimeout: spec.ConnectTimeout, RequestTimeout: hc.RequestTimeout,
		MaxResponseBytes: hc.MaxResponseBytes,
		Changed:          events.Changed, Notification: events.Notification, Request: events.Request,
		Logger: log,
	}
	return cfg
}

// newTakeoverUpstream makes the upstreams that finish the calls of a
// session taken over from a replica of a team hub that stopped: for a
// remote server, a connection that resumes the upstream session that
// replica kept (its stored state) and the streams its calls' results
// travel on. It persists nothing and serves nothing else: its
// notifications and requests outside those calls are dropped.
func newTakeoverUpstream(log *slog.Logger, db *store.Store, tokens oauth.TokenStore) hub.TakeoverFunc {
	return func(spec *registry.Server, hc registry.Hub, from string) hub.Upstream {
		if spec.Kind() != registry.KindRemote {
			return nil
		}
		data, err := db.UpstreamOf(from, spec.Name)
		if err != nil {
			return nil
		}
		var st client.State
		if json.Unmarshal(data, &st) != nil || st.SessionID == "" {
			return nil
		}
		events := hub.UpstreamEvents{
			Changed:      func() {},
			Notification: func(string, *jsonrpc.Message) {},
			Request: func(context.Context, string, string, json.RawMessage) (json.RawMessage, error) {
				return nil, errors.New("a connection finishing another replica's calls takes no requests outside them")
			},
		}
		cfg := bridgeConfig(log.With("takeover_from", from), spec, hc, events, tokens, nil)
		cfg.Client.Resume, cfg.Client.KeepSession = &st, true
		return upstream{bridge.New(cfg)}
	}
}

// messageEnvelope is the room a response's JSON-RPC envelope takes
// besides its result, which [hub] max_response_bytes bounds.
const messageEnvelope = 64 << 10

// messageLimit is the client's bound on one upstream message for [hub]
// max_response_bytes: the result plus its envelope, so that a result the
// bridge would refuse is refused while it is read, before it is buffered.
// Past what an int holds on every platform, it is left to the client's
// default.
func messageLimit(maxResult int64) int {
	if maxResult <= 0 || maxResult > math.MaxInt32-messageEnvelope {
		return 0
	}
	return int(maxResult) + messageEnvelope
}

// The concrete types serve plugs into the hub's interfaces.
var (
	_ hub.Upstream      = upstream{}
	_ hub.Store         = hubStore{}
	_ bridge.StateStore = (*store.Store)(nil)
)

// upstream adapts a bridge.Server to hub.Upstream: the two rooms report
// status in their own types.
type upstream struct{ *bridge.Server }

// Status is bridge.Status as the hub's type: the fields are the same.
func (u upstream) Status() hub.UpstreamStatus { return hub.UpstreamStatus(u.Server.Status()) }
