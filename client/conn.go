package client

// The connection itself: Config (what to reach and how), the types a caller
// sees (State, Handler, InitializeResult), the transport interface the
// stdio, Streamable HTTP and legacy SSE transports implement, and Conn's
// life: New, Start choosing the transport, its accessors and Close.
// handshake.go opens the MCP session once a transport is connected.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcphub/mcphub/internal/goroutines"
	"github.com/mcphub/mcphub/internal/httphdr"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/redact"
	"github.com/mcphub/mcphub/oauth"
)

// Transport names, as the registry spells them.
const (
	TransportStdio          = "stdio"
	TransportAuto           = "auto"
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
)

// Config says which upstream to reach and how. Exactly one of Command and URL
// is set.
type Config struct {
	// Name is the server's name in the registry, used in logs and errors.
	Name string

	// Command, Args, Env and Dir start a stdio server. The child gets, from
	// mcphub's environment, a safe set of variables every program needs to
	// run and to reach the network (PATH, HOME, the locale, temporary
	// directories, proxies, extra CA certificates; see env.go for the list
	// per OS), and what EnvPassthrough or InheritEnv add, less EnvDeny;
	// then Env, which always wins over an inherited variable of the same
	// name. Nothing else of mcphub's environment (tokens for other
	// servers, say) reaches the child.
	//
	// Every Env and Headers value, and the password and query values of
	// URL, is taken for a secret: it is masked in whatever upstream text
	// the connection passes on (errors, logs), see internal/redact. So is
	// every value a stdio server inherits beyond the safe set.
	Command string
	Args    []string
	Env     map[string]string
	Dir     string
	// EnvPassthrough adds names (path.Match globs, e.g. "AWS_*") of
	// mcphub's environment a stdio server gets besides the safe set.
	EnvPassthrough []string
	// InheritEnv passes mcphub's whole environment except EnvDeny.
	InheritEnv bool
	// EnvDeny lists names (globs) never passed from mcphub's environment,
	// even with InheritEnv (the hub's token variable and the variables the
	// registry gives other servers). It holds back a name in whatever case
	// it is spelled, and never holds back Env, which is always passed.
	EnvDeny []string

	// URL, Transport and Headers reach a remote server. Transport is one of
	// TransportAuto (the default), TransportStreamableHTTP or TransportSSE.
	URL       string
	Transport string
	Headers   map[string]string
	// HTTPClient is used for every request; nil means a client of the
	// connection's own (see newTransport), without an overall timeout
	// (streams are long-lived; idle timeouts guard them).
	HTTPClient *http.Client
	// OAuth, when set, has a remote server's requests carry an OAuth
	// access token: the stored grant's, refreshed in the background for
	// the connection's life, or one a sign-in obtains (see oauth.Config).
	OAuth *oauth.Config

	// ClientInfo is sent in initialize; zero means mcphub's own.
	ClientInfo Implementation
	// Capabilities are the client capabilities declared upstream (raw
	// JSON object); nil declares sampling, elicitation and roots.
	Capabilities json.RawMessage
	// ProtocolVersion is the version offered in initialize; "" means the
	// latest session-era version.
	ProtocolVersion string
	// SessionEra opens a session with initialize and never probes
	// server/discover: the connection a dual-era server's session-era
	// clients are relayed over. Over Streamable HTTP the server must give
	// the session an id; one that answers initialize without one, or
	// refuses it, lacks the session era and Start fails with an error
	// that wraps ErrNoSessionEra.
	SessionEra bool

	// MaxMessageBytes bounds one stdio line, one message of a JSON
	// response body or one SSE event; 0 means 16 MiB. A response over it fails its call at once
	// with ErrMessageTooLarge ("response over N bytes"); one whose call
	// cannot be told fails every call in flight.
	MaxMessageBytes int
	// StreamIdleTimeout ends a silent SSE stream so it is reconnected; any
	// byte, comments included, resets it. 0 means 5 minutes.
	StreamIdleTimeout time.Duration
	// StreamMaxRetries is how many reconnects without progress a stream gets
	// before it fails. 0 means 8.
	StreamMaxRetries int

	// Resume, when set, continues an earlier upstream HTTP session instead of
	// starting a new one (see State).
	Resume *State
	// KeepSession leaves the upstream HTTP session alive when the connection
	// closes (no DELETE): a connection that only finished another's calls
	// on a session it does not own.
	KeepSession bool
	// MintAbove makes the ids the connection mints start above it. A relay
	// that passes its own client's ids through CallWithID (mcphub stdio)
	// sets it high, so that an id it mints never meets a relayed one; an
	// upstream connection leaves it 0 and its ids start at 1, which every
	// server can hold (some keep ids in 32 bits).
	MintAbove int64
	// OnState is called whenever State changes (a new session id or a new
	// last event id), so it can be persisted. It must not block.
	OnState func(State)
	// OnActivity is called whenever a remote server shows that it is
	// alive: a message arrived from it, or it accepted a request (HTTP
	// 2xx). OnTransportError is called when something suggests it may be
	// gone: a request that could not be sent (a network error), the
	// standalone stream dropping, a refusal for want of sign-in. The
	// connection goes on either way (streams reconnect, calls fail on
	// their own); these let a health check ping only a silent server, and
	// at once on trouble. Neither may block. Stdio servers call neither:
	// their exit is seen at once.
	OnActivity       func()
	OnTransportError func(err error)
	// OnProcess is told when a stdio server's process group starts
	// (started true, pid = the group id) and when it has been stopped
	// whole, so a hub that dies can clear leftovers on its next start.
	OnProcess func(pid int, started bool)

	// Logger receives the connection's logs; nil means slog.Default().
	Logger *slog.Logger
}

