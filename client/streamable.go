package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/mcphub/mcphub/internal/goroutines"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/redact"
)

// getStreamKey names the standalone GET stream in State.LastEventIDs; POST
// streams are named by their request id.
const getStreamKey = "get"

// closeDeleteTimeout bounds the DELETE that ends an upstream session.
const closeDeleteTimeout = 5 * time.Second

// streamable is the Streamable HTTP transport (protocol 2025-03-26 and later).
type streamable struct {
	c *Conn

	ctx    context.Context // the transport's life; cancelled by close
	cancel context.CancelFunc
	group  goroutines.Group // stream readers and drains; close waits for them
	doneState

	mu        sync.Mutex
	sessionID string
	version   string
	lastIDs   map[string]string
	accepted  map[string]string             // request id → session it was accepted on
	followers map[string]context.CancelFunc // request id → its stream's background resumption
	viaGet    map[string]struct{}           // requests whose response may come on the GET stream (see offGet)
	getOpen   bool
	getReady  chan struct{} // closed when the standalone stream first answers

	renewing chan struct{} // a one-slot lock: one re-initialization at a time
}

func newStreamable(c *Conn) *streamable {
	ctx, cancel := context.WithCancel(c.ctx)
	return &streamable{
		c: c, ctx: ctx, cancel: cancel, doneState: newDoneState(),
		lastIDs: map[string]string{}, accepted: map[string]string{}, followers: map[string]context.CancelFunc{},
		viaGet:   map[string]struct{}{},
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
	s.group.Go(s.runGetStream)
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

// post sends one message and hands the response to handleReply.
func (s *streamable) post(ctx context.Context, m *jsonrpc.Message, data []byte) error {
	// initialize and the era probe go out without a session.
	isInit := m.Method == "initialize" || m.Method == "server/discover"
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
	if m.Method == "server/discover" || s.c.Modern() {
		jsonrpc.SetModernHeaders(req.Header, m)
		if m.Method == "tools/call" {
			s.c.paramHeaders(req.Header, m.Params)
		}
	}
	sid := req.Header.Get("Mcp-Session-Id")
	if m.IsRequest() {
		// Until the reply shows that it carries the response, the
		// response may come on the GET stream (202, or a server that
		// answers there), even before the reply is read.
		s.mu.Lock()
		s.viaGet[string(m.ID)] = struct{}{}
		s.mu.Unlock()
	}
	resp, err := s.c.do(req)
	if err != nil {
		stopCaller()
		cancel()
		if s.ctx.Err() != nil {
			return ErrClosed
		}
		err = fmt.Errorf("POST %s: %w", redact.URL(s.c.cfg.URL), err)
		if ctx.Err() == nil {
			// Not the caller giving up: the server could not be reached.
			s.c.troubled(err)
		}
		return err
	}
	return s.handleReply(m, &postReply{
		ctx:        rctx,
		resp:       resp,
		sid:        sid,
		stopCaller: stopCaller,
		release: func() {
			resp.Body.Close()
			stopCaller()
			cancel()
		},
	})
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
	select {
	case <-s.done():
		// A renewal before this one ended the transport (the server
		// now keeps no sessions): nothing is sent without one.
		if err := s.err(); err != nil {
			return err
		}
		return ErrClosed
	default:
	}
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
	err := s.c.handshake(ctx)
	if errors.Is(err, ErrNoSessionEra) {
		// The server now answers without a session: what this
		// connection was made for is gone, and every later request
		// would be refused. It ends, so its owner sees why.
		s.finish(fmt.Errorf("%w: re-initializing failed: %w", ErrSessionExpired, err))
	}
	return err
}

// forgetCall stops what still works for a call whose caller no longer
// waits: the background resumption of its stream, or the wait for its
// response on the GET stream.
func (s *streamable) forgetCall(key string) {
	s.mu.Lock()
	stop := s.followers[key]
	delete(s.viaGet, key)
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// close ends the session: streams stop, then a DELETE (bounded, 405
// tolerated) tells the server, unless Config.KeepSession leaves the session
// to its owner.
func (s *streamable) close() error {
	sid, _ := s.session()
	s.cancel()
	s.group.Stop()
	if sid != "" && !s.c.cfg.KeepSession {
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
