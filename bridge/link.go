package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// listMethods are the lists a link fetches, by the capability that offers
// them.
var listMethods = []struct{ capability, method, changed string }{
	{"tools", "tools/list", "notifications/tools/list_changed"},
	{"prompts", "prompts/list", "notifications/prompts/list_changed"},
	{"resources", "resources/list", "notifications/resources/list_changed"},
	{"resources", "resources/templates/list", "notifications/resources/list_changed"},
}

// link is one supervised connection: it connects, fetches the server's
// lists, and reconnects with backoff when the connection is lost. Calls in
// flight when it is lost fail; they are never replayed.
type link struct {
	srv     *Server
	session string // "" for the shared connection

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	tokenSeq atomic.Int64

	mu       sync.Mutex
	conn     *client.Conn
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

// adoption is a call an earlier run of the hub sent upstream.
type adoption struct {
	c        *inflight
	hubToken string
	done     func(json.RawMessage, error)
}

// inflight is one call on a link and where its messages go.
type inflight struct {
	peer      jsonrpc.Peer
	session   string // the client session that made the call
	upID      json.RawMessage
	origToken json.RawMessage // the client's progress token, nil if none
}

func newLink(s *Server, session string) *link {
	ctx, cancel := context.WithCancel(context.Background())
	l := &link{
		srv: s, session: session, ctx: ctx, cancel: cancel, done: make(chan struct{}),
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
		case <-time.After(delay):
		case <-l.ctx.Done():
			return
		}
	}
}

// connect makes one connection and fetches the server's lists.
func (l *link) connect() (*client.Conn, error) {
	l.mu.Lock()
	if l.state != StateStarting && l.state != StateCrashLoop {
		l.state = StateRestarting
	}
	l.mu.Unlock()
	cfg := l.srv.cfg.Client
	l.mu.Lock()
	if l.resumeUsed || l.session != "" {
		cfg.Resume = nil
	}
	l.resumeUsed = true
	adoptions := l.adoptions
	l.adoptions = nil
	l.mu.Unlock()
	// The adopted calls are tracked before the connection starts: resuming
	// their streams begins inside Start, and a replayed notification must
	// find its call.
	for _, a := range adoptions {
		l.track(a.c, a.hubToken)
	}
	conn := client.New(cfg, l)
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
	l.mu.Lock()
	l.conn, l.init, l.lists = conn, init.Raw, lists
	l.state, l.since, l.lastErr = StateConnected, time.Now(), ""
	subs := make([]string, 0, len(l.subs))
	for uri := range l.subs {
		subs = append(subs, uri)
	}
	l.level = ""
	l.mu.Unlock()
	l.srv.log.Info("connected", "transport", conn.Transport(), "pid", conn.PID(), "tools", len(lists["tools/list"]), "session", l.session)
	if lvl := l.srv.level(); lvl != "" {
		l.applyLogLevel(lvl)
	}
	for _, uri := range subs {
		params := fmt.Appendf(nil, `{"uri":%s}`, jsonrpc.Quote(uri))
		if _, err := conn.Call(ctx, "resources/subscribe", params); err != nil {
			l.srv.log.Warn("could not renew a resource subscription", "uri", uri, "err", err)
		}
	}
	l.changed()
	return conn, nil
}

// adopt finishes the calls of an earlier run on a connection that resumed
// their session; on a fresh session they are lost and answered so.
func (l *link) adopt(conn *client.Conn, adoptions []adoption) {
	resumed := map[string]bool{}
	for _, id := range conn.Resumed() {
		resumed[string(id)] = true
	}
	for _, a := range adoptions {
		if !resumed[string(a.c.upID)] {
			l.untrack(a.c, a.hubToken)
			a.done(nil, &unavailableError{fmt.Sprintf("server %s did not resume the session the request was sent on", l.srv.cfg.Name)})
			continue
		}
		l.srv.wg.Add(1)
		go func() {
			defer l.srv.wg.Done()
			defer l.untrack(a.c, a.hubToken)
			res, err := conn.Await(l.ctx, a.c.upID)
			if err != nil {
				err = callError(l.srv.cfg.Name, err)
			}
			a.done(res, err)
		}()
	}
	if len(adoptions) > 0 {
		l.srv.log.Info("resumed calls of the previous run", "calls", len(adoptions))
	}
}

func (l *link) abandon(adoptions []adoption, err error) {
	for _, a := range adoptions {
		l.untrack(a.c, a.hubToken)
		a.done(nil, &unavailableError{fmt.Sprintf("server %s could not be reached to resume the request: %v", l.srv.cfg.Name, err)})
	}
}

// fetchLists gets every list the server's capabilities offer.
func (l *link) fetchLists(ctx context.Context, conn *client.Conn, caps json.RawMessage) (map[string][]json.RawMessage, error) {
	lists := map[string][]json.RawMessage{}
	for _, lm := range listMethods {
		if _, ok := jsonrpc.Member(caps, lm.capability); !ok {
			continue
		}
		items, err := l.fetchList(ctx, conn, lm.method)
		if err != nil {
			return nil, err
		}
		lists[lm.method] = items
	}
	return lists, nil
}

