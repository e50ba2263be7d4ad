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
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/redact"
)

// The POST's response side of the Streamable HTTP transport: its status, the
// session it establishes, and its body: JSON (one message, or several
// newline-delimited) or an SSE stream.

// drainTimeout bounds reading what a POST's stream sends after its response;
// a server that keeps the stream open past it loses the connection.
const drainTimeout = 5 * time.Second

// postReply is one POST's response, with what it takes to let it go.
type postReply struct {
	ctx  context.Context // the POST's context, for the stream that follows
	resp *http.Response
	sid  string // the session the POST went out on; "" for none
	// stopCaller detaches the POST from the caller's context.
	stopCaller func() bool
	// release closes the body and ends the POST's context.
	release func()
}

// handleReply turns a POST's status into an outcome: a 404 on a live
// session and other failures become errors, initialize's answer sets the
// session, and a request's body is read for its response.
func (s *streamable) handleReply(m *jsonrpc.Message, r *postReply) error {
	resp := r.resp
	if resp.StatusCode == http.StatusNotFound && r.sid != "" {
		r.release()
		return &sessionGone{sid: r.sid}
	}
	if ae := authRequired(resp, http.MethodPost, redact.URL(s.c.cfg.URL)); ae != nil {
		r.release()
		s.c.troubled(ae)
		return ae
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer r.release()
		return s.httpFailure(resp, m)
	}
	s.c.active()
	if m.Method == "initialize" {
		// A server may run without sessions; then the id is "" and later
		// requests carry none.
		s.mu.Lock()
		s.sessionID = resp.Header.Get("Mcp-Session-Id")
		s.mu.Unlock()
		s.c.stateChanged()
	}
	if m.IsRequest() {
		s.mu.Lock()
		s.accepted[string(m.ID)] = r.sid
		s.mu.Unlock()
	}
	if resp.StatusCode == http.StatusAccepted || !m.IsRequest() {
		// A request answered 202 gets its response on the GET stream.
		r.release()
		return nil
	}
	s.offGet(m.ID)
	return s.readReply(m, r)
}

// offGet notes that request id's response comes on its own POST's reply,
// not on the GET stream.
func (s *streamable) offGet(id json.RawMessage) {
	s.mu.Lock()
	delete(s.viaGet, string(id))
	s.mu.Unlock()
}

// readReply reads a request's reply by its Content-Type: JSON, or an SSE
// stream, either of which may carry other messages before the response.
func (s *streamable) readReply(m *jsonrpc.Message, r *postReply) error {
	resp := r.resp
	ctype := resp.Header.Get("Content-Type")
	if ctype != "text/event-stream" && ctype != "application/json" {
		ctype, _, _ = mime.ParseMediaType(ctype) // parameters, or odd case
	}
	switch ctype {
	case "application/json":
		body := &eofWatch{r: resp.Body}
		answered, err := s.readJSON(body, m.ID)
		if err != nil || !answered {
			r.release()
		} else {
			s.drainAfter(r, body)
		}
		if err == nil && !answered && s.c.Modern() {
			// As on a stream that ended early: nothing else will bring
			// the response of a stateless request.
			err = fmt.Errorf("%w: the response body ended before the response", ErrStreamFailed)
		}
		return err
	case "text/event-stream":
		// Read on the caller's goroutine: the caller waits for this
		// response anyway, and a hand-off to another goroutine would only
		// add a wake-up to every call's latency.
		body := &eofWatch{r: resp.Body}
		s.followPostStream(r.ctx, body, m.ID)
		s.drainAfter(r, body)
		return nil
	default:
		r.release()
		return fmt.Errorf("POST %s: unexpected Content-Type %q", redact.URL(s.c.cfg.URL), s.c.excerpt(resp.Header.Get("Content-Type"), false, 100))
	}
}

// drainAfter lets a reply go once the caller has its response. What
// follows the response (normally just the end of the body) is drained in
// the background if it has not arrived with it, so the connection goes back
// to the pool; the caller no longer holds the reply up.
func (s *streamable) drainAfter(r *postReply, body *eofWatch) {
	r.stopCaller()
	if body.eof {
		// The body ended with the response (its end was already read
		// with it): nothing left to drain.
		r.release()
		return
	}
	drain := func() {
		defer r.release()
		stop := time.AfterFunc(drainTimeout, r.release)
		defer stop.Stop()
		io.Copy(io.Discard, io.LimitReader(r.resp.Body, 1<<20))
	}
	if !s.group.Go(drain) {
		r.release() // closing: the body is not worth reading
	}
}

// httpFailure turns a non-2xx reply into an error. A JSON-RPC error
// response for this request in the body is delivered as the call's answer.
func (s *streamable) httpFailure(resp *http.Response, m *jsonrpc.Message) error {
	const max = 64 << 10
	body, _ := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if m.IsRequest() {
		if em, err := jsonrpc.Decode(body); err == nil && em.Error != nil && bytes.Equal(em.ID, m.ID) {
			s.c.active()
			s.c.deliver(em, nil)
			return nil
		}
	}
	cut := len(body) > max
	if cut {
		body = body[:max]
	}
	return &HTTPError{Method: http.MethodPost, URL: redact.URL(s.c.cfg.URL), Status: resp.StatusCode, Body: s.c.excerpt(strings.TrimSpace(string(body)), cut, bodyShow),
		Scope: insufficientScope(resp)}
}

// readJSON reads a JSON reply to request id: one message, or several,
// newline-delimited, as a stateless server may send a notification or a
// request of its own before the response. Each is handled as one on the
// request's SSE stream would be; the response ends the reading, and what
// follows it is drained unread. It reports whether the response came. A message
// over the size limit fails the call at once; its excess is not read (the
// connection is dropped, not drained).
func (s *streamable) readJSON(body io.Reader, id json.RawMessage) (answered bool, err error) {
	limit := s.c.maxMessage()
	r := jsonrpc.NewReader(body, limit)
	for {
		m, _, err := r.Next()
		var rpcErr *jsonrpc.Error
		switch {
		case err == io.EOF:
			return false, nil
		case errors.Is(err, jsonrpc.ErrTooLarge):
			return false, tooLarge(limit)
		case errors.As(err, &rpcErr):
			return false, fmt.Errorf("upstream sent an invalid message: %w", err)
		case err != nil:
			return false, fmt.Errorf("read response: %w", s.c.scrubErr(err))
		}
		s.receive(m, id)
		if m.IsResponse() && bytes.Equal(m.ID, id) {
			return true, nil
		}
	}
}

// receive hands a message to the connection, clearing the bookkeeping of a
// request once its response is in: a background resumption of its stream
// stops, wherever the response came from.
func (s *streamable) receive(m *jsonrpc.Message, related json.RawMessage) {
	s.c.active()
	if m.IsResponse() {
		s.mu.Lock()
		delete(s.accepted, string(m.ID))
		delete(s.viaGet, string(m.ID))
		stop := s.followers[string(m.ID)]
		s.mu.Unlock()
		if stop != nil {
			stop()
		}
	}
	s.c.deliver(m, related)
}
