package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// serveEndpoint serves one MCP endpoint: the merged /mcp (endpoint "") or a
// server's own /{server}/mcp.
func (h *Hub) serveEndpoint(w http.ResponseWriter, r *http.Request, endpoint string) {
	switch r.Method {
	case http.MethodPost:
		h.servePost(w, r, endpoint)
	case http.MethodGet:
		h.serveGet(w, r, endpoint)
	case http.MethodDelete:
		h.serveDelete(w, r, endpoint)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE, OPTIONS")
		httpError(w, http.StatusMethodNotAllowed, "method not allowed: use POST, GET or DELETE")
	}
}

// validSessionID reports whether id has the form mcphub mints: 26
// characters of base32 text.
func validSessionID(id string) bool {
	if len(id) != 26 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'A' && c <= 'Z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// lookupSession finds the session named by the request's Mcp-Session-Id on
// this endpoint, answering 400 (missing or malformed) or 404 (unknown or
// ended) itself.
func (h *Hub) lookupSession(w http.ResponseWriter, r *http.Request, endpoint string) *session {
	id := r.Header.Get("Mcp-Session-Id")
	switch {
	case len(r.Header.Values("Mcp-Session-Id")) > 1 && !allSame(r.Header.Values("Mcp-Session-Id")):
		httpError(w, http.StatusBadRequest, "Bad Request: several different Mcp-Session-Id headers")
		return nil
	case id == "":
		httpError(w, http.StatusBadRequest, "Bad Request: Mcp-Session-Id header is required (send initialize first to get one)")
		return nil
	case !validSessionID(id):
		httpError(w, http.StatusBadRequest, "Bad Request: malformed Mcp-Session-Id")
		return nil
	}
	h.mu.RLock()
	s := h.sessions[id]
	h.mu.RUnlock()
	if s == nil || s.endpoint != endpoint {
		httpError(w, http.StatusNotFound, "Session not found: it ended or belongs to another endpoint; initialize a new one")
		return nil
	}
	s.touch()
	return s
}

func allSame(vs []string) bool {
	for _, v := range vs[1:] {
		if v != vs[0] {
			return false
		}
	}
	return true
}

// checkVersionHeader enforces MCP-Protocol-Version: absent means 2025-03-26
// (or the negotiated version), present must be a version mcphub serves.
func checkVersionHeader(w http.ResponseWriter, r *http.Request) bool {
	v := r.Header.Get("MCP-Protocol-Version")
	if v == "" || jsonrpc.IsSessionVersion(v) {
		return true
	}
	httpError(w, http.StatusBadRequest, fmt.Sprintf("Bad Request: Unsupported protocol version %q (supported versions: %s)", v, strings.Join(jsonrpc.SessionVersions, ", ")))
	return false
}

func (h *Hub) servePost(w http.ResponseWriter, r *http.Request, endpoint string) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	var msg *jsonrpc.Message
	var body []byte
	defer func() {
		if !h.log.Enabled(r.Context(), slog.LevelInfo) {
			return
		}
		attrs := []any{"endpoint", endpointName(endpoint), "status_code", rec.status, "latency_ms", time.Since(start).Milliseconds()}
		if msg != nil {
			attrs = append(attrs, "mcp_method", logValue(msg.Method), "rpc_id", logValue(string(msg.ID)))
		}
		if h.registry().Hub.AuditLogBodies {
			attrs = append(attrs, "request_body", string(body), "response_body", string(rec.body))
		}
		h.log.Info("POST", attrs...)
	}()
	w = rec
	rec.keepBody = h.registry().Hub.AuditLogBodies

	if mt := mediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		httpError(w, http.StatusUnsupportedMediaType, "Unsupported Media Type: Content-Type must be application/json")
		return
	}
	limit := h.registry().Hub.MaxBodyBytes
	var err error
	body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.log.Warn("refused a request body over the limit", "limit_bytes", limit)
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("Request Entity Too Large: bodies are limited to %d bytes ([hub] max_body_bytes)", limit))
			return
		}
		if errors.Is(err, errSlowBody) {
			h.log.Warn("cut off a request body that arrived too slowly", "bytes", len(body))
			httpError(w, http.StatusRequestTimeout, fmt.Sprintf("Request Timeout: the body arrived too slowly; it must arrive within %s plus one second per %d KiB", bodyGrace, minBodyRate>>10))
			return
		}
		httpError(w, http.StatusBadRequest, "Bad Request: could not read the body")
		return
	}
	if !checkVersionHeader(w, r) {
		return
	}
	if jsonrpc.IsBatch(body) {
		writeRPCError(w, http.StatusBadRequest, nil, jsonrpc.NewError(jsonrpc.CodeInvalidRequest,
			"Invalid Request: JSON-RPC batches are not supported; send one message per POST"))
		return
	}
	m, derr := jsonrpc.Decode(body)
	if derr != nil {
		var rpcErr *jsonrpc.Error
		errors.As(derr, &rpcErr)
		var id json.RawMessage
		if m != nil {
			id = m.ID
		}
		writeRPCError(w, http.StatusBadRequest, id, rpcErr)
		return
	}
	msg = m
	if m.Method == "initialize" {
		if !m.IsRequest() {
			httpError(w, http.StatusBadRequest, "Bad Request: initialize must be a request")
			return
		}
		h.initialize(w, r, endpoint, m)
		return
	}
	s := h.lookupSession(w, r, endpoint)
	if s == nil {
		return
	}
	switch m.Kind() {
	case jsonrpc.KindNotification:
		h.clientNotification(s, m)
		w.WriteHeader(http.StatusAccepted)
	case jsonrpc.KindResponse, jsonrpc.KindErrorResponse:
		if !s.reply(m) {
			h.log.Debug("a client response matched no pending request", "session", s.id, "rpc_id", string(m.ID))
		}
		w.WriteHeader(http.StatusAccepted)
	case jsonrpc.KindRequest:
		h.clientRequest(w, r, s, m)
	}
}