// Implementation names an MCP client or server.
type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// State is what it takes to resume an upstream HTTP session after mcphub
// restarts: the session id and, per stream, the last event id seen.
type State struct {
	Transport       string            `json:"transport"`
	SessionID       string            `json:"sessionId,omitempty"`
	ProtocolVersion string            `json:"protocolVersion,omitempty"`
	LastEventIDs    map[string]string `json:"lastEventIds,omitempty"`
	// Initialize is the server's raw initialize result, kept so a resumed
	// session knows the server's capabilities without a new handshake.
	Initialize json.RawMessage `json:"initialize,omitempty"`
}

// Handler receives what the server sends on its own initiative. related is
// the id of the upstream request the message belongs to, when the transport
// tells (it arrived on the SSE stream a POST opened); nil otherwise.
//
// Both methods are called from the connection's reader, in arrival order;
// HandleNotification must not block. HandleRequest runs on its own goroutine
// and its answer is sent back upstream.
type Handler interface {
	HandleNotification(msg *jsonrpc.Message, related json.RawMessage)
	HandleRequest(ctx context.Context, msg *jsonrpc.Message, related json.RawMessage) (json.RawMessage, error)
}

// InitializeResult is the server's answer to initialize, decoded where mcphub
// needs it and raw elsewhere.
type InitializeResult struct {
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ServerInfo      Implementation  `json:"serverInfo"`
	Instructions    string          `json:"instructions,omitempty"`
	// SupportedVersions, for a connection of the stateless era, are the
	// revisions server/discover named: a server that names a session-era
	// one besides 2026-07-28 may keep sessions too.
	SupportedVersions []string `json:"-"`
	// Raw is the whole result as received.
	Raw json.RawMessage `json:"-"`
}

// transport moves JSON-RPC messages to and from one upstream. Incoming
// messages go to the connection's deliver.
type transport interface {
	// start connects without any MCP handshake.
	start(ctx context.Context) error
	// send delivers one encoded message upstream. For a request over HTTP it
	// also arranges for the reply stream to be read.
	send(ctx context.Context, m *jsonrpc.Message, data []byte) error
	// close releases everything; it is idempotent and waits.
	close() error
	// done is closed when the transport can carry nothing more.
	done() <-chan struct{}
	// err explains why done was closed.
	err() error
}

