package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/access"
	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/hub"
	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/logfile"
	"github.com/mcphub/mcphub/oauth"
	"github.com/mcphub/mcphub/registry"
	"github.com/mcphub/mcphub/service"
	"github.com/mcphub/mcphub/store"
	"github.com/mcphub/mcphub/team"
)

type serveFlags struct {
	listen         string
	logFormat      string
	logLevel       string
	disablePostSSE bool
	noStore        bool
	store          string // a PostgreSQL URL
	replica        string // this replica's name in a team hub
	advertise      string // the base URL other replicas reach it at
}

const serveLong = `Start the hub: connect to every enabled server in the registry and serve
them all behind one Streamable HTTP endpoint.

  http://127.0.0.1:7733/mcp            every server, names prefixed (github__create_issue)
  http://127.0.0.1:7733/{server}/mcp   one server, its own names
  http://127.0.0.1:7733/readyz         each server's state (mcphub status shows it)

Servers connect in the background; one that fails never stops the others,
and its state and last error stay visible. SIGINT or SIGTERM stops the hub,
its servers and their processes.

Sessions and events are kept in SQLite in the data directory, or, with
--store (MCPHUB_STORE, [store] url in hub.toml), in a PostgreSQL database a
team's replicas share; mcphub store check reaches it without serving.

Point a client at it:
  Claude Code   claude mcp add --transport http mcphub http://127.0.0.1:7733/mcp
  VS Code       .vscode/mcp.json: {"servers": {"mcphub": {"type": "http", "url": "http://127.0.0.1:7733/mcp"}}}
  Cursor        ~/.cursor/mcp.json: {"mcpServers": {"mcphub": {"url": "http://127.0.0.1:7733/mcp"}}}`

func newServeCmd(a *app) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the hub: one MCP endpoint over every server in the registry",
		Long:  serveLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Started by a service manager (mcphub service install), the hub
			// answers it and stops when it asks; from a shell, on signals.
			if handled, err := service.Run(func(ctx context.Context) error { return runServe(ctx, a, f) }); handled {
				return err
			}
			return runServe(context.Background(), a, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "", "address to listen on, overriding [hub] listen (e.g. 127.0.0.1:0 for any free port)")
	fl.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fl.BoolVar(&f.disablePostSSE, "disable-post-sse", false, "answer every POST with JSON, never an SSE stream ([hub] post_sse = false)")
	fl.BoolVar(&f.noStore, "no-store", false, "keep sessions and events in memory only (they do not survive a restart)")
	fl.StringVar(&f.replica, "replica", "", "with a PostgreSQL store: this replica's name, kept across restarts (env "+team.ReplicaEnv+"; default HOSTNAME:PORT)")
	fl.StringVar(&f.advertise, "advertise", "", "with a PostgreSQL store: the base URL other replicas forward this one's sessions to (env "+team.AdvertiseEnv+"; default the listen address)")
	fl.StringVar(&f.store, "store", "", "keep the store in PostgreSQL at this URL, postgres://user:password@host:port/database, instead of SQLite in the data directory (env "+storeEnv+", or [store] url in hub.toml)")
	return cmd
}

func newLogger(a *app, format, level string) (*slog.Logger, *slog.LevelVar, error) {
	lv, err := parseLogLevel(level)
	if err != nil {
		return nil, nil, err
	}
	v := new(slog.LevelVar)
	v.Set(lv)
	opts := &slog.HandlerOptions{Level: v}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(a.stderr, opts)), v, nil
	case "json":
		return slog.New(slog.NewJSONHandler(a.stderr, opts)), v, nil
	}
	return nil, nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// parseLogLevel reads --log-level, which the console and the log file
// share.
func parseLogLevel(level string) (slog.Level, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	return lv, nil
}

