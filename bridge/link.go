package bridge

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

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// link is one supervised connection: it connects, fetches the server's
// lists, and reconnects with backoff when the connection is lost. Calls in
// flight when it is lost fail; they are never replayed.
type link struct {
	srv     *Server
	session string // "" for the shared connection
	// era marks the session-era connection of a server that speaks both
	// eras (see eras.go): shared by the session-era sessions, while the
	// link with session "" and era false speaks 2026-07-28.
	era bool
	// askedSession and autoEra are a session's own connection's era
	// (share = "session"), read and written by its supervisor only:
	// askedSession says the attempt being made asks for a session;
	// autoEra makes the next attempt find the era instead, after the
	// server refused a session.
	askedSession, autoEra bool

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	// settled is closed once the link has left StateStarting: it has
	// connected or failed at least once.
	settled chan struct{}

	tokenSeq atomic.Int64

	mu       sync.Mutex
	conn     upstreamConn
	state    string
	since    time.Time
	lastErr  string
	restarts int
	failures []time.Time
	init     json.RawMessage
	lists    map[string][]json.RawMessage
	calls    map[string]*inflight // upstream request id → call
	tokens   map[string]*inflight // mcphub progress token → call
	order    []*inflight          // in-flight calls, oldest first
	subs     map[string]bool      // resource URIs subscribed upstream
	level    string               // log level last applied

	adoptions  []adoption // calls of an earlier run, finished on the first connection
	resumeUsed bool       // the stored session was offered once; later connections start fresh
}

func newLink(s *Server, session string, era bool) *link {
	ctx, cancel := context.WithCancel(context.Background())
	l := &link{
		srv: s, session: session, era: era, ctx: ctx, cancel: cancel, done: make(chan struct{}), settled: make(chan struct{}),
		state: StateStarting, lists: map[string][]json.RawMessage{},
		calls: map[string]*inflight{}, tokens: map[string]*inflight{}, subs: map[string]bool{},
	}
	if c := s.cfg.Cache; c != nil && session == "" && !era {
		// The last run's catalog answers list calls until this run has
		// connected and fetched its own.
		l.init = c.Init
		for m, items := range c.Lists {
			l.lists[m] = items
		}
	}
	return l
}

// stop ends the link and waits for its supervisor.
func (l *link) stop() {
	l.cancel()
	<-l.done
}

// setStateLocked changes the state and wakes the calls waiting for the
// link's first outcome.
func (l *link) setStateLocked(state string) {
	if l.state == StateStarting && state != StateStarting {
		close(l.settled)
	}
	l.state = state
}

// supervise keeps the link connected until ctx or the link is cancelled.
func (l *link) supervise(parent context.Context) {
	defer close(l.done)
	defer l.abandonLeft()
	stop := context.AfterFunc(parent, l.cancel)
	defer stop()
	b := l.srv.cfg.Backoff
	for attempt := 0; l.ctx.Err() == nil; attempt++ {
		h := l.newHealth()
		conn, err := l.connect(h)
		if err == nil {
			attempt = 0
			lost := l.serve(conn, h)
			if l.ctx.Err() != nil {
				conn.Close()
				return
			}
			err = lost
		}
		if l.askedSession && errors.Is(err, client.ErrNoSessionEra) {
			// The server refused this session's connection a session
			// (an outage, a 502 during a redeploy, is not a refusal): it
			// is made again at once, finding the era.
			if conn != nil {
				conn.Close()
			}
			l.autoEra, attempt = true, -1
			continue
		}
		if l.srv.lacksSessionEra(l, err) {
			if conn != nil {
				conn.Close()
			}
			// Asked again now and then: a server redeployed, or one
			// that refused a session for a while, may keep them again.
			select {
			case <-l.srv.cfg.clk.After(b.SlowRetry):
			case <-l.ctx.Done():
				return
			}
			attempt = -1
			continue
		}
		delay, retry := l.failed(err, attempt, b)
		if conn != nil {
			// Closed once the status tells the loss: closing may wait
			// (a DELETE to a server that does not answer, a process that
			// takes its time to stop).
			conn.Close()
		}
		if !retry {
			// Only a new connection helps, made when the registry entry
			// changes or on mcphub restart; this one waits to be stopped.
			<-l.ctx.Done()
			return
		}
		if !l.waitRetry(delay) {
			return
		}
	}
}

