package bridge

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/internal/goroutines"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// Share modes.
const (
	ShareServer  = "server"
	ShareSession = "session"
)

// States a Server reports.
const (
	StateStarting   = "starting"
	StateConnected  = "connected"
	StateRestarting = "restarting"
	StateCrashLoop  = "crash-loop"
	StateFailed     = "failed"
	// StateNeedsLogin is a remote server that refused mcphub with HTTP 401
	// and a Bearer challenge: it is not retried until someone signs in and
	// the hub makes a new connection (a registry change, mcphub restart).
	StateNeedsLogin = "needs-login"
)

// Health checks of remote servers, when Config leaves them at zero.
const (
	DefaultPingInterval = 1500 * time.Millisecond
	DefaultPingTimeout  = 1500 * time.Millisecond
)

// Config describes one upstream server and how to supervise it.
type Config struct {
	// Name is the server's registry name.
	Name string
	// Client is the connection to make (command or URL, headers, env).
	Client client.Config
	// Share is ShareServer (one connection for every session) or
	// ShareSession (one per session, plus one for the catalog).
	Share string
	// ConnectTimeout bounds connecting and the handshake.
	ConnectTimeout time.Duration
	// RequestTimeout bounds the list calls the bridge makes itself.
	RequestTimeout time.Duration
	// MaxResponseBytes refuses larger results (0: no limit).
	MaxResponseBytes int64
	// Backoff is the reconnect policy; zero values take the defaults.
	Backoff Backoff
	// PingInterval is how long a remote server's shared connection may
	// stay silent (no message from the server, no request it accepted)
	// before the bridge pings it; a transport failure a connection sees (a
	// request that could not be sent, its notification stream dropping)
	// brings a ping forward to at once, on per-session connections too,
	// which are otherwise not pinged. A ping that fails, or gets no answer
	// within PingTimeout while no call is in flight (with calls in flight,
	// only when a TCP connection to the server fails too), ends the
	// connection, which is then reconnected with backoff; a JSON-RPC error
	// answer, and any HTTP status but a sign-in refusal, a lost session
	// and 502, 503 or 504, count as alive. While waiting out the backoff a
	// remote link dials the server every PingInterval and reconnects as
	// soon as it takes connections again. 0 means DefaultPingInterval and
	// DefaultPingTimeout; a negative interval turns all of this off. Stdio
	// servers are never pinged: their exit is seen at once.
	PingInterval time.Duration
	PingTimeout  time.Duration
	// PingBudget, when set, is shared by the Servers of one hub and
	// spreads their idle pings (see PingBudget).
	PingBudget *PingBudget
	// Cache is the catalog of an earlier run, served until the server has
	// connected; nil for none (then it is loaded from Store, if set).
	Cache *Cache
	// Store, when set, carries the server across hub restarts. For a remote
	// server (Client.URL set, no Client.Command) the stored connection state
	// becomes Client.Resume, unless that is already set, so the upstream
	// session and its streams resume (see Adopt); the shared connection's
	// state is then saved as it changes, the latest of each 50 ms, and once
	// more when Close has stopped the connection. For every server the
	// stored catalog becomes Cache, unless that is already set, and the
	// catalog is saved after each change.
	//
	// The records keep the layout earlier runs wrote: the state is
	// client.State as encoding/json writes it; the catalog maps
	// "initialize" to the raw initialize result and each list method to a
	// JSON array of its items.
	Store StateStore
	// Claims, with Store, hands a server's stored connection state to one
	// Server at a time, the one the hub serves on (see Claims); nil lets
	// every Server resume and write it.
	Claims *Claims
	// Connects bounds how many shared connections are being made at once,
	// across every Server given the same limit (see ConnectLimit); the
	// connect timeout starts once a connection has its slot. nil means one
	// limit of DefaultConnectLimit shared by every Server of the process.
	// Per-session connections, made for a call that waits, are not bound.
	Connects *ConnectLimit

	// Changed reports a change of state or of a list.
	Changed func()
	// Notification delivers a notification that belongs to no call.
	Notification func(session string, msg *jsonrpc.Message)
	// Request delivers a server-to-client request that belongs to no call.
	Request func(ctx context.Context, session, method string, params json.RawMessage) (json.RawMessage, error)

	// Logger receives the server's logs; nil means slog.Default().
	Logger *slog.Logger

	// dial makes each connection; nil means client.New. Tests plug in a
	// fake connection here.
	dial dialer
	// clk tells time for backoff, crash-loop detection, health checks and
	// write coalescing; nil means the wall clock.
	clk clock
	// reach dials a remote server to see whether it takes connections;
	// nil means a TCP dial.
	reach reacher
}

// Cache is a server's last known initialize result and lists.
type Cache struct {
	// Init is the raw initialize result.
	Init json.RawMessage
	// Lists holds each list method's items, raw and in the server's order.
	Lists map[string][]json.RawMessage
}