// runServe runs the hub until SIGINT or SIGTERM: each step below is one
// function, in the order a reader needs them.
func runServe(ctx context.Context, a *app, f serveFlags) error {
	log, level, err := newLogger(a, f.logFormat, f.logLevel)
	if err != nil {
		return err
	}
	slog.SetDefault(log)
	reg, token, tlsConfig, err := a.serveSettings(f)
	if err != nil {
		return err
	}
	ln, err := listen(reg)
	if err != nil {
		return err
	}
	defer ln.Close()
	release, err := hubclient.LockDataDir(a.dataDir, hubclient.RunInfo{PID: os.Getpid(), Listen: reg.Hub.Listen, TLSCert: reg.Hub.TLSCert, Config: a.configPath, Version: mcphubVersion(), Started: time.Now()})
	if err != nil {
		return err
	}
	defer release()
	// The log file is the data directory's, so it is opened once the
	// directory is this hub's: a second hub never rotates it too. Under a
	// service manager, which keeps the console in a file or journal of its
	// own, the console then gets warnings and errors only.
	log, closeLog := logfile.Tee(log, level, a.dataDir, service.UnderManager())
	defer closeLog()
	slog.SetDefault(log)
	reapLeftovers(a.dataDir, log)
	storeURL, from, err := a.storeTarget(f.store, reg)
	if err != nil {
		return err
	}
	if storeURL != "" && f.noStore {
		// Sessions in memory only: the shared database is not touched
		// (a hub that keeps nothing is no replica of a team hub).
		log.Warn("--no-store: sessions are kept in memory, not in the PostgreSQL store", "from", from)
		storeURL = ""
	}
	db, err := a.openStore(ctx, storeURL)
	if err != nil {
		return err
	}
	defer db.Close()
	var replica *team.Replica
	var lost <-chan error
	if storeURL != "" {
		// A PostgreSQL store makes this hub a replica of a team hub (of
		// one, until others join): it shares sessions with the others.
		replica, err = team.Join(ctx, db, team.Config{Name: f.replica, Advertise: f.advertise, Registry: reg, Version: mcphubVersion(), Log: log})
		if err != nil {
			return err
		}
		defer replica.Close()
		lost = replica.Lost()
	}
	gate, err := openGate(db, reg, log)
	if err != nil {
		return err
	}
	defer gate.Close()
	grants, err := a.grantsFor(db, log)
	if err != nil {
		return err
	}
	h, err := openHub(reg, token, db, !f.noStore, replica, gate, newChildren(a.dataDir), grants, log)
	if err != nil {
		return err
	}
	if replica != nil {
		replica.Serve(ctx, h)
	}
	srv, serveErr := serveHub(h, ln, tlsConfig, log)
	startPprof(log)
	fmt.Fprintf(a.stdout, "mcphub %s serving %s\n", mcphubVersion(), reg.Hub.URL("/mcp"))
	defer reportServers(a, h)()
	stopWatch := watchRegistry(a.configPath, f, h, replica, gate, log)
	defer stopWatch()
	return waitAndStop(ctx, a, h, srv, serveErr, lost, stopWatch, log)
}

// serveSettings loads the registry with the command line's overrides and
// checks what serving it needs: the token when auth is on, TLS and the token
// when other machines can reach it.
func (a *app) serveSettings(f serveFlags) (*registry.Registry, string, *tls.Config, error) {
	reg, err := a.loadRegistry()
	if err != nil {
		return nil, "", nil, a.printRegistryErrors(err)
	}
	f.override(reg)
	token, err := hubclient.Token(reg)
	if err != nil {
		return nil, "", nil, err
	}
	if msg := reg.Hub.OAuthURLProblem(); msg != "" {
		return nil, "", nil, fmt.Errorf("%s: %s", reg.Path, msg)
	}
	if msg := reg.Hub.ExposureProblem(); msg != "" {
		return nil, "", nil, fmt.Errorf("refusing to listen: %s (other machines could run your servers' tools)", msg)
	}
	if !registry.LoopbackListen(reg.Hub.Listen) {
		fmt.Fprintf(a.stderr, "warning: listening on %s, reachable from other machines; every request needs TLS and the bearer token\n", reg.Hub.Listen)
	}
	tlsConfig, err := loadTLS(reg.Hub)
	return reg, token, tlsConfig, err
}

// listen opens the hub's address. With port 0 the kernel picks one, and the
// registry's listen address is updated to it, since clients need the real
// port; the host stays as written (0.0.0.0 is not reported back as [::]).
func listen(reg *registry.Registry) (net.Listener, error) {
	ln, err := net.Listen("tcp", reg.Hub.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w (is another mcphub running? try: mcphub status)", reg.Hub.Listen, err)
	}
	if host, _, err := net.SplitHostPort(reg.Hub.Listen); err == nil && host != "" {
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		reg.Hub.Listen = net.JoinHostPort(host, port)
	} else {
		reg.Hub.Listen = ln.Addr().String()
	}
	return ln, nil
}

// openHub creates the hub over the registry's servers and starts it; with
// persist, sessions and events are kept in db across restarts, and shared
// with the other replicas of a cluster.
func openHub(reg *registry.Registry, token string, db *store.Store, persist bool, replica *team.Replica, gate *access.Gate, kids children, tokens oauth.TokenStore, log *slog.Logger) (*hub.Hub, error) {
	opts := hub.Options{
		Access: gate,
		// Rate limits draw from buckets in the store: on a team hub,
		// every replica from the same ones.
		Limiter:     db,
		Registry:    reg,
		NewUpstream: newStoredUpstream(log, db, tokens, kids.track),
		Version:     mcphubVersion(),
		Logger:      log,
		Token:       token,
		// Auth turned on or off in hub.toml, or another token, applies
		// to the next request without a restart.
		ResolveToken: func(h registry.Hub) (string, error) { return hubclient.Token(&registry.Registry{Hub: h}) },
	}
	if persist {
		opts.Store = hubStore{db}
		if replica != nil {
			opts.Cluster, opts.Slots = replica.Cluster(), replica.Slots()
			opts.Takeover = newTakeoverUpstream(log, db, tokens)
			opts.NewUpstream = replica.Upstreams(opts.NewUpstream)
		}
	}
	h := hub.New(opts)
	if err := h.Start(context.Background()); err != nil {
		return nil, err
	}
	return h, nil
}