// abandonLeft answers the adopted calls still waiting for a first
// connection when the link stops before it tried one (Close right after
// Start), and refuses later adoptions: no connection will finish them.
func (l *link) abandonLeft() {
	l.mu.Lock()
	left := l.adoptions
	l.adoptions = nil
	l.resumeUsed = true
	l.mu.Unlock()
	for _, a := range left {
		// Never tracked: that happens as a connection starts.
		a.done(nil, &unavailableError{fmt.Sprintf("server %s stopped before the request could be resumed", l.srv.cfg.Name)})
	}
}

// clientConfig is the configuration of the link's next connection; resume
// says whether it offers the stored session. Only the shared link's state
// is persisted: a per-session connection's upstream session belongs to one
// client and is not what a restarted hub resumes.
func (l *link) clientConfig(resume bool, h *health) client.Config {
	cfg := l.srv.cfg.Client
	if !resume {
		cfg.Resume = nil
	}
	// A session-era client's own connection (share = "session") asks for
	// a session of a server whose era is found, unless the server is
	// known to refuse them: a server that speaks both eras is spoken to in
	// the client's, whatever the shared connection has found so far.
	l.askedSession = l.session != "" && l.srv.probesEras() && !l.autoEra && !l.srv.refusesSessions()
	l.autoEra = false
	cfg.SessionEra = l.era || l.askedSession
	if h != nil {
		// The health check owns these hooks: nothing else sets them on an
		// upstream's config.
		cfg.OnActivity, cfg.OnTransportError = h.alive, h.troubled
	}
	if p := l.srv.persist; p != nil && l.primary() && l.srv.remote() {
		own := cfg.OnState
		cfg.OnState = func(st client.State) {
			if own != nil {
				own(st)
			}
			p.saveState(st)
		}
	}
	return cfg
}

// connect makes one connection, checked by h when h is not nil, and
// fetches the server's lists. The shared link first waits for a slot of the
// Connects limit, and holds it until the lists are in.
func (l *link) connect(h *health) (upstreamConn, error) {
	release := func() {}
	// The session-era connection beside the shared one is not bound: the
	// shared one waits for it, and had its slot.
	if l.session == "" && !l.era {
		var err error
		if release, err = l.srv.cfg.Connects.acquire(l.ctx); err != nil {
			return nil, err
		}
	}
	defer release()
	l.mu.Lock()
	if l.state != StateStarting && l.state != StateCrashLoop {
		l.setStateLocked(StateRestarting)
	}
	// Only the shared link's first connection offers the stored session.
	// The adoptions waiting for it are taken in the same step, so Adopt
	// either queues a call for this connection or refuses it.
	resume := !l.resumeUsed && l.primary()
	l.resumeUsed = true
	adoptions := l.adoptions
	l.adoptions = nil
	l.mu.Unlock()
	cfg := l.clientConfig(resume, h)
	// The adopted calls are tracked before the connection starts: resuming
	// their streams begins inside Start, and a replayed notification must
	// find its call.
	for _, a := range adoptions {
		l.track(a.c, a.hubToken)
	}
	conn := l.srv.cfg.dial(cfg, l)
	ctx, cancel := context.WithTimeout(l.ctx, l.srv.cfg.ConnectTimeout)
	defer cancel()
	if err := conn.Start(ctx); err != nil {
		conn.Close()
		l.abandon(adoptions, err)
		return nil, err
	}
	l.adopt(conn, adoptions)
	init := conn.Initialize()
	// Before the lists are fetched, so that a list that changed while the
	// shared connection waited for the session-era one is fetched as it is
	// now; before the connection is installed, so that whoever waits for
	// it to settle finds a session-era connection it starts.
	l.srv.noteEra(ctx, l, init)
	if l.ctx.Err() != nil {
		conn.Close()
		return nil, l.ctx.Err()
	}
	var lists map[string][]json.RawMessage
	if !l.era {
		// The lists clients see are the primary connection's; a
		// session-era connection beside it has no others to offer.
		var err error
		if lists, err = l.fetchLists(ctx, conn, init.Capabilities); err != nil {
			conn.Close()
			return nil, err
		}
	}
	release()
	subs := l.connected(conn, init.Raw, lists)
	l.logger().Info("connected", "transport", conn.Transport(), "pid", conn.PID(), "tools", len(lists["tools/list"]), "session", l.session)
	if lvl := l.srv.level(); lvl != "" {
		l.applyLogLevel(lvl)
	}
	l.renewSubscriptions(ctx, conn, subs)
	l.changed()
	return conn, nil
}

