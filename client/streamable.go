package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/redact"
	"github.com/mcphub/mcphub/internal/sse"
)

// getStreamKey names the standalone GET stream in State.LastEventIDs; POST
// streams are named by their request id.
const getStreamKey = "get"

// drainTimeout bounds reading what a POST's stream sends after its response;
// a server that keeps the stream open past it loses the connection.
const drainTimeout = 5 * time.Second

// closeDeleteTimeout bounds the DELETE that ends an upstream session.
const closeDeleteTimeout = 5 * time.Second

// streamable is the Streamable HTTP transport (protocol 2025-03-26 and later).
type streamable struct {
	c *Conn

	ctx    context.Context // the transport's life; cancelled by close
	cancel context.CancelFunc
	wg     sync.WaitGroup // stream readers
	doneState

	mu        sync.Mutex
	sessionID string
	version   string
	lastIDs   map[string]string
	accepted  map[string]string             // request id → session it was accepted on
	followers map[string]context.CancelFunc // request id → its stream's background resumption
	getOpen   bool
	getReady  chan struct{} // closed when the standalone stream first answers

	renewing chan struct{} // a one-slot lock: one re-initialization at a time
}

func newStreamable(c *Conn) *streamable {
	ctx, cancel := context.WithCancel(c.ctx)
	return &streamable{
		c: c, ctx: ctx, cancel: cancel, doneState: newDoneState(),
		lastIDs: map[string]string{}, accepted: map[string]string{}, followers: map[string]context.CancelFunc{},
		renewing: make(chan struct{}, 1),
	}
}

func (s *streamable) start(context.Context) error { return nil }

func (s *streamable) setProtocolVersion(v string) {
	s.mu.Lock()
	s.version = v
	s.mu.Unlock()
}

func (s *streamable) session() (id, version string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessionID, s.version
}

func (s *streamable) fillState(st *State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st.SessionID = s.sessionID
	if len(s.lastIDs) > 0 {
		st.LastEventIDs = make(map[string]string, len(s.lastIDs))
		for k, v := range s.lastIDs {
			st.LastEventIDs[k] = v
		}
	}
}

// resume continues a stored session: the standalone stream is reopened with
// its last event id, so what the server sent meanwhile is replayed.
// The streams of requests that were in flight are reopened too, so their
// results still arrive (for Conn.Await).
func (s *streamable) resume(_ context.Context, st State) error {
	s.mu.Lock()
	s.sessionID, s.version = st.SessionID, st.ProtocolVersion
	var keys []string
	for k, v := range st.LastEventIDs {
		s.lastIDs[k] = v
		if k != getStreamKey {
			keys = append(keys, k)
			s.accepted[k] = st.SessionID // a renewal fails them, never replays them
		}
	}
	s.mu.Unlock()
	for _, key := range keys {
		// Reopened at once: the previous run's connection is gone.
		s.follow(key, &backoff{base: 500 * time.Millisecond, max: 30 * time.Second}, nil, true)
	}
	s.initialized()
	return nil
}

// initialized opens the standalone GET stream once the handshake is done.
// It returns once the server has answered that GET (or refused it, or
// getReadyWait passed), so server-initiated messages sent right after the
// handshake have a stream to arrive on, and calls made next do not race the
// stream's opening.
func (s *streamable) initialized() {
	s.mu.Lock()
	if s.getOpen {
		s.mu.Unlock()
		return
	}
	s.getOpen = true
	ready := make(chan struct{})
	s.getReady = ready
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.runGetStream()
	}()
	t := time.NewTimer(getReadyWait)
	defer t.Stop()
	select {
	case <-ready:
	case <-t.C:
	case <-s.ctx.Done():
	}
}

// getReadyWait bounds how long the handshake waits for the standalone
// stream to open.
const getReadyWait = 5 * time.Second