// openGate makes the hub's access gate: API keys from the store, hashed
// under the store's own secret, and the registry's [hub.oauth] and
// [hub.access].
func openGate(db *store.Store, reg *registry.Registry, log *slog.Logger) (*access.Gate, error) {
	pepper, err := db.HubSecret(keyPepperName)
	if err != nil {
		return nil, fmt.Errorf("read the store's key secret: %w", err)
	}
	g := access.New(accessKeys{db}, pepper, reg.Hub.URL(""), log)
	g.Apply(reg)
	return g, nil
}

// serveHub serves the hub on ln (over TLS when tlsConfig is set) in the
// background; serveErr receives why serving stopped.
func serveHub(h *hub.Hub, ln net.Listener, tlsConfig *tls.Config, log *slog.Logger) (*http.Server, <-chan error) {
	srv := hub.NewServer(h, log)
	srv.TLSConfig = tlsConfig
	serveErr := make(chan error, 1)
	go func() {
		if tlsConfig != nil {
			serveErr <- srv.ServeTLS(ln, "", "")
		} else {
			serveErr <- srv.Serve(ln)
		}
	}()
	return srv, serveErr
}

// watchRegistry applies registry changes live; a save that does not load
// leaves the running set as it is, and status shows why. The returned
// function stops watching; it may be called more than once.
func watchRegistry(path string, f serveFlags, h *hub.Hub, replica *team.Replica, gate *access.Gate, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := registry.Watch(ctx, path, func(next *registry.Registry, err error) {
			if err != nil {
				h.SetRegistryError(err) // the registry room has logged it
				return
			}
			f.override(next)
			gate.Apply(next)
			h.Apply(next)
			if replica != nil {
				replica.SetRegistry(next)
			}
		})
		if err != nil && ctx.Err() == nil {
			log.Warn("not watching the registry; changes need a restart", "err", err)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// waitAndStop waits for SIGINT or SIGTERM (or for serving to fail), then
// stops: registry changes stop applying, sessions end first so their
// streams let go of their connections, then the server drains and the
// upstreams stop.
func waitAndStop(ctx context.Context, a *app, h *hub.Hub, srv *http.Server, serveErr, lost <-chan error, stopWatch func(), log *slog.Logger) error {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	select {
	case s := <-sig:
		log.Info("stopping", "signal", s.String())
	case <-ctx.Done():
		log.Info("stopping", "reason", "the service manager asked")
	case err := <-serveErr:
		stopWatch()
		h.Close()
		return fmt.Errorf("serve: %w", err)
	case err := <-lost:
		stopWatch()
		srv.Close()
		h.Close()
		return err
	}
	stopWatch()
	shutdownDone := make(chan struct{})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close() // what is still open past the deadline is cut
		}
		close(shutdownDone)
	}()
	h.Close()
	<-shutdownDone
	fmt.Fprintln(a.stdout, "mcphub stopped")
	return nil
}

// loadTLS reads the hub's certificate and key when [hub] sets them; nil
// means plain HTTP. HTTP/2 is offered over TLS.
func loadTLS(h registry.Hub) (*tls.Config, error) {
	if h.TLSCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(h.TLSCert, h.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("[hub] tls_cert %s and tls_key %s: %w (both must be PEM files: the certificate, then its private key)", h.TLSCert, h.TLSKey, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// override applies the command line's settings over the registry's.
func (f serveFlags) override(reg *registry.Registry) {
	if f.listen != "" {
		reg.Hub.Listen = f.listen
	}
	if f.disablePostSSE {
		reg.Hub.PostSSE = false
	}
}

// reportServers prints one line per server as it settles: connected with its
// tool count, or failed with the reason. It stops once every server settled.
func reportServers(a *app, h *hub.Hub) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		reported := map[string]bool{}
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			st := h.Status()
			sort.Slice(st.Servers, func(i, j int) bool { return st.Servers[i].Name < st.Servers[j].Name })
			pending := 0
			for _, s := range st.Servers {
				if reported[s.Name] {
					continue
				}
				switch s.State {
				case api.StateConnected:
					fmt.Fprintf(a.stdout, "%s: connected, %d tools\n", s.Name, s.Tools)
				case api.StateFailed, api.StateCrashLoop, api.StateRestarting:
					fmt.Fprintf(a.stdout, "%s: failed: %s\n", s.Name, s.LastError)
				case api.StateNeedsLogin:
					fmt.Fprintf(a.stdout, "%s: %s\n", s.Name, s.LastError)
				case api.StateDisabled:
					fmt.Fprintf(a.stdout, "%s: disabled\n", s.Name)
				default:
					pending++
					continue
				}
				reported[s.Name] = true
			}
			if pending == 0 {
				return
			}
			// Status costs more the more servers there are: with
			// thousands starting, look less often (1 s at 10,000).
			tick.Reset(max(100*time.Millisecond, time.Duration(len(st.Servers)/10)*time.Millisecond))
			select {
			case <-tick.C:
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