// Conn is one MCP client connection to one upstream server.
type Conn struct {
	cfg      Config
	handler  Handler
	log      *slog.Logger
	redactor *redact.Redactor // masks the config's secrets in upstream text

	t      transport
	hc     *http.Client    // every HTTP request goes through it
	tr     *http.Transport // hc's own transport; nil for stdio or a configured client
	nextID atomic.Int64

	mu      sync.Mutex
	pending map[string]chan result
	resumed map[string]chan result // requests of a resumed session, for Await
	init    *InitializeResult

	ctx       context.Context // cancelled by Close; parent of handler calls
	cancel    context.CancelFunc
	closeOnce sync.Once
	closeErr  error

	// modern is the stateless era's state (see modern.go).
	modern modernState

	// auth is the OAuth state of a remote server with Config.OAuth; nil
	// otherwise, or when authErr says why it could not be set up.
	auth    *oauth.Authorizer
	authErr error

	// handlers are the goroutines Close waits for: answers to server
	// requests, cancellation senders and the OAuth token refresher.
	handlers goroutines.Group
}

// New prepares a connection; Start connects it.
func New(cfg Config, h Handler) *Conn {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("server", cfg.Name)
	ctx, cancel := context.WithCancel(context.Background())
	c := &Conn{
		cfg:      cfg,
		handler:  h,
		log:      log,
		redactor: redact.New(cfg.secretValues()),
		pending:  make(map[string]chan result),
		ctx:      ctx,
		cancel:   cancel,
		hc:       cfg.HTTPClient,
	}
	c.nextID.Store(cfg.MintAbove)
	if c.hc == nil && cfg.URL != "" {
		c.tr = newTransport()
		c.hc = &http.Client{Transport: c.tr}
	}
	if cfg.URL != "" && cfg.OAuth != nil {
		c.hc = c.withOAuth(c.hc)
	}
	return c
}

// Name is the upstream's name from the registry.
func (c *Conn) Name() string { return c.cfg.Name }

// Start connects to the upstream and performs the MCP handshake (initialize,
// then notifications/initialized). For Transport "auto" it first tries
// Streamable HTTP and falls back to the legacy HTTP+SSE transport when the
// server answers the initialize POST with 400, 404 or 405. ctx bounds the
// connect and the handshake, not the connection's life.
func (c *Conn) Start(ctx context.Context) error {
	if c.ctx.Err() != nil {
		return ErrClosed
	}
	var err error
	switch {
	case c.cfg.Command != "":
		err = c.startWith(ctx, newStdio(c))
	case c.cfg.URL == "":
		return errors.New("neither a command nor a URL is configured")
	default:
		// The registry and the command line refuse these already; a
		// Config built elsewhere is held to the same rule.
		for k, v := range c.cfg.Headers {
			if err := httphdr.Check(k, v); err != nil {
				return fmt.Errorf("server %s: header %w", c.cfg.Name, err)
			}
		}
		if c.authErr != nil {
			return c.authErr
		}
		if c.auth != nil {
			if err := c.auth.Start(); err != nil {
				return fmt.Errorf("loading the OAuth grant of server %s: %w", c.cfg.Name, err)
			}
		}
		mode := c.cfg.Transport
		if c.cfg.Resume != nil && c.cfg.Resume.Transport != "" {
			mode = c.cfg.Resume.Transport
		}
		switch mode {
		case TransportSSE:
			err = c.startWith(ctx, newLegacy(c))
		case TransportStreamableHTTP:
			err = c.startWith(ctx, newStreamable(c))
		case TransportAuto, "":
			err = c.startWith(ctx, newStreamable(c))
			var he *HTTPError
			// A server that refused a session-era connection answered
			// over Streamable HTTP: it is no legacy server.
			if errors.As(err, &he) && !errors.Is(err, ErrNoSessionEra) &&
				(he.Status == http.StatusBadRequest || he.Status == http.StatusNotFound || he.Status == http.StatusMethodNotAllowed) {
				c.log.Info("Streamable HTTP refused; trying the legacy HTTP+SSE transport", "status", he.Status)
				err = c.startWith(ctx, newLegacy(c))
			}
		default:
			return fmt.Errorf("unknown transport %q (want auto, streamable-http or sse)", mode)
		}
	}
	return err
}