// markGetReady reports the standalone stream's first answer.
func (s *streamable) markGetReady() {
	s.mu.Lock()
	ready := s.getReady
	s.getReady = nil
	s.mu.Unlock()
	if ready != nil {
		close(ready)
	}
}

func (s *streamable) newRequest(ctx context.Context, method string, body []byte, isInit bool) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.c.cfg.URL, rd)
	if err != nil {
		return nil, err
	}
	s.c.setHeaders(req.Header)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	} else {
		req.Header.Set("Accept", "text/event-stream")
	}
	if sid, v := s.session(); !isInit {
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		if v != "" {
			req.Header.Set("MCP-Protocol-Version", v)
		}
	}
	return req, nil
}

// send POSTs one message. A request's reply is read as JSON or as an SSE
// stream (in the background); a 404 on a live session renews it once and
// retries, since a rejected POST was never processed.
func (s *streamable) send(ctx context.Context, m *jsonrpc.Message, data []byte) error {
	select {
	case <-s.done():
		return s.err()
	default:
	}
	err := s.post(ctx, m, data)
	var expired *sessionGone
	if !errors.As(err, &expired) {
		return err
	}
	if m.Method == "notifications/initialized" {
		// The handshake's own session is gone already; renewing from
		// inside a renewal would wait for itself.
		return ErrSessionExpired
	}
	if rerr := s.renew(ctx, expired.sid, m.ID); rerr != nil {
		return fmt.Errorf("%w: re-initializing failed: %w", ErrSessionExpired, rerr)
	}
	err = s.post(ctx, m, data)
	if errors.As(err, &expired) {
		return ErrSessionExpired
	}
	return err
}

// sessionGone is post's report of a 404 on a session that was live.
type sessionGone struct{ sid string }

func (e *sessionGone) Error() string { return "upstream session not found" }

func (s *streamable) post(ctx context.Context, m *jsonrpc.Message, data []byte) error {
	isInit := m.Method == "initialize"
	// The POST's context ends with the transport, and with the caller's
	// until the response is in. After that the rest of the stream (normally
	// just its end) is drained whatever the caller does: a request context
	// that ends mid-body makes net/http close the connection instead of
	// pooling it, and every call would pay for a new one.
	rctx, cancelCause := context.WithCancelCause(s.ctx)
	cancel := func() { cancelCause(nil) }
	stopCaller := context.AfterFunc(ctx, func() { cancelCause(context.Cause(ctx)) })
	req, err := s.newRequest(rctx, http.MethodPost, data, isInit)
	if err != nil {
		stopCaller()
		cancel()
		return err
	}
	sid := req.Header.Get("Mcp-Session-Id")
	resp, err := s.c.do(req)
	if err != nil {
		stopCaller()
		cancel()
		if s.ctx.Err() != nil {
			return ErrClosed
		}
		return fmt.Errorf("POST %s: %w", redact.URL(s.c.cfg.URL), err)
	}
	release := func() {
		resp.Body.Close()
		stopCaller()
		cancel()
	}

	if resp.StatusCode == http.StatusNotFound && sid != "" {
		release()
		return &sessionGone{sid: sid}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer release()
		return s.httpFailure(resp, m)
	}
	if isInit {
		// A server may run without sessions; then the id is "" and later
		// requests carry none.
		s.mu.Lock()
		s.sessionID = resp.Header.Get("Mcp-Session-Id")
		s.mu.Unlock()
		s.c.stateChanged()
	}
	if m.IsRequest() {
		s.mu.Lock()
		s.accepted[string(m.ID)] = sid
		s.mu.Unlock()
	}
	if resp.StatusCode == http.StatusAccepted || !m.IsRequest() {
		// A request answered 202 gets its response on the GET stream.
		release()
		return nil
	}

	ctype := resp.Header.Get("Content-Type")
	if ctype != "text/event-stream" && ctype != "application/json" {
		ctype, _, _ = mime.ParseMediaType(ctype) // parameters, or odd case
	}
	switch ctype {
	case "application/json":
		defer release()
		return s.readJSON(resp.Body)
	case "text/event-stream":
		// Read on the caller's goroutine: the caller waits for this
		// response anyway, and a hand-off to another goroutine would only
		// add a wake-up to every call's latency. What follows the response
		// (normally just the end of the stream) is drained in the
		// background if it has not arrived with it, so the connection goes
		// back to the pool.
		body := &eofWatch{r: resp.Body}
		s.followPostStream(rctx, body, m.ID)
		stopCaller()
		if body.eof {
			// The stream ended with the response (its end was already
			// read with it): nothing left to drain.
			release()
			return nil
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer release()
			stop := time.AfterFunc(drainTimeout, release)
			defer stop.Stop()
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		}()
		return nil
	default:
		release()
		return fmt.Errorf("POST %s: unexpected Content-Type %q", redact.URL(s.c.cfg.URL), resp.Header.Get("Content-Type"))
	}
}