// clientRequest runs one request and answers it as JSON or as an SSE stream.
func (h *Hub) clientRequest(w http.ResponseWriter, r *http.Request, s *session, m *jsonrpc.Message) {
	acc := parseAccept(acceptHeader(r))
	mode := replyModeFor(acc, h.registry().Hub.PostSSE, m)
	h.log.Debug("reply mode", "method", m.Method, "accept", acc.mode.String(), "prefers_sse", acc.prefersSSE, "mode", mode, "session", s.id)

	// The call belongs to the session, not to the HTTP request: a client
	// whose SSE connection drops may resume it. Only a JSON reply, which
	// cannot be resumed, ends with its connection.
	ctx, cancelCause := context.WithCancelCause(s.ctx)
	cancel := func() { cancelCause(nil) }
	untrack, err := s.track(m.ID, cancelCause)
	if err != nil {
		cancel()
		h.log.Warn("refused a request", "session", s.id, "method", m.Method, "err", err)
		writeRPCError(w, http.StatusOK, m.ID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, err.Error()))
		return
	}
	// reply runs the call and encodes its answer; nil when the client
	// cancelled it (no response, as the spec asks).
	reply := func(peer *sessionPeer) ([]byte, int) {
		res, err := h.route(ctx, s, m, peer)
		// The id is free again before the client can see the answer.
		untrack()
		switch {
		case err != nil && errors.Is(context.Cause(ctx), errClientCancelled):
			return nil, 0
		case err != nil:
			e, status := h.rpcError(err, s.endpoint)
			return jsonrpc.NewErrorResponse(m.ID, e).Encode(), status
		}
		return jsonrpc.NewResponse(m.ID, res).Encode(), http.StatusOK
	}

	switch mode {
	case replyJSON:
		defer cancel()
		defer untrack()
		stop := context.AfterFunc(r.Context(), cancel)
		defer stop()
		// The call may outlast the response's write deadline, which over
		// HTTP/2 would reset the stream mid-call: it is lifted for the
		// call and set again for the write.
		rc := http.NewResponseController(w)
		rc.SetWriteDeadline(time.Time{})
		body, status := reply(&sessionPeer{s: s, send: s.deliver})
		rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		writeJSONReply(w, status, m.ID, body)
	case replySSE:
		st, err := h.openStream(s, true, m.ID)
		if err != nil {
			cancel()
			untrack()
			httpError(w, http.StatusNotFound, "Session not found")
			return
		}
		cursor, _ := st.attach(-1)
		go func() {
			defer cancel()
			defer untrack()
			body, _ := reply(&sessionPeer{h: h, s: s, st: st, send: func(b []byte) { st.append(b, false) }})
			if body == nil {
				st.finish()
				return
			}
			st.append(body, true)
		}()
		h.serveReply(w, r, s, st, cursor)
	case replyLazy:
		defer untrack()
		l := &lazyStream{h: h, s: s, id: m.ID, w: w, r: r, keep: context.AfterFunc(r.Context(), cancel)}
		defer l.keep()
		timer := time.AfterFunc(streamAfter, func() { l.open() })
		body, status := reply(&sessionPeer{h: h, s: s, lazy: l, send: l.send})
		timer.Stop()
		served, asJSON := l.finish(body)
		cancel()
		switch {
		case !asJSON:
			<-served
		case l.failure != nil:
			httpError(w, http.StatusNotFound, "Session not found")
		default:
			writeJSONReply(w, status, m.ID, body)
		}
	}
}