// startWith runs the handshake over t, or resumes a stored session.
func (c *Conn) startWith(ctx context.Context, t transport) error {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
	began := time.Now() // the budget for an answer includes starting a process
	if err := t.start(ctx); err != nil {
		t.close()
		return err
	}
	if r, ok := t.(resumer); ok && c.cfg.Resume != nil && c.cfg.Resume.SessionID != "" && len(c.cfg.Resume.Initialize) > 0 {
		if res, err := parseInitialize(c.cfg.Resume.Initialize); err == nil {
			c.expectResumed(c.cfg.Resume.LastEventIDs)
			if r.resume(ctx, *c.cfg.Resume) == nil {
				c.setInit(res)
				c.modern.setLegacy() // a stored session: the era is known
				return nil
			}
			c.failResumed(ErrSessionExpired)
		}
		c.log.Info("stored upstream session could not be resumed; starting a new one")
	}
	if err := c.handshakeSince(ctx, began); err != nil {
		t.close()
		return err
	}
	return nil
}

// Transport reports the transport in use: stdio, streamable-http or sse
// (for "auto", what the probe found). "" before Start.
func (c *Conn) Transport() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.t.(type) {
	case *stdioTransport:
		return TransportStdio
	case *streamable:
		return TransportStreamableHTTP
	case *legacy:
		return TransportSSE
	}
	return ""
}

func (c *Conn) transport() transport {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Done is closed when the connection can carry nothing more: the process
// exited, the session could not be kept, or Close was called.
func (c *Conn) Done() <-chan struct{} {
	if t := c.transport(); t != nil {
		return t.done()
	}
	return c.ctx.Done()
}

// Err explains why Done was closed.
func (c *Conn) Err() error {
	if t := c.transport(); t != nil {
		select {
		case <-t.done():
			return t.err()
		default:
			return nil
		}
	}
	if c.ctx.Err() != nil {
		return ErrClosed
	}
	return nil
}

// PID is the stdio server's process id, 0 for remote servers.
func (c *Conn) PID() int {
	if s, ok := c.transport().(*stdioTransport); ok {
		return s.pid()
	}
	return 0
}

// State returns what it takes to resume the upstream session (HTTP only).
func (c *Conn) State() State {
	st := State{Transport: c.Transport()}
	if init := c.Initialize(); init != nil {
		st.ProtocolVersion = init.ProtocolVersion
		st.Initialize = init.Raw
	}
	if s, ok := c.transport().(interface{ fillState(*State) }); ok {
		s.fillState(&st)
	}
	return st
}

// stateChanged reports the new State to Config.OnState.
func (c *Conn) stateChanged() {
	if c.cfg.OnState != nil {
		c.cfg.OnState(c.State())
	}
}

// active reports to Config.OnActivity that the server showed it is alive.
func (c *Conn) active() {
	if c.cfg.OnActivity != nil {
		c.cfg.OnActivity()
	}
}

// troubled reports to Config.OnTransportError a failure that may mean the
// server is gone; once Close has begun nothing is reported.
func (c *Conn) troubled(err error) {
	if c.cfg.OnTransportError != nil && c.ctx.Err() == nil {
		c.cfg.OnTransportError(err)
	}
}

// Close ends the connection: pending calls fail with ErrClosed, a stdio
// server is shut down as the spec says (stdin closed, then SIGTERM, then
// SIGKILL to its process group) and an HTTP session is deleted. It waits for
// everything it started and is safe to call more than once.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.cancel()
		// Pending calls fail now; the shutdown below may take seconds.
		c.failAll(ErrClosed)
		if t := c.transport(); t != nil {
			c.closeErr = t.close()
		}
		if c.tr != nil {
			c.tr.CloseIdleConnections()
		}
		c.handlers.Stop()
		if c.auth != nil {
			c.auth.Close()
		}
	})
	return c.closeErr
}