// httpFailure turns a non-2xx reply into an error. A JSON-RPC error
// response for this request in the body is delivered as the call's answer.
func (s *streamable) httpFailure(resp *http.Response, m *jsonrpc.Message) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if m.IsRequest() {
		if em, err := jsonrpc.Decode(body); err == nil && em.Error != nil && bytes.Equal(em.ID, m.ID) {
			s.c.deliver(em, nil)
			return nil
		}
	}
	return &HTTPError{Method: http.MethodPost, URL: redact.URL(s.c.cfg.URL), Status: resp.StatusCode, Body: strings.TrimSpace(truncate(body, 512))}
}

func (s *streamable) maxMessage() int {
	if s.c.cfg.MaxMessageBytes > 0 {
		return s.c.cfg.MaxMessageBytes
	}
	return sse.DefaultMaxEventSize
}

func (s *streamable) readJSON(body io.Reader) error {
	max := s.maxMessage()
	data, err := io.ReadAll(io.LimitReader(body, int64(max)+1))
	if err != nil {
		return fmt.Errorf("read response: %w", err)
	}
	if len(data) > max {
		return fmt.Errorf("%w: a response over %d bytes", ErrMessageTooLarge, max)
	}
	m, err := jsonrpc.Decode(data)
	if err != nil {
		return fmt.Errorf("upstream sent an invalid message: %w", err)
	}
	s.receive(m, nil)
	return nil
}

// receive hands a message to the connection, clearing the bookkeeping of a
// request once its response is in: a background resumption of its stream
// stops, wherever the response came from.
func (s *streamable) receive(m *jsonrpc.Message, related json.RawMessage) {
	if m.IsResponse() {
		s.mu.Lock()
		delete(s.accepted, string(m.ID))
		stop := s.followers[string(m.ID)]
		s.mu.Unlock()
		if stop != nil {
			stop()
		}
	}
	s.c.deliver(m, related)
}

// readEvents reads an SSE stream until it ends, delivering every message.
// It reports whether the response to request id (if any) arrived.
func (s *streamable) readEvents(body io.Reader, key string, related json.RawMessage, b *backoff) (gotResponse bool, err error) {
	r := sse.NewReader(body, s.maxMessage())
	defer r.Release()
	for {
		ev, err := r.Next()
		if err != nil {
			return gotResponse, err
		}
		if ev.HasRetry {
			b.server = time.Duration(ev.Retry) * time.Millisecond
		}
		if ev.HasID && ev.ID != "" {
			// Only a new id is progress: a server that resends the same
			// event and drops the stream must not get unlimited retries.
			s.mu.Lock()
			advanced := s.lastIDs[key] != ev.ID
			s.lastIDs[key] = ev.ID
			s.mu.Unlock()
			if advanced {
				s.c.stateChanged()
				b.progress()
			}
		}
		if ev.Data == "" || (ev.Type != "" && ev.Type != "message") {
			continue // priming events, keep-alives, other event types
		}
		m, derr := jsonrpc.Decode([]byte(ev.Data))
		if derr != nil {
			s.c.log.Warn("skipped an SSE event that is not a JSON-RPC message", "err", derr)
			continue
		}
		s.receive(m, related)
		if related != nil && m.IsResponse() && bytes.Equal(m.ID, related) {
			// The request is answered: whatever the stream still holds is
			// not this caller's to wait for (a resumed GET stream may stay
			// open for server-initiated messages).
			return true, nil
		}
	}
}

