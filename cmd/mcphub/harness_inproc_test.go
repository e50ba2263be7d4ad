package main

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/hub"
	"github.com/mcphub/mcphub/registry"
	"github.com/mcphub/mcphub/store"
)

// ---------------------------------------------------------------------------
// A hub in this process.

// storeMode is what an in-process hub persists.
type storeMode int

const (
	// noStore persists nothing.
	noStore storeMode = iota
	// upstreamStore persists the upstreams' connection state and catalogs
	// but keeps sessions in memory, as `mcphub serve --no-store`.
	upstreamStore
	// fullStore persists sessions, streams and events too, as `mcphub serve`.
	fullStore
)

// hubConfig is how an in-process hub differs from the default one.
type hubConfig struct {
	hubKeys  string                          // more [hub] keys
	store    storeMode                       // what it persists
	dir      string                          // its data directory, to start again on the same store; "" is a new one
	tweak    func(*hub.Options)              // changes the options last
	wrap     func(http.Handler) http.Handler // wraps the hub's handler
	server   bool                            // serve through hub.NewServer's http.Server, as serve does
	warnOnly bool                            // log warnings only, keeping the last lines
	connect  time.Duration                   // how long every server may take to connect; 0 is 15 s
	noWait   bool                            // return without waiting for the servers
}

// inprocHub is a hub served by httptest in this test process.
type inprocHub struct {
	t     testing.TB
	h     *hub.Hub
	url   string // the server's base URL
	close func() // stops the hub and what it started; idempotent

	mu   sync.Mutex
	pids map[int]bool // every upstream process seen; none may survive close
}

// startInproc parses the registry, starts a hub over it wired as serve.go
// wires one, serves it, and (unless cfg.noWait) waits until every server is
// connected. It is the one place that calls the production wiring, so that
// a change to it is made here once. Cleanup closes the hub, its server and
// its store, and fails the test if an upstream process outlives the hub.
func startInproc(t testing.TB, servers string, cfg hubConfig) *inprocHub {
	t.Helper()
	text := "[hub]\nlisten = \"127.0.0.1:0\"\n" + cfg.hubKeys + "\n\n" + servers
	reg, err := registry.Parse("", []byte(text), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("registry: %v\n%s", err, text)
	}
	logs, level := &logBuffer{}, slog.LevelDebug
	if cfg.warnOnly {
		logs.keep, level = 20, slog.LevelWarn
	}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level}))
	var db *store.Store
	if cfg.store != noStore {
		if db, err = store.Open(cmp.Or(cfg.dir, t.TempDir())); err != nil {
			t.Fatal(err)
		}
	}
	opts := hub.Options{Registry: reg, NewUpstream: newStoredUpstream(logger, db, nil, nil), Version: "test", Logger: logger,
		Heartbeat: 5 * time.Second, ListChangedDelay: 200 * time.Millisecond}
	if cfg.store == fullStore {
		opts.Store = hubStore{db}
	}
	if cfg.tweak != nil {
		cfg.tweak(&opts)
	}
	h := hub.New(opts)
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var handler http.Handler = h
	if cfg.wrap != nil {
		handler = cfg.wrap(h)
	}
	srv := httptest.NewUnstartedServer(handler)
	if cfg.server {
		srv.Config = hub.NewServer(h, logger)
	}
	srv.Start()
	f := &inprocHub{t: t, h: h, url: srv.URL, pids: map[int]bool{}}
	f.close = sync.OnceFunc(func() {
		for _, s := range h.Status().Servers {
			f.addPID(s.PID)
		}
		h.Close()
		srv.CloseClientConnections()
		srv.Close()
		if db != nil {
			db.Close()
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		for pid := range f.pids {
			if !pidGone(pid) {
				t.Errorf("upstream process %d survived hub Close", pid)
			}
		}
	})
	t.Cleanup(func() {
		f.close()
		if t.Failed() || os.Getenv("E2E_LOG") != "" || (cfg.warnOnly && logs.writes() > 0) {
			t.Logf("hub log:\n%s", logs.String())
		}
	})
	if !cfg.noWait {
		f.waitConnected(cmp.Or(cfg.connect, 15*time.Second), nil)
	}
	return f
}

func (f *inprocHub) addPID(pid int) {
	if pid > 0 {
		f.mu.Lock()
		f.pids[pid] = true
		f.mu.Unlock()
	}
}

// waitConnected waits until every server is connected and, for each server
// in avoid, with a PID other than the one given.
func (f *inprocHub) waitConnected(within time.Duration, avoid map[string]int) *api.Status {
	f.t.Helper()
	var st api.Status
	if !poll(within, func() bool {
		st = f.h.Status()
		for _, s := range st.Servers {
			f.addPID(s.PID)
			if s.State != api.StateConnected {
				return false
			}
			if old, has := avoid[s.Name]; has && (s.PID == old || s.PID == 0) {
				return false
			}
		}
		return true
	}) {
		f.t.Fatalf("servers did not connect within %s: %+v", within, st.Servers)
	}
	return &st
}

// readyz fetches /readyz over HTTP.
func (f *inprocHub) readyz() *api.Status {
	f.t.Helper()
	st, err := readyzOf(f.url, "")
	if err != nil {
		f.t.Fatal(err)
	}
	for _, s := range st.Servers {
		f.addPID(s.PID)
	}
	return st
}

// server is one server's entry of /readyz; the test fails if it is not
// listed.
func (f *inprocHub) server(name string) api.ServerStatus {
	f.t.Helper()
	st := f.readyz()
	s := findServer(st, name)
	if s == nil {
		f.t.Fatalf("/readyz does not list %s: %s", name, describe(st))
	}
	return *s
}

// connect opens a Go SDK client session on an endpoint path of the hub.
func (f *inprocHub) connect(path string, opts *mcp.ClientOptions) *sdkSession {
	f.t.Helper()
	return connectSDK(f.t, f.url+path, sdkOpts{client: opts})
}
