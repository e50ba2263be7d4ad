package bridge

import (
	"context"
	"encoding/json"
	"fmt"
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

func newLink(s *Server, session string) *link {
	ctx, cancel := context.WithCancel(context.Background())
	l := &link{
		srv: s, session: session, ctx: ctx, cancel: cancel, done: make(chan struct{}), settled: make(chan struct{}),
		state: StateStarting, lists: map[string][]json.RawMessage{},
		calls: map[string]*inflight{}, tokens: map[string]*inflight{}, subs: map[string]bool{},
	}
	if c := s.cfg.Cache; c != nil && session == "" {
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
	stop := context.AfterFunc(parent, l.cancel)
	defer stop()
	b := l.srv.cfg.Backoff
	for attempt := 0; l.ctx.Err() == nil; attempt++ {
		conn, err := l.connect()
		if err == nil {
			attempt = 0
			lost := l.serve(conn)
			if l.ctx.Err() != nil {
				return
			}
			err = lost
		}
		delay := l.failed(err, attempt, b)
		select {
		case <-l.srv.cfg.clk.After(delay):
		case <-l.ctx.Done():
			return
		}
	}
}

// clientConfig is the configuration of the link's next connection; resume
// says whether it offers the stored session. Only the shared link's state
// is persisted: a per-session connection's upstream session belongs to one
// client and is not what a restarted hub resumes.
func (l *link) clientConfig(resume bool) client.Config {
	cfg := l.srv.cfg.Client
	if !resume {
		cfg.Resume = nil
	}
	if p := l.srv.persist; p != nil && l.session == "" && l.srv.remote() {
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

// connect makes one connection and fetches the server's lists. The shared
// link first waits for a slot of the Connects limit, and holds it until the
// lists are in.
func (l *link) connect() (upstreamConn, error) {
	release := func() {}
	if l.session == "" {
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
	resume := !l.resumeUsed && l.session == ""
	l.resumeUsed = true
	adoptions := l.adoptions
	l.adoptions = nil
	l.mu.Unlock()
	cfg := l.clientConfig(resume)
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
	lists, err := l.fetchLists(ctx, conn, init.Capabilities)
	if err != nil {
		conn.Close()
		return nil, err
	}
	release()
	subs := l.connected(conn, init.Raw, lists)
	l.srv.log.Info("connected", "transport", conn.Transport(), "pid", conn.PID(), "tools", len(lists["tools/list"]), "session", l.session)
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
	l.conn, l.init, l.lists = conn, init, lists
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
			l.srv.log.Warn("could not renew a resource subscription", "uri", uri, "err", err)
		}
	}
}

// serve waits until the connection is lost or the link stops, and reports
// why it was lost.
func (l *link) serve(conn upstreamConn) error {
	select {
	case <-conn.Done():
	case <-l.ctx.Done():
	}
	err := conn.Err()
	conn.Close()
	l.mu.Lock()
	l.conn = nil
	// A connection that stayed up long enough proves the server healthy
	// again; its loss starts a fresh count towards crash-looping.
	if l.srv.cfg.clk.Now().Sub(l.since) >= l.srv.cfg.Backoff.Stable {
		l.failures = nil
	}
	l.mu.Unlock()
	if l.ctx.Err() == nil {
		l.srv.log.Warn("connection lost; reconnecting", "err", err)
	}
	if err == nil {
		err = fmt.Errorf("the connection ended")
	}
	return err
}

// failed records a failed or lost connection and returns how long to wait
// before the next attempt: exponential with jitter, or the slow retry once
// the server is crash-looping.
func (l *link) failed(err error, attempt int, b Backoff) time.Duration {
	now := l.srv.cfg.clk.Now()
	l.mu.Lock()
	l.lastErr = err.Error()
	l.failures = append(l.failures, now)
	for len(l.failures) > 0 && now.Sub(l.failures[0]) > b.Window {
		l.failures = l.failures[1:]
	}
	failures := len(l.failures)
	neverConnected := l.since.IsZero()
	switch {
	case failures >= b.CrashLoopAfter:
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
	state := l.state
	l.mu.Unlock()
	l.changed()
	if state == StateCrashLoop {
		l.srv.log.Error("crash-looping; retrying slowly", "failures", failures, "retry_in", b.SlowRetry, "err", err)
		return b.SlowRetry
	}
	d := b.delay(attempt, randomJitter)
	l.srv.log.Warn("could not connect", "err", err, "state", state, "retry_in", d.Round(time.Millisecond))
	return d
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
	}
	return st
}
