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

// newStoredUpstream is newUpstream with persistence: an HTTP server's
// connection state is saved as it changes and offered back on the next start
// (its session and streams resume), and every server's catalog is cached.
// onProcess, when set, learns of every stdio server's process group.
func newStoredUpstream(log *slog.Logger, db *store.Store, onProcess func(int, bool)) hub.NewUpstreamFunc {
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
		if db == nil {
			return upstream{Server: bridge.New(cfg)}
		}
		saver := &serverPersistence{st: db, name: spec.Name, log: log}
		if spec.Kind() == registry.KindRemote {
			cfg.Client.Resume = saver.resume()
			cfg.Client.OnState = saver.saveState
		}
		cfg.Cache = saver.cache()
		var srv *bridge.Server
		cfg.Changed = func() {
			events.Changed()
			if srv != nil {
				saver.saveCatalog(srv.Catalog())
			}
		}
		srv = bridge.New(cfg)
		return upstream{Server: srv, saver: saver}
	}
}

// The concrete types serve plugs into the hub's interfaces.
var (
	_ hub.Upstream = upstream{}
	_ hub.Store    = hubStore{}
)

// upstream adapts a bridge.Server to hub.Upstream.
type upstream struct {
	*bridge.Server
	saver *serverPersistence // nil without a store
}

// Close stops the server, then writes its last connection state, so nothing
// is left to write once the store closes.
func (u upstream) Close() error {
	err := u.Server.Close()
	if u.saver != nil {
		u.saver.close()
	}
	return err
}

func (u upstream) Status() hub.UpstreamStatus {
	s := u.Server.Status()
	return hub.UpstreamStatus{State: s.State, Transport: s.Transport, PID: s.PID, Since: s.Since, LastError: s.LastError, Restarts: s.Restarts}
}