// followPostStream reads the SSE reply to a POST on the caller's goroutine.
// If it ends before the response, the stream is resumed in the background
// (GET + Last-Event-ID, the 2025-11-25 rule, honouring the server's retry
// delay), since the response may as well arrive on another stream meanwhile;
// the caller waits for it either way.
func (s *streamable) followPostStream(ctx context.Context, body io.Reader, id json.RawMessage) {
	key := string(id)
	b := &backoff{base: 500 * time.Millisecond, max: 30 * time.Second}
	got, err := s.readEvents(body, key, id, b)
	if got || ctx.Err() != nil {
		s.mu.Lock()
		delete(s.lastIDs, key)
		s.mu.Unlock()
		return
	}
	s.follow(key, b, err, false)
}

// follow resumes the stream of request key in the background until its
// response arrives (on that stream or any other), the stream proves
// unresumable, or its retry budget is spent.
// With now set, the first attempt goes out at once.
func (s *streamable) follow(key string, b *backoff, lastErr error, now bool) {
	ctx, cancel := context.WithCancel(s.ctx)
	s.mu.Lock()
	s.followers[key] = cancel
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.followers, key)
			delete(s.lastIDs, key)
			s.mu.Unlock()
			cancel()
		}()
		id := json.RawMessage(key)
		err := lastErr
		for ctx.Err() == nil {
			s.mu.Lock()
			last := s.lastIDs[key]
			s.mu.Unlock()
			if last == "" {
				s.c.failCall(id, fmt.Errorf("%w: the response stream ended before the response (%v) and cannot be resumed", ErrStreamFailed, err))
				return
			}
			if b.attempt >= s.maxRetries() {
				s.c.failCall(id, fmt.Errorf("%w: the response stream could not be resumed after %d tries: %v", ErrStreamFailed, b.attempt, err))
				return
			}
			if !now && !sleepCtx(ctx, b.next()) {
				return
			}
			now = false
			var got bool
			if got, err = s.resumeGet(ctx, key, id, b); got {
				return
			}
		}
	}()
}

func (s *streamable) maxRetries() int {
	if s.c.cfg.StreamMaxRetries > 0 {
		return s.c.cfg.StreamMaxRetries
	}
	return 8
}

// resumeGet reopens a stream with GET and Last-Event-ID and reads it.
func (s *streamable) resumeGet(ctx context.Context, key string, related json.RawMessage, b *backoff) (bool, error) {
	req, err := s.newRequest(ctx, http.MethodGet, nil, false)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	if last := s.lastIDs[key]; last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	s.mu.Unlock()
	resp, err := s.c.do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, &HTTPError{Method: http.MethodGet, URL: redact.URL(s.c.cfg.URL), Status: resp.StatusCode, Body: bodyExcerpt(resp.Body)}
	}
	return s.readEvents(resp.Body, key, related, b)
}