// connected installs a connection that has started and fetched its lists,
// and returns the resource subscriptions to renew on it.
func (l *link) connected(conn upstreamConn, init json.RawMessage, lists map[string][]json.RawMessage) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.conn, l.init = conn, init
	if lists != nil {
		l.lists = lists
	}
	l.setStateLocked(StateConnected)
	l.since, l.lastErr = l.srv.cfg.clk.Now(), ""
	subs := make([]string, 0, len(l.subs))
	for uri := range l.subs {
		subs = append(subs, uri)
	}
	// A new connection starts at the server's default level, whatever the
	// last one was sent.
	l.level = ""
	return subs
}

// renewSubscriptions subscribes the new connection to the resources the
// last one was subscribed to, so clients keep their updates.
func (l *link) renewSubscriptions(ctx context.Context, conn upstreamConn, uris []string) {
	for _, uri := range uris {
		params := fmt.Appendf(nil, `{"uri":%s}`, jsonrpc.Quote(uri))
		if _, err := conn.Call(ctx, "resources/subscribe", params); err != nil {
			l.logger().Warn("could not renew a resource subscription", "uri", uri, "err", err)
		}
	}
}

// serve waits until the connection is lost, fails its health check (h, nil
// for none) or the link stops, takes it out of use and reports why it was
// lost. The caller closes it.
func (l *link) serve(conn upstreamConn, h *health) error {
	err := l.watch(conn, h)
	if err == nil {
		err = conn.Err()
	}
	l.mu.Lock()
	l.conn = nil
	// A connection that stayed up long enough proves the server healthy
	// again; its loss starts a fresh count towards crash-looping.
	if l.srv.cfg.clk.Now().Sub(l.since) >= l.srv.cfg.Backoff.Stable {
		l.failures = nil
	}
	l.mu.Unlock()
	if l.ctx.Err() == nil {
		l.logger().Warn("connection lost", "err", err)
	}
	if err == nil {
		err = fmt.Errorf("the connection ended")
	}
	return err
}

// failed records a failed or lost connection and returns how long to wait
// before the next attempt, exponential with jitter, or retry false for a
// server that asks for sign-in, where retrying cannot help. A stdio server
// that fails again and again is crash-looping and waits the slow retry
// instead. A remote one is never called crash-looping: what fails there is
// usually the network or a server being redeployed, not the server itself,
// so it shows restarting (failed until it has connected once) and keeps to
// the curve, never waiting more than Max, and it should be back as soon as
// the server is (see waitRetry).
func (l *link) failed(err error, attempt int, b Backoff) (delay time.Duration, retry bool) {
	now := l.srv.cfg.clk.Now()
	var authErr *client.AuthRequiredError
	needsLogin := errors.As(err, &authErr)
	remote := l.srv.remote()
	l.mu.Lock()
	l.lastErr = l.describe(err)
	l.failures = append(l.failures, now)
	for len(l.failures) > 0 && now.Sub(l.failures[0]) > b.Window {
		l.failures = l.failures[1:]
	}
	failures := len(l.failures)
	neverConnected := l.since.IsZero()
	switch {
	case needsLogin:
		l.setStateLocked(StateNeedsLogin)
	case failures >= b.CrashLoopAfter && !remote:
		l.setStateLocked(StateCrashLoop)
	case neverConnected:
		l.setStateLocked(StateFailed)
	default:
		l.setStateLocked(StateRestarting)
	}
	// The first attempt of a server that never connected is not a restart.
	if !neverConnected || attempt > 0 {
		l.restarts++
	}
	state, why := l.state, l.lastErr
	l.mu.Unlock()
	l.changed()
	switch {
	case needsLogin:
		l.logger().Warn("the server asks for sign-in; not retrying until it is restarted", "status", authErr.Status, "err", why)
		return 0, false
	case state == StateCrashLoop:
		l.logger().Error("crash-looping; retrying slowly", "failures", failures, "retry_in", b.SlowRetry, "err", why)
		return b.SlowRetry, true
	}
	// A remote server that connects and is lost again and again keeps
	// climbing the curve too: the failures in the window count, not only
	// the attempts since the last connection.
	var d time.Duration
	if remote {
		d = b.delayWithin(max(attempt, failures-1), randomJitter)
	} else {
		d = b.delay(attempt, randomJitter)
	}
	l.logger().Warn("could not connect", "err", why, "state", state, "retry_in", d.Round(time.Millisecond))
	return d, true
}