// serveReply sends a POST's SSE stream and forgets it once wholly delivered.
func (h *Hub) serveReply(w http.ResponseWriter, r *http.Request, s *session, st *stream, cursor int) {
	sseHeaders(w)
	flush(w)
	delivered, err := st.serve(w, cursor, h.opts.Heartbeat, r.Context().Done(), s.ctx.Done(), nil)
	if delivered {
		s.forgetStream(st)
		return
	}
	h.log.Debug("a reply stream ended before its response", "session", s.id, "stream", st.id, "err", err, "client_gone", r.Context().Err() != nil)
}

// writeJSONReply writes a JSON reply; a nil body (a cancelled request) gets
// a JSON-RPC error, since an HTTP response needs a body.
func writeJSONReply(w http.ResponseWriter, status int, id json.RawMessage, body []byte) {
	if body == nil {
		writeRPCError(w, http.StatusOK, id, jsonrpc.NewError(codeServerError, "request cancelled"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	// With its length known, the server can send the reply as soon as it
	// is written, before the call's clean-up runs.
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// acceptHeader joins every Accept line: several lines mean the same as one
// comma-separated list (RFC 9110 §5.3).
func acceptHeader(r *http.Request) string {
	return strings.Join(r.Header.Values("Accept"), ",")
}

// flush sends what w holds through its ResponseController, which reaches
// the server's writer through any wrapper that has Unwrap.
func flush(w http.ResponseWriter) error { return http.NewResponseController(w).Flush() }

// serveGet opens a standalone SSE stream, or resumes a stream with
// Last-Event-ID: its missed events are replayed, then it continues live.
func (h *Hub) serveGet(w http.ResponseWriter, r *http.Request, endpoint string) {
	start := time.Now()
	if parseAccept(acceptHeader(r)).mode < acceptSSEOnly {
		httpError(w, http.StatusNotAcceptable, "Not Acceptable: a GET must accept text/event-stream")
		return
	}
	if !checkVersionHeader(w, r) {
		return
	}
	s := h.lookupSession(w, r, endpoint)
	if s == nil {
		return
	}
	var (
		st     *stream
		cursor int
		err    error
	)
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		st, cursor, err = s.resumeStream(last)
	} else if st, err = h.openStream(s, false, nil); err == nil {
		cursor, err = st.attach(-1)
	}
	switch {
	case errors.Is(err, errStreamBusy):
		h.log.Warn("refused a second connection for a stream", "session", s.id, "last_event_id", logValue(r.Header.Get("Last-Event-ID")))
		httpError(w, http.StatusConflict, "Conflict: that stream is already being served on another connection")
		return
	case errors.Is(err, errTooManyStreams):
		h.log.Warn("refused a stream over the per-session limit", "session", s.id, "err", err)
		httpError(w, http.StatusTooManyRequests, err.Error())
		return
	case errors.Is(err, errSessionEnded):
		httpError(w, http.StatusNotFound, "Session not found")
		return
	case err != nil:
		h.log.Warn("refused a stream resumption", "session", s.id, "last_event_id", logValue(r.Header.Get("Last-Event-ID")), "err", err)
		httpError(w, http.StatusBadRequest, "Bad Request: "+err.Error())
		return
	}
	sseHeaders(w)
	flush(w)
	var pull func(*stream)
	if !st.post {
		pull = s.pull
	}
	if delivered, _ := st.serve(w, cursor, h.opts.Heartbeat, r.Context().Done(), s.ctx.Done(), pull); delivered {
		s.forgetStream(st)
	}
	h.log.Info("GET stream closed", "endpoint", endpointName(endpoint), "session", s.id, "stream", st.id,
		"status_code", http.StatusOK, "latency_ms", time.Since(start).Milliseconds())
}

func (h *Hub) serveDelete(w http.ResponseWriter, r *http.Request, endpoint string) {
	start := time.Now()
	if !checkVersionHeader(w, r) {
		return
	}
	s := h.lookupSession(w, r, endpoint)
	if s == nil {
		return
	}
	h.endSession(s)
	w.WriteHeader(http.StatusNoContent)
	h.log.Info("DELETE", "endpoint", endpointName(endpoint), "session", s.id, "status_code", http.StatusNoContent,
		"latency_ms", time.Since(start).Milliseconds())
}

// logValue bounds a client-chosen value in a log line: a 4 MiB id must not
// make a 4 MiB line.
func logValue(v string) string {
	const max = 200
	if len(v) <= max {
		return v
	}
	return v[:max] + "…(" + strconv.Itoa(len(v)) + " bytes)"
}

func endpointName(endpoint string) string {
	if endpoint == "" {
		return "/mcp"
	}
	return "/" + endpoint + "/mcp"
}

// statusRecorder remembers the status (and, for the audit log, the body) of
// a response while passing everything through, flushes included.
type statusRecorder struct {
	http.ResponseWriter
	status   int
	keepBody bool
	body     []byte
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.keepBody && len(s.body) < 64<<10 {
		s.body = append(s.body, b...)
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() { flush(s.ResponseWriter) }

// Unwrap lets http.ResponseController reach the real writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
