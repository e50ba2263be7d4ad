package main

import (
	"log/slog"
	"os"

	"github.com/mcphub/mcphub/bridge"
	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/hub"
	"github.com/mcphub/mcphub/registry"
	"github.com/mcphub/mcphub/store"
)

// newUpstream makes each registry server a supervised bridge.Server.
func newUpstream(log *slog.Logger) hub.NewUpstreamFunc { return newStoredUpstream(log, nil, nil) }

// newStoredUpstream is newUpstream with persistence in db (see
// bridge.Config.Store): an HTTP server's connection state is saved as it
// changes and offered back on the next start (its session and streams
// resume), and every server's catalog is cached.
// onProcess, when set, learns of every stdio server's process group.
// Only the first upstream of a server in this run resumes its stored
// session, and only the newest writes it (see bridge.Claims): a later one
// replaces a connection that still uses that session and ends it when it
// closes.
func newStoredUpstream(log *slog.Logger, db *store.Store, onProcess func(int, bool)) hub.NewUpstreamFunc {
	claims := bridge.NewClaims()
	return func(spec *registry.Server, hc registry.Hub, events hub.UpstreamEvents) hub.Upstream {
		cc := client.Config{
			Command: spec.Command, Args: spec.Args, Env: spec.Env, Dir: spec.Cwd,
			URL: spec.URL, Transport: spec.Transport, Headers: spec.Headers,
			ClientInfo: client.Implementation{Name: "mcphub", Version: mcphubVersion()},
			OnProcess:  onProcess,
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
		if db != nil {
			cfg.Store, cfg.Claims = db, claims
		}
		return upstream{bridge.New(cfg)}
	}
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

func (u upstream) Status() hub.UpstreamStatus {
	s := u.Server.Status()
	return hub.UpstreamStatus{State: s.State, Transport: s.Transport, PID: s.PID, Since: s.Since, LastError: s.LastError, Restarts: s.Restarts}
}