// describe is the status's last error for err. A refusal for want of
// credentials gets a sentence that says what to do, without the server's
// body or any header value: those are the server's words, and a server
// that refuses credentials may quote them.
func (l *link) describe(err error) string {
	name := l.srv.cfg.Name
	var authErr *client.AuthRequiredError
	if errors.As(err, &authErr) {
		return fmt.Sprintf("server %q needs you to sign in (it answered %d with a Bearer challenge): run mcphub login %s; "+
			"or put a valid token in its headers in hub.toml (or the variable they name) and run mcphub restart %s",
			name, authErr.Status, name, name)
	}
	var he *client.HTTPError
	if errors.As(err, &he) && (he.Status == http.StatusUnauthorized || he.Status == http.StatusForbidden) {
		return fmt.Sprintf("server %q refused mcphub with HTTP %d %s: check the headers set for it in hub.toml (a token or key may be missing, wrong or expired)",
			name, he.Status, http.StatusText(he.Status))
	}
	return err.Error()
}

// changed reports a change of the shared link; per-session links change
// nothing the hub shows.
func (l *link) changed() {
	if l.session == "" {
		l.srv.cfg.Changed()
	}
}

func (l *link) current() upstreamConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conn
}

// unavailable explains why the link cannot take a call now, in the form the
// user sees: "server X is restarting (attempt N, last exit: ...)".
func (l *link) unavailable() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	msg := fmt.Sprintf("server %s is %s", l.srv.cfg.Name, l.state)
	switch {
	case l.state == StateNeedsLogin:
		msg = l.lastErr
	case l.state == StateStarting:
		msg += " (still connecting)"
	case l.lastErr != "":
		msg += fmt.Sprintf(" (attempt %d, last error: %s)", l.restarts, l.lastErr)
	}
	return &unavailableError{msg}
}

// waitConnected returns the connection for a call. A per-session link is
// made for the call that needs it, so that call waits for its first
// connection (or first failure); the shared link answers at once.
func (l *link) waitConnected(ctx context.Context) upstreamConn {
	if l.session == "" {
		return l.current()
	}
	select {
	case <-l.settled:
		return l.current()
	case <-ctx.Done():
	case <-l.ctx.Done():
	}
	return nil
}

func (l *link) status() Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := Status{State: l.state, Since: l.since, LastError: l.lastErr, Restarts: l.restarts}
	if l.conn != nil {
		st.Transport, st.PID = l.conn.Transport(), l.conn.PID()
		if init := l.conn.Initialize(); init != nil {
			st.Protocol = init.ProtocolVersion
		}
	}
	return st
}

// primary reports whether this is the server's primary connection: the
// shared one whose catalog is served, whose state is stored and resumed,
// and whose calls a restarted hub can adopt.
func (l *link) primary() bool { return l.session == "" && !l.era }

// logger is the server's logger, naming the session-era connection beside
// the shared one so its lines are told from the shared connection's.
func (l *link) logger() *slog.Logger {
	if l.era {
		return l.srv.log.With("connection", "session-era")
	}
	return l.srv.log
}