// runGetStream keeps the standalone stream for server-initiated messages
// open for the life of the session. It has no overall deadline, only an idle
// timeout that any byte resets; it reconnects with backoff (the server's
// retry value when given), resumes with Last-Event-ID, and fails the
// transport only after StreamMaxRetries fruitless attempts. A 405 means the
// server offers no such stream.
func (s *streamable) runGetStream() {
	idle := s.c.cfg.StreamIdleTimeout
	if idle <= 0 {
		idle = 5 * time.Minute
	}
	b := &backoff{base: 500 * time.Millisecond, max: 30 * time.Second}
	mySID, _ := s.session()
	for s.ctx.Err() == nil {
		status, err := s.getOnce(idle, b)
		if sid, _ := s.session(); sid != mySID {
			return // the session was renewed; its own stream took over
		}
		switch {
		case s.ctx.Err() != nil:
			return
		case status == http.StatusMethodNotAllowed:
			s.c.log.Debug("the server offers no standalone SSE stream (405)")
			return
		case status == http.StatusNotFound && mySID != "":
			if rerr := s.renew(s.ctx, mySID, nil); rerr != nil {
				s.finish(fmt.Errorf("%w: re-initializing failed: %w", ErrSessionExpired, rerr))
			}
			return // renew opened a new GET stream
		}
		if b.attempt >= s.maxRetries() {
			s.c.log.Error("the notification stream failed", "tries", b.attempt, "err", err)
			s.finish(fmt.Errorf("%w: the notification stream failed after %d tries: %v", ErrStreamFailed, b.attempt, err))
			return
		}
		d := b.next()
		s.c.log.Debug("notification stream ended; reconnecting", "err", err, "delay_ms", d.Milliseconds())
		if !sleepCtx(s.ctx, d) {
			return
		}
	}
}

// getOnce opens the standalone stream once and reads it until it ends.
func (s *streamable) getOnce(idle time.Duration, b *backoff) (int, error) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	req, err := s.newRequest(ctx, http.MethodGet, nil, false)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	if last := s.lastIDs[getStreamKey]; last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	s.mu.Unlock()
	// The idle clock runs from the request on: a server that accepts the
	// GET but never sends headers is as silent as one that sends nothing.
	idleTimer := time.AfterFunc(idle, cancel)
	defer idleTimer.Stop()
	resp, err := s.c.do(req)
	s.markGetReady()
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, &HTTPError{Method: http.MethodGet, URL: redact.URL(s.c.cfg.URL), Status: resp.StatusCode, Body: bodyExcerpt(resp.Body)}
	}
	idleTimer.Reset(idle)
	ir := &idleReader{r: resp.Body, idle: idle, timer: idleTimer}
	// Responses replayed here (a resumed POST stream) still reach their call.
	_, err = s.readEvents(ir, getStreamKey, nil, b)
	return resp.StatusCode, err
}

// renew replaces an upstream session the server no longer knows: calls it
// had accepted fail with ErrSessionExpired (they are never replayed), a new
// session is initialized, and a new standalone stream opened. Concurrent
// callers that saw the same session expire wait for one renewal.
func (s *streamable) renew(ctx context.Context, oldSID string, keep json.RawMessage) error {
	select {
	case s.renewing <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.renewing }()
	s.mu.Lock()
	if s.sessionID != oldSID {
		s.mu.Unlock()
		return nil // already renewed
	}
	s.c.log.Warn("upstream session expired; starting a new one")
	var lost []string
	for id, sid := range s.accepted {
		if sid == oldSID && id != string(keep) {
			lost = append(lost, id)
			delete(s.accepted, id)
		}
	}
	// The old id stays until the new initialize replaces it, so that
	// concurrent requests see 404 and wait here rather than go out with no
	// session at all.
	s.getOpen = false
	s.lastIDs = map[string]string{}
	s.mu.Unlock()
	for _, id := range lost {
		s.c.failCall(json.RawMessage(id), ErrSessionExpired)
	}
	return s.c.handshake(ctx)
}

// close ends the session: streams stop, then a DELETE (bounded, 405
// tolerated) tells the server.
func (s *streamable) close() error {
	sid, _ := s.session()
	s.cancel()
	s.wg.Wait()
	if sid != "" {
		ctx, cancel := context.WithTimeout(context.Background(), closeDeleteTimeout)
		defer cancel()
		if req, err := s.newRequest(ctx, http.MethodDelete, nil, false); err == nil {
			if resp, err := s.c.do(req); err == nil {
				resp.Body.Close()
			}
		}
	}
	s.finish(ErrClosed)
	return nil
}