// Status is what a Server reports about itself.
type Status struct {
	// State is one of the State constants.
	State string
	// Transport and PID describe the current connection; empty and 0
	// while there is none, PID also 0 for a remote server.
	Transport string
	PID       int
	// Protocol is the revision the current connection speaks:
	// 2026-07-28 (stateless) or the session's negotiated one.
	Protocol string
	// SessionProtocol is, for a server that speaks both eras, the
	// revision its session-era clients are relayed in (their calls take
	// the session-era connection); "" when the server is spoken to in
	// one era, Protocol.
	SessionProtocol string
	// Since is when the last connection was made.
	Since time.Time
	// LastError is why the last attempt failed or connection was lost.
	LastError string
	// Restarts counts lost connections and failed retries; a first
	// attempt that failed is not a restart.
	Restarts int
}

// Server is one registry server: a supervised upstream connection shared by
// every session (or one per session), with the id, progress-token and
// server-to-client routing that sharing needs.
type Server struct {
	cfg     Config
	log     *slog.Logger
	persist *persistence // nil without Config.Store

	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	shared   *link
	sessions map[string]*link
	// era is the session-era connection of a server whose shared
	// connection speaks 2026-07-28, while one is tried or kept (eras.go);
	// dualVersion is the revision it negotiated, "" until it connects and
	// once the server turns out to keep no sessions.
	era         *link
	dualVersion string
	noSessions  bool // the server refused the session-era connection when last asked
	logLevel    string
	group       goroutines.Group // supervisors and their helpers; Close waits for them
	closed      bool

	// probeAddr is the host:port a remote server's health checks dial.
	probeAddr string

	// tag makes this Server's progress tokens differ from any other's:
	// an earlier run's, which a resumed upstream stream may still carry,
	// or another Server's of the same name.
	tag string
}

// New prepares a server; Start connects it. With Config.Store set it loads
// the stored state and catalog here, so list calls are answered and calls
// of an earlier run can be adopted before the server connects.
func New(cfg Config) *Server {
	cfg.Backoff = cfg.Backoff.withDefaults()
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 60 * time.Second
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.PingInterval == 0 {
		cfg.PingInterval = DefaultPingInterval
	}
	if cfg.PingTimeout <= 0 {
		cfg.PingTimeout = DefaultPingTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Changed == nil {
		cfg.Changed = func() {}
	}
	if cfg.dial == nil {
		cfg.dial = dialClient
	}
	if cfg.clk == nil {
		cfg.clk = realClock{}
	}
	if cfg.reach == nil {
		cfg.reach = dialTCP
	}
	if cfg.Connects == nil {
		cfg.Connects = processConnects
	}
	cfg.Client.Name = cfg.Name
	cfg.Client.Logger = cfg.Logger
	s := &Server{cfg: cfg, log: cfg.Logger.With("server", cfg.Name), sessions: map[string]*link{}, tag: rand.Text()[:8]}
	if s.remote() {
		s.probeAddr = probeAddr(cfg.Client)
	}
	if cfg.Store != nil {
		s.usePersistence()
	}
	// The shared link exists from the start, so calls of an earlier run can
	// be adopted before it connects.
	s.shared = newLink(s, "", false)
	return s
}

// usePersistence loads what Config.Store holds and arranges for the
// catalog to be saved after each change.
func (s *Server) usePersistence() {
	p := newPersistence(s.cfg.Store, s.cfg.Name, s.log, s.cfg.clk)
	s.persist = p
	fresh := false
	if c := s.cfg.Claims; c != nil {
		fresh = c.claim(s.cfg.Name, s)
		p.owns = func() bool { return c.owns(s.cfg.Name, s) }
	}
	if s.remote() && s.cfg.Client.Resume == nil && !fresh {
		s.cfg.Client.Resume = p.resume()
	}
	if s.cfg.Cache == nil {
		s.cfg.Cache = p.cache()
	}
	changed := s.cfg.Changed
	s.cfg.Changed = func() {
		changed()
		p.saveCatalog(s.Catalog)
	}
}

// remote reports whether the server is reached over HTTP, the only kind
// whose session can be resumed; the client prefers Command when both are
// set.
func (s *Server) remote() bool { return s.cfg.Client.Command == "" && s.cfg.Client.URL != "" }

// Name is the server's registry name.
func (s *Server) Name() string { return s.cfg.Name }

// Start begins connecting in the background.
func (s *Server) Start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.superviseLocked(s.shared)
}

func (s *Server) newLinkLocked(session string) *link {
	l := newLink(s, session, false)
	s.superviseLocked(l)
	return l
}

func (s *Server) superviseLocked(l *link) {
	s.group.Go(func() { l.supervise(s.ctx) })
}