func (l *link) fetchList(ctx context.Context, conn *client.Conn, method string) ([]json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, l.srv.cfg.RequestTimeout)
	defer cancel()
	items, err := conn.ListAll(ctx, method)
	// A server that declares a capability but answers its list with a
	// JSON-RPC error offers nothing there; it is no reason to drop the
	// connection.
	var e *jsonrpc.Error
	if errors.As(err, &e) {
		l.srv.log.Warn("the server refused a list it declared", "method", method, "err", e.Message)
		return nil, nil
	}
	return items, err
}

// serve waits until the connection is lost or the link stops, and reports
// why it was lost.
func (l *link) serve(conn *client.Conn) error {
	select {
	case <-conn.Done():
	case <-l.ctx.Done():
	}
	err := conn.Err()
	conn.Close()
	l.mu.Lock()
	l.conn = nil
	stable := time.Since(l.since) >= l.srv.cfg.Backoff.Stable
	if stable {
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
	now := time.Now()
	l.mu.Lock()
	l.lastErr = err.Error()
	l.failures = append(l.failures, now)
	for len(l.failures) > 0 && now.Sub(l.failures[0]) > b.Window {
		l.failures = l.failures[1:]
	}
	neverConnected := l.since.IsZero()
	switch {
	case len(l.failures) >= b.CrashLoopAfter:
		l.state = StateCrashLoop
	case neverConnected:
		l.state = StateFailed
	default:
		l.state = StateRestarting
	}
	if !neverConnected || attempt > 0 {
		l.restarts++
	}
	state := l.state
	l.mu.Unlock()
	l.changed()
	if state == StateCrashLoop {
		l.srv.log.Error("crash-looping; retrying slowly", "failures", len(l.failures), "retry_in", b.SlowRetry, "err", err)
		return b.SlowRetry
	}
	d := b.Initial << min(attempt, 16)
	if d > b.Max || d <= 0 {
		d = b.Max
	}
	d = d*3/4 + rand.N(d/2+1) // ±25% jitter
	l.srv.log.Warn("could not connect", "err", err, "state", state, "retry_in", d.Round(time.Millisecond))
	return d
}

func (l *link) changed() {
	if l.session == "" {
		l.srv.cfg.Changed()
	}
}

func (l *link) current() *client.Conn {
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

// waitConnected waits for a per-session link's first connection.
func (l *link) waitConnected(ctx context.Context) *client.Conn {
	if l.session == "" {
		return l.current()
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		l.mu.Lock()
		conn, state := l.conn, l.state
		l.mu.Unlock()
		if conn != nil || state != StateStarting {
			return conn
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil
		}
	}
}

// call forwards one request on the link, with a fresh upstream id and, when
// the client asked for progress, a fresh progress token mapped back to the
// client's own.
func (l *link) call(ctx context.Context, session, method string, params json.RawMessage, peer jsonrpc.Peer) (json.RawMessage, error) {
	conn := l.waitConnected(ctx)
	if conn == nil {
		return nil, l.unavailable()
	}
	c := &inflight{peer: peer, session: session, upID: conn.NextID()}
	var hubToken string
	if peer != nil {
		if meta, ok := jsonrpc.Member(params, "_meta"); ok {
			if tok, ok := jsonrpc.Member(meta, "progressToken"); ok {
				hubToken = "mcphub-" + strconv.FormatInt(l.tokenSeq.Add(1), 10)
				newMeta, err := jsonrpc.SetMember(meta, "progressToken", jsonrpc.Quote(hubToken))
				if err == nil {
					params, err = jsonrpc.SetMember(params, "_meta", newMeta)
				}
				if err != nil {
					return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "malformed _meta")
				}
				c.origToken = tok
			}
		}
	}
	l.track(c, hubToken)
	defer l.untrack(c, hubToken)
	if peer != nil && l.session == "" {
		peer.Forwarded(c.upID, hubToken, c.origToken)
	}
	res, err := conn.CallWithID(ctx, c.upID, method, params)
	if err != nil {
		return nil, callError(l.srv.cfg.Name, err)
	}
	if max := l.srv.cfg.MaxResponseBytes; max > 0 && int64(len(res)) > max {
		return nil, &tooLargeError{fmt.Sprintf("server %s answered %s with %d bytes, over the %d-byte limit ([hub] max_response_bytes)", l.srv.cfg.Name, method, len(res), max)}
	}
	switch method {
	case "resources/subscribe", "resources/unsubscribe":
		uri, _ := jsonrpc.StringMember(params, "uri")
		l.mu.Lock()
		if method == "resources/subscribe" {
			l.subs[uri] = true
		} else {
			delete(l.subs, uri)
		}
		l.mu.Unlock()
	}
	return res, nil
}

func (l *link) track(c *inflight, token string) {
	l.mu.Lock()
	l.calls[string(c.upID)] = c
	if token != "" {
		l.tokens[token] = c
	}
	l.order = append(l.order, c)
	l.mu.Unlock()
}

func (l *link) untrack(c *inflight, token string) {
	l.mu.Lock()
	delete(l.calls, string(c.upID))
	if token != "" {
		delete(l.tokens, token)
	}
	for i, o := range l.order {
		if o == c {
			l.order = append(l.order[:i], l.order[i+1:]...)
			break
		}
	}
	l.mu.Unlock()
}

// owner finds the call a message belongs to: the request whose stream
// carried it, when the transport tells. Otherwise (stdio) it can only be
// inferred when every call in flight comes from one session: then it is that
// session's most recent call (with soleCall, only when exactly one call is in
// flight). With calls of several sessions in flight the message is ambiguous
// and no call is returned: a guess could hand one client's sampling prompt
// to another. share = "session" makes every case exact.
func (l *link) owner(related json.RawMessage, soleCall bool) (c *inflight, ambiguous bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if related != nil {
		if c := l.calls[string(related)]; c != nil && c.peer != nil {
			return c, false
		}
	}
	var last *inflight
	n := 0
	for _, o := range l.order {
		if o.peer == nil {
			continue
		}
		if last != nil && o.session != last.session {
			return nil, true
		}
		last = o
		n++
	}
	if soleCall && n != 1 {
		return nil, n > 1
	}
	return last, false
}

// HandleNotification routes a notification from the upstream (client.Handler).
func (l *link) HandleNotification(m *jsonrpc.Message, related json.RawMessage) {
	switch m.Method {
	case "notifications/progress":
		tok, _ := jsonrpc.StringMember(m.Params, "progressToken")
		l.mu.Lock()
		c := l.tokens[tok]
		l.mu.Unlock()
		if c == nil || c.origToken == nil {
			return // progress for a call that ended, or not ours
		}
		params, err := jsonrpc.SetMember(m.Params, "progressToken", c.origToken)
		if err != nil {
			return
		}
		c.peer.Notify(jsonrpc.NewNotification(m.Method, params))
		return
	case "notifications/message":
		if c, _ := l.owner(related, true); c != nil {
			c.peer.Notify(m)
			return
		}
	}
	for _, lm := range listMethods {
		if m.Method == lm.changed {
			l.srv.wg.Add(1)
			go func() {
				defer l.srv.wg.Done()
				l.refresh(lm.changed)
			}()
			break
		}
	}
	if l.srv.cfg.Notification != nil {
		l.srv.cfg.Notification(l.session, m)
	}
}

// refresh refetches the lists a list_changed notification covers.
func (l *link) refresh(changed string) {
	conn := l.current()
	if conn == nil {
		return
	}
	for _, lm := range listMethods {
		if lm.changed != changed {
			continue
		}
		items, err := l.fetchList(l.ctx, conn, lm.method)
		if err != nil {
			l.srv.log.Warn("could not refresh a list", "method", lm.method, "err", err)
			continue
		}
		l.mu.Lock()
		l.lists[lm.method] = items
		l.mu.Unlock()
	}
	l.changed()
}

// HandleRequest routes a server-to-client request (client.Handler) to the
// client whose call caused it, or to the hub when it belongs to no call.
func (l *link) HandleRequest(ctx context.Context, m *jsonrpc.Message, related json.RawMessage) (json.RawMessage, error) {
	c, ambiguous := l.owner(related, false)
	if c != nil {
		return c.peer.Request(ctx, m.Method, m.Params)
	}
	if ambiguous {
		l.srv.log.Warn("refused a server request that could belong to several clients", "method", m.Method)
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError,
			"mcphub cannot tell which client %s is for: calls from several sessions are in flight on the shared connection to %s (set share = \"session\" for this server)",
			m.Method, l.srv.cfg.Name)
	}
	if l.srv.cfg.Request != nil {
		return l.srv.cfg.Request(ctx, l.session, m.Method, m.Params)
	}
	return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "no client can answer %s", m.Method)
}

// applyLogLevel sends logging/setLevel when the server logs and the level
// differs from what it was last sent.
func (l *link) applyLogLevel(level string) {
	l.mu.Lock()
	conn, init, last := l.conn, l.init, l.level
	if conn == nil || last == level {
		l.mu.Unlock()
		return
	}
	caps, _ := jsonrpc.Member(init, "capabilities")
	if _, ok := jsonrpc.Member(caps, "logging"); !ok {
		l.mu.Unlock()
		return
	}
	l.level = level
	l.mu.Unlock()
	l.srv.wg.Add(1)
	go func() {
		defer l.srv.wg.Done()
		ctx, cancel := context.WithTimeout(l.ctx, l.srv.cfg.RequestTimeout)
		defer cancel()
		params := fmt.Appendf(nil, `{"level":%s}`, jsonrpc.Quote(level))
		if _, err := conn.Call(ctx, "logging/setLevel", params); err != nil {
			l.srv.log.Debug("logging/setLevel failed", "err", err)
		}
	}()
}

// initResult is the last known initialize result: of the current
// connection, of the last one while reconnecting, or from the cache before
// the first.
func (l *link) initResult() json.RawMessage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.init
}

func (l *link) list(method string) []json.RawMessage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lists[method]
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
