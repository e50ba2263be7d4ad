package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mcphub/mcphub/client"
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
	// Cache is the catalog of an earlier run, served until the server has
	// connected; nil for none.
	Cache *Cache

	// Changed reports a change of state or of a list.
	Changed func()
	// Notification delivers a notification that belongs to no call.
	Notification func(session string, msg *jsonrpc.Message)
	// Request delivers a server-to-client request that belongs to no call.
	Request func(ctx context.Context, session, method string, params json.RawMessage) (json.RawMessage, error)

	Logger *slog.Logger
}

// Backoff is the reconnect policy: delays start at Initial and double up to
// Max, with jitter; CrashLoopAfter failures within Window mark the server
// crash-looping, after which it is retried every SlowRetry; a connection
// that stays up for Stable resets the count.
type Backoff struct {
	Initial, Max   time.Duration
	CrashLoopAfter int
	Window         time.Duration
	SlowRetry      time.Duration
	Stable         time.Duration
}

func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = 500 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 30 * time.Second
	}
	if b.CrashLoopAfter <= 0 {
		b.CrashLoopAfter = 4
	}
	if b.Window <= 0 {
		b.Window = 2 * time.Minute
	}
	if b.SlowRetry <= 0 {
		b.SlowRetry = time.Minute
	}
	if b.Stable <= 0 {
		b.Stable = time.Minute
	}
	return b
}

// Cache is a server's last known initialize result and lists.
type Cache struct {
	Init  json.RawMessage
	Lists map[string][]json.RawMessage
}

// Catalog returns what the server offers now, for the cache.
func (s *Server) Catalog() Cache {
	l := s.sharedLink()
	if l == nil {
		return Cache{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c := Cache{Init: l.init, Lists: make(map[string][]json.RawMessage, len(l.lists))}
	for m, items := range l.lists {
		c.Lists[m] = items
	}
	return c
}

// Status is what a Server reports about itself.
type Status struct {
	State     string
	Transport string
	PID       int
	Since     time.Time
	LastError string
	Restarts  int
}

// Server is one registry server: a supervised upstream connection shared by
// every session (or one per session), with the id, progress-token and
// server-to-client routing that sharing needs.
type Server struct {
	cfg Config
	log *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	shared   *link
	sessions map[string]*link
	logLevel string
	wg       sync.WaitGroup
	closed   bool
}

// New prepares a server; Start connects it.
func New(cfg Config) *Server {
	cfg.Backoff = cfg.Backoff.withDefaults()
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 60 * time.Second
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Changed == nil {
		cfg.Changed = func() {}
	}
	cfg.Client.Name = cfg.Name
	cfg.Client.Logger = cfg.Logger
	s := &Server{cfg: cfg, log: cfg.Logger.With("server", cfg.Name), sessions: map[string]*link{}}
	// The shared link exists from the start, so calls of an earlier run can
	// be adopted before it connects.
	s.shared = newLink(s, "")
	return s
}

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
	l := newLink(s, session)
	s.superviseLocked(l)
	return l
}

func (s *Server) superviseLocked(l *link) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		l.supervise(s.ctx)
	}()
}

// Close stops every connection and waits for them.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	cancel := s.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	s.wg.Wait()
	return nil
}

// linkFor returns the connection a session's calls use.
func (s *Server) linkFor(session string) (*link, error) {
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
func (s *Server) Call(ctx context.Context, session, method string, params json.RawMessage, peer jsonrpc.Peer) (json.RawMessage, error) {
	l, err := s.linkFor(session)
	if err != nil {
		return nil, err
	}
	return l.call(ctx, session, method, params, peer)
}

// Notify forwards a client notification from session.
func (s *Server) Notify(ctx context.Context, session, method string, params json.RawMessage) error {
	l, err := s.linkFor(session)
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
	for _, l := range s.sessions {
		out = append(out, l)
	}
	return out
}

// Adopt takes over a request an earlier run of the hub sent on the stored
// upstream session (Config.Client.Resume): when the connection resumes that
// session, the request's stream is reopened and its messages go to peer and
// its result to done. It reports false when the stored state has no open
// stream for the request, so nothing could finish it.
func (s *Server) Adopt(upstreamID json.RawMessage, hubToken string, progressToken json.RawMessage, peer jsonrpc.Peer, done func(json.RawMessage, error)) bool {
	r := s.cfg.Client.Resume
	if r == nil || r.SessionID == "" {
		return false
	}
	if _, ok := r.LastEventIDs[string(upstreamID)]; !ok {
		return false
	}
	l := s.sharedLink()
	if l == nil {
		return false
	}
	l.mu.Lock()
	l.adoptions = append(l.adoptions, adoption{c: &inflight{peer: peer, upID: upstreamID, origToken: progressToken}, hubToken: hubToken, done: done})
	l.mu.Unlock()
	return true
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

// Status reports the shared connection's state.
func (s *Server) Status() Status {
	if l := s.sharedLink(); l != nil {
		return l.status()
	}
	return Status{State: StateStarting}
}

func (s *Server) sharedLink() *link {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shared
}

// unavailableError reports a server that cannot take a call now. The hub
// recognises it by its Unavailable method.
type unavailableError struct{ msg string }

func (e *unavailableError) Error() string     { return e.msg }
func (e *unavailableError) Unavailable() bool { return true }

// tooLargeError reports a result over MaxResponseBytes.
type tooLargeError struct{ msg string }

func (e *tooLargeError) Error() string  { return e.msg }
func (e *tooLargeError) TooLarge() bool { return true }

// callError wraps a connection failure during a call so the hub sees an
// unavailable upstream; the call is never replayed.
func callError(name string, err error) error {
	var rpcErr *jsonrpc.Error
	switch {
	case errors.As(err, &rpcErr), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, client.ErrClosed), errors.Is(err, client.ErrSessionExpired), errors.Is(err, client.ErrStreamFailed):
		return &unavailableError{fmt.Sprintf("server %s failed while handling the request (it is not retried): %v", name, err)}
	}
	return err
}
