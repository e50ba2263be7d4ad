package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/redact"
	"github.com/mcphub/mcphub/internal/sse"
)

// The SSE streams of the Streamable HTTP transport: reading them, resuming a
// POST's stream that ended before its response, and keeping the standalone
// GET stream open for the life of the session.

// readEvents reads an SSE stream until it ends, delivering every message.
// It reports whether the response to request id (if any) arrived.
func (s *streamable) readEvents(body io.Reader, key string, related json.RawMessage, b *backoff) (gotResponse bool, err error) {
	r := sse.NewReader(body, s.c.maxMessage())
	defer r.Release()
	for {
		ev, err := r.Next()
		if err != nil {
			return gotResponse, err
		}
		if ev.HasRetry {
			b.server = time.Duration(ev.Retry) * time.Millisecond
		}
		if ev.HasID && ev.ID != "" && !s.c.Modern() {
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
// the caller waits for it either way. An event over the size limit fails
// the call at once: a resumption would only replay it.
func (s *streamable) followPostStream(ctx context.Context, body io.Reader, id json.RawMessage) {
	key := string(id)
	b := &backoff{base: 500 * time.Millisecond, max: 30 * time.Second}
	got, err := s.readEvents(body, key, id, b)
	if got || ctx.Err() != nil || s.failIfTooLarge(id, err) {
		s.mu.Lock()
		delete(s.lastIDs, key)
		s.mu.Unlock()
		return
	}
	if s.c.Modern() {
		// The stateless revision resumes no stream: the request is lost
		// and the caller makes it again if it wants.
		s.c.failCall(id, fmt.Errorf("%w: the response stream ended before the response", ErrStreamFailed))
		return
	}
	s.follow(key, b, err, false)
}

// failIfTooLarge fails call id when err reports an event over the size
// limit on its stream, and reports whether it did.
func (s *streamable) failIfTooLarge(id json.RawMessage, err error) bool {
	if !errors.Is(err, sse.ErrEventTooLarge) {
		return false
	}
	limit := s.c.maxMessage()
	s.c.log.Error("an event over the size limit on a response stream failed its call", "limit_bytes", limit, "rpc_id", string(id))
	s.c.failCall(id, tooLarge(limit))
	return true
}

// follow resumes the stream of request key in the background until its
// response arrives (on that stream or any other), the stream proves
// unresumable, its retry budget is spent, or the caller stops waiting
// (forgetCall). With now set, the first attempt goes out at once.
//
// A stream that ended without an event id cannot be resumed, but the
// server may still deliver the response on a new stream of the session
// (SSE polling by a server that keeps no event ids): one fresh GET, without
// Last-Event-ID, is tried before the call fails. If that stream carries
// event ids, it is resumed like any other.
func (s *streamable) follow(key string, b *backoff, lastErr error, now bool) {
	ctx, cancel := context.WithCancel(s.ctx)
	s.mu.Lock()
	s.followers[key] = cancel
	s.mu.Unlock()
	forget := func() {
		s.mu.Lock()
		delete(s.followers, key)
		delete(s.lastIDs, key)
		s.mu.Unlock()
		cancel()
	}
	// Closing: the connection fails every pending call itself.
	started := s.group.Go(func() {
		defer forget()
		id := json.RawMessage(key)
		err := lastErr
		triedFresh := false
		for ctx.Err() == nil {
			s.mu.Lock()
			last := s.lastIDs[key]
			s.mu.Unlock()
			if last == "" && triedFresh {
				s.c.failCall(id, fmt.Errorf("%w: the response stream ended before the response (%v) and cannot be resumed; a fresh GET did not bring it either: %v", ErrStreamFailed, lastErr, err))
				return
			}
			if last == "" {
				triedFresh = true
				if b.server > 0 && !sleepCtx(ctx, b.server) {
					return
				}
				var got bool
				if got, err = s.resumeGet(ctx, key, id, b); got || s.failIfTooLarge(id, err) {
					return
				}
				if s.oneGetOpen(err) {
					// The server serves one GET stream per session and
					// ours is open: the response can only come there,
					// and the call waits for it within its own timeout.
					s.c.log.Debug("a response stream ended without an event id; waiting for the response on the open GET stream", "rpc_id", key)
					return
				}
				continue
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
			if got, err = s.resumeGet(ctx, key, id, b); got || s.failIfTooLarge(id, err) {
				return
			}
		}
	})
	if !started {
		forget()
	}
}

// oneGetOpen reports whether err is a server's refusal of a second GET
// stream (409 Conflict) while the session's standalone stream is open.
func (s *streamable) oneGetOpen(err error) bool {
	var he *HTTPError
	if !errors.As(err, &he) || he.Status != http.StatusConflict {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.getOpen
}

func (s *streamable) maxRetries() int {
	if s.c.cfg.StreamMaxRetries > 0 {
		return s.c.cfg.StreamMaxRetries
	}
	return 8
}

// resumeGet reopens a stream with GET and Last-Event-ID (none if the
// stream has no event id yet) and reads it.
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
		if ctx.Err() == nil {
			s.c.troubled(err)
		}
		return false, err
	}
	defer resp.Body.Close()
	if ae := authRequired(resp, http.MethodGet, redact.URL(s.c.cfg.URL)); ae != nil {
		s.c.troubled(ae)
		return false, ae
	}
	if resp.StatusCode != http.StatusOK {
		return false, &HTTPError{Method: http.MethodGet, URL: redact.URL(s.c.cfg.URL), Status: resp.StatusCode, Body: s.c.bodyExcerpt(resp.Body)}
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
		case errors.As(err, new(*AuthRequiredError)):
			// Retrying cannot help until someone signs in.
			s.c.log.Warn("the notification stream was refused: the server asks for sign-in")
			s.finish(err)
			return
		case errors.Is(err, sse.ErrEventTooLarge):
			s.getTooLarge()
		}
		// The stream dropped or could not be opened: the server may be
		// gone, which a health check tells at once.
		if err == nil {
			err = errors.New("the notification stream ended")
		}
		s.c.troubled(err)
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

// getTooLarge handles an event over the size limit on the standalone
// stream. The calls whose response can only come there (their POST was
// answered 202) fail at once, and the stream is reopened without
// Last-Event-ID: resuming it would replay the same event every time. What
// the server sent between that event and the reopening is lost, and the log
// says so.
func (s *streamable) getTooLarge() {
	limit := s.c.maxMessage()
	s.mu.Lock()
	delete(s.lastIDs, getStreamKey)
	waiting := s.viaGet
	s.viaGet = map[string]struct{}{}
	s.mu.Unlock()
	for id := range waiting {
		s.c.failCall(json.RawMessage(id), tooLarge(limit))
	}
	s.c.log.Error("an event over the size limit ended the notification stream; it is reopened without resuming, so events sent meanwhile are lost",
		"limit_bytes", limit, "calls_failed", len(waiting))
	s.c.stateChanged()
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
	if ae := authRequired(resp, http.MethodGet, redact.URL(s.c.cfg.URL)); ae != nil {
		return resp.StatusCode, ae
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, &HTTPError{Method: http.MethodGet, URL: redact.URL(s.c.cfg.URL), Status: resp.StatusCode, Body: s.c.bodyExcerpt(resp.Body)}
	}
	s.c.active()
	idleTimer.Reset(idle)
	ir := &idleReader{r: resp.Body, idle: idle, timer: idleTimer}
	// Responses replayed here (a resumed POST stream) still reach their call.
	_, err = s.readEvents(ir, getStreamKey, nil, b)
	return resp.StatusCode, err
}