// regain writes this Server's newest state and catalog: it has just taken
// the stored records over from a Server that is closing.
func (s *Server) regain() {
	if s.persist == nil {
		return
	}
	s.persist.regain()
	s.persist.saveCatalog(s.Catalog)
}

// Close stops every connection and waits for them. With Config.Store set
// it then writes the last connection state, so nothing is left to write
// once the store closes; with Config.Claims it writes nothing more (the
// session it ends is not worth resuming) and hands the records to the
// Server the hub serves on now. It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if s.persist != nil && !closed {
		// A change just before Close may still be on its way to
		// saveCatalog, which writes nothing once this Server is closing:
		// the catalog is written now, while the records are ours.
		s.persist.saveCatalog(s.Catalog)
	}
	if c := s.cfg.Claims; c != nil {
		// The Server the hub serves on now, if the records were ours,
		// writes its newest state, not the session this one ends.
		if next := c.closeStarts(s.cfg.Name, s); next != nil {
			next.regain()
		}
	}
	s.mu.Lock()
	s.closed = true
	cancel := s.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	s.group.Stop()
	if s.persist != nil {
		s.persist.close()
	}
	if c := s.cfg.Claims; c != nil {
		c.release(s.cfg.Name, s)
	}
	return nil
}

// linkFor returns the connection a session's calls use: with sessionEra,
// of a server that speaks both eras, the session-era one (see eras.go).
//
// The session-era connection is taken only while it is up: a call that
// asks for it otherwise (the hub asks for every session-era call it does
// not translate) takes the shared connection, which then speaks the
// session era itself or is translated for the call (the client's
// capabilities ride in _meta and input_required is fulfilled).
func (s *Server) linkFor(session string, sessionEra bool) (*link, error) {
	if sessionEra && s.cfg.Share != ShareSession {
		if era, _ := s.eraUp(); era != nil {
			return era, nil
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.ctx == nil {
		return nil, &unavailableError{fmt.Sprintf("server %s is stopped", s.cfg.Name)}
	}
	if s.cfg.Share != ShareSession || session == "" {
		return s.shared, nil
	}
	l := s.sessions[session]
	if l == nil {
		l = s.newLinkLocked(session)
		s.sessions[session] = l
	}
	return l, nil
}

// Call forwards a request made by session; see hub.Upstream.
func (s *Server) Call(ctx context.Context, session string, sessionEra bool, method string, params json.RawMessage, peer jsonrpc.Peer) (json.RawMessage, error) {
	l, err := s.linkFor(session, sessionEra)
	if err != nil {
		return nil, err
	}
	return l.call(ctx, session, method, params, peer)
}

// Notify forwards a client notification from session, which speaks the
// session era (the stateless era has no client notifications).
func (s *Server) Notify(ctx context.Context, session, method string, params json.RawMessage) error {
	l, err := s.linkFor(session, true)
	if err != nil {
		return err
	}
	conn := l.current()
	if conn == nil {
		return l.unavailable()
	}
	return conn.Notify(ctx, method, params)
}

// SetLogLevel sets the level every connection asks its server for.
func (s *Server) SetLogLevel(level string) {
	s.mu.Lock()
	s.logLevel = level
	links := s.linksLocked()
	s.mu.Unlock()
	for _, l := range links {
		l.applyLogLevel(level)
	}
}

func (s *Server) level() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logLevel
}

func (s *Server) linksLocked() []*link {
	out := []*link{}
	if s.shared != nil {
		out = append(out, s.shared)
	}
	if s.era != nil {
		out = append(out, s.era)
	}
	for _, l := range s.sessions {
		out = append(out, l)
	}
	return out
}

// SessionClosed closes the session's own connection, if it has one.
func (s *Server) SessionClosed(session string) {
	s.mu.Lock()
	l := s.sessions[session]
	delete(s.sessions, session)
	s.mu.Unlock()
	if l != nil {
		l.stop()
	}
}

// Initialize returns the shared connection's initialize result.
func (s *Server) Initialize() json.RawMessage {
	if l := s.sharedLink(); l != nil {
		return l.initResult()
	}
	return nil
}

// List returns the items the server offers for a list method.
func (s *Server) List(method string) []json.RawMessage {
	if l := s.sharedLink(); l != nil {
		return l.list(method)
	}
	return nil
}

// Catalog returns what the server offers now, for the cache.
func (s *Server) Catalog() Cache {
	if l := s.sharedLink(); l != nil {
		return l.catalog()
	}
	return Cache{}
}

// Status reports the shared connection's state.
func (s *Server) Status() Status {
	if l := s.sharedLink(); l != nil {
		st := l.status()
		if st.Protocol == jsonrpc.Version20260728 {
			st.SessionProtocol = s.dual()
		}
		return st
	}
	return Status{State: StateStarting}
}

func (s *Server) sharedLink() *link {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shared
}
