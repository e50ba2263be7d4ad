package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// validSessionID reports whether id has the form mcphub mints (newSessionID):
// a version 4 UUID of the RFC 4122 variant in its canonical 36-character
// form. uuid.Parse alone also takes the 32-digit, braced and urn:uuid:
// forms, which mcphub never issues.
func validSessionID(id string) bool {
	if len(id) != 36 {
		return false
	}
	u, err := uuid.Parse(id)
	return err == nil && u.Version() == 4 && u.Variant() == uuid.RFC4122
}

// errMalformedSessionID is the answer to an Mcp-Session-Id that no session
// of this hub could have: the value is not quoted back, since a header may
// carry anything a client put in it.
const errMalformedSessionID = "Bad Request: malformed Mcp-Session-Id: the session ids this hub issues are UUIDs; send initialize without the header to start a session"

// sessionHeader reads a session-era request's Mcp-Session-Id ("" when it
// has none) and answers 400 itself (ok false) when the header is several
// different values, or a value this hub never issued. A session restored
// from the store keeps the id it was given, even one minted before mcphub's
// ids were UUIDs, so a live session's id is always well-formed.
func (e *edge) sessionHeader(w http.ResponseWriter, r *http.Request) (id string, ok bool) {
	if vs := r.Header.Values("Mcp-Session-Id"); len(vs) > 1 && !allSame(vs) {
		httpError(w, http.StatusBadRequest, "Bad Request: several different Mcp-Session-Id headers")
		return "", false
	}
	id = r.Header.Get("Mcp-Session-Id")
	if id != "" && !validSessionID(id) && e.sessions.get(id) == nil {
		httpError(w, http.StatusBadRequest, errMalformedSessionID)
		return "", false
	}
	return id, true
}

// serveEndpoint serves one MCP endpoint: the merged /mcp (endpoint "") or a
// server's own /{server}/mcp.
func (e *edge) serveEndpoint(w http.ResponseWriter, r *http.Request, endpoint string) {
	if e.relayLoop(w, r, endpoint) {
		return
	}
	asked := endpoint
	endpoint, err := permit(e.servers.registry(), callerOf(r.Context()), endpoint)
	if err != nil {
		e.log.Warn("refused a request", "path", r.URL.Path, "caller", callerOf(r.Context()).ID, "why", err.Error())
		httpError(w, http.StatusForbidden, err.Error())
		return
	}
	if name, ok := endpointProfile(endpoint); ok && asked == "" && !e.profileServed(w, name) {
		return
	}
	switch r.Method {
	case http.MethodPost:
		e.servePost(w, r, endpoint)
	case http.MethodGet:
		e.serveGet(w, r, endpoint)
	case http.MethodDelete:
		e.serveDelete(w, r, endpoint)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE, OPTIONS")
		httpError(w, http.StatusMethodNotAllowed, "method not allowed: use POST, GET or DELETE")
	}
}

// lookupSession finds the session named by the request's Mcp-Session-Id on
// this endpoint, answering 400 (missing or malformed) or 404 (unknown or
// ended) itself.
func (e *edge) lookupSession(w http.ResponseWriter, r *http.Request, endpoint string) *session {
	id, ok := e.sessionHeader(w, r)
	if !ok {
		return nil
	}
	return e.findSession(w, r, id, endpoint, nil)
}

// findSession is lookupSession for an id sessionHeader has read; body is a
// POST's, already read. On a replica of a team hub, a session another
// replica holds is served there (fromCluster).
func (e *edge) findSession(w http.ResponseWriter, r *http.Request, id, endpoint string, body []byte) *session {
	if id == "" {
		httpError(w, http.StatusBadRequest, "Bad Request: Mcp-Session-Id header is required (send initialize first to get one)")
		return nil
	}
	s := e.sessions.get(id)
	if e.cluster != nil {
		// A replica that was frozen or cut off from the store serves no
		// session before it knows it still holds it.
		if s != nil && !e.cluster.Current(r.Context()) {
			retryLater(w, "Service Unavailable: the hub's store cannot be reached to confirm this session; retry shortly")
			return nil
		}
		if s = e.sessions.get(id); s == nil {
			return e.fromCluster(w, r, id, endpoint, body)
		}
	}
	if s == nil || s.endpoint != endpoint || !s.heldBy(callerOf(r.Context())) {
		sessionNotFound(w)
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

// checkVersionHeader enforces MCP-Protocol-Version for the session era:
// absent means 2025-03-26 (or the negotiated version), present must be a
// version mcphub serves. A GET or DELETE of the stateless era, which has
// neither, is answered 405.
func checkVersionHeader(w http.ResponseWriter, r *http.Request) bool {
	v := r.Header.Get("MCP-Protocol-Version")
	if v == "" || jsonrpc.IsSessionVersion(v) {
		return true
	}
	if r.Method != http.MethodPost && jsonrpc.EraOf(v) == jsonrpc.EraStateless {
		w.Header().Set("Allow", "POST")
		httpError(w, http.StatusMethodNotAllowed, "Method Not Allowed: a "+v+" client only POSTs (no GET stream, no session to DELETE)")
		return false
	}
	httpError(w, http.StatusBadRequest, fmt.Sprintf("Bad Request: Unsupported protocol version %q (supported versions: %s)", v, strings.Join(jsonrpc.SessionVersions, ", ")))
	return false
}

// servePost checks and decodes one POSTed message and hands it to its
// session (or, for initialize, to a new one). Every POST is logged with its
// status and latency, and with its bodies when audit_log_bodies is on.
func (e *edge) servePost(w http.ResponseWriter, r *http.Request, endpoint string) {
	start := time.Now()
	audit := e.servers.registry().Hub.AuditLogBodies
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK, keepBody: audit}
	var msg *jsonrpc.Message
	var body []byte
	defer func() {
		if !e.log.Enabled(r.Context(), slog.LevelInfo) {
			return
		}
		attrs := []any{"endpoint", endpointName(endpoint), "status_code", rec.status, "latency_ms", time.Since(start).Milliseconds()}
		if msg != nil {
			attrs = append(attrs, "mcp_method", logValue(msg.Method), "rpc_id", logValue(string(msg.ID)))
		}
		if audit {
			attrs = append(attrs, "request_body", string(body), "response_body", string(rec.body))
		}
		e.log.Info("POST", attrs...)
	}()
	w = rec
	if msg, body = e.readMessage(w, r); msg == nil {
		return
	}
	// An id this hub could never have issued is refused on every POST,
	// initialize included (seed 002). A 2026-07-28 request has no use for
	// the header, and a well-formed one is ignored there, as a
	// modern-only server ignores it; a malformed one is a client's bug
	// worth saying so.
	id, ok := e.sessionHeader(w, r)
	if !ok {
		return
	}
	if modernRequest(r, msg) {
		if e.heldElsewhere(w, r, msg, body) {
			return
		}
		release := noLimit
		if msg.IsRequest() {
			if release, ok = e.admit(w, r, msg, false); !ok {
				return
			}
		}
		e.serveModern(w, r, endpoint, msg, release)
		return
	}
	if !checkVersionHeader(w, r) {
		return
	}
	if msg.Method == "initialize" {
		if !msg.IsRequest() {
			httpError(w, http.StatusBadRequest, "Bad Request: initialize must be a request")
			return
		}
		// initialize starts a new session whatever well-formed id it
		// carries: a client may still hold one the hub has let go.
		if _, ok := e.admit(w, r, msg, false); !ok {
			return
		}
		e.initialize(w, r, endpoint, msg)
		return
	}
	s := e.findSession(w, r, id, endpoint, body)
	if s == nil {
		return
	}
	switch msg.Kind() {
	case jsonrpc.KindNotification:
		e.sessions.router.notify(s, msg)
		w.WriteHeader(http.StatusAccepted)
	case jsonrpc.KindResponse, jsonrpc.KindErrorResponse:
		if !s.reply(msg) {
			e.log.Debug("a client response matched no pending request", "session", s.id, "rpc_id", string(msg.ID))
		}
		w.WriteHeader(http.StatusAccepted)
	case jsonrpc.KindRequest:
		release, ok := e.admit(w, r, msg, true)
		if !ok {
			return
		}
		e.sessions.request(w, r, s, msg, release)
	}
}

// readMessage reads and decodes a POST's one JSON-RPC message, answering
// what is wrong with it itself (nil message): the media type, the body's
// size or pace, a batch, invalid JSON-RPC. The protocol version header is
// checked once the message says which era it speaks.
func (e *edge) readMessage(w http.ResponseWriter, r *http.Request) (*jsonrpc.Message, []byte) {
	if mt := mediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		httpError(w, http.StatusUnsupportedMediaType, "Unsupported Media Type: Content-Type must be application/json")
		return nil, nil
	}
	limit := e.servers.registry().Hub.MaxBodyBytes
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			e.log.Warn("refused a request body over the limit", "limit_bytes", limit)
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("Request Entity Too Large: bodies are limited to %d bytes ([hub] max_body_bytes)", limit))
		case errors.Is(err, errSlowBody):
			e.log.Debug("cut off a request body that arrived too slowly", "bytes", len(body))
			httpError(w, http.StatusRequestTimeout, fmt.Sprintf("Request Timeout: the body arrived too slowly; its first bytes must arrive within %s, then at least %d KiB per second", bodyGrace, minBodyRate>>10))
		default:
			httpError(w, http.StatusBadRequest, "Bad Request: could not read the body")
		}
		return nil, body
	}
	if jsonrpc.IsBatch(body) {
		writeRPCError(w, http.StatusBadRequest, nil, jsonrpc.NewError(jsonrpc.CodeInvalidRequest,
			"Invalid Request: JSON-RPC batches are not supported; send one message per POST"))
		return nil, body
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
		return nil, body
	}
	return m, body
}

// serveGet opens a standalone SSE stream, or resumes a stream with
// Last-Event-ID: its missed events are replayed, then it continues live.
func (e *edge) serveGet(w http.ResponseWriter, r *http.Request, endpoint string) {
	start := time.Now()
	if parseAccept(acceptHeader(r)).mode < acceptSSEOnly {
		httpError(w, http.StatusNotAcceptable, "Not Acceptable: a GET must accept text/event-stream")
		return
	}
	if !checkVersionHeader(w, r) {
		return
	}
	s := e.lookupSession(w, r, endpoint)
	if s == nil {
		return
	}
	last := r.Header.Get("Last-Event-ID")
	st, cursor, err := e.sessions.claimStream(s, last)
	switch {
	case errors.Is(err, errStreamBusy):
		e.log.Warn("refused a second connection for a stream", "session", s.id, "last_event_id", logValue(last))
		httpError(w, http.StatusConflict, "Conflict: that stream is already being served on another connection")
		return
	case errors.Is(err, errTooManyStreams):
		e.log.Warn("refused a stream over the per-session limit", "session", s.id, "err", err)
		httpError(w, http.StatusTooManyRequests, err.Error())
		return
	case errors.Is(err, errSessionEnded):
		httpError(w, http.StatusNotFound, "Session not found")
		return
	case err != nil:
		e.log.Warn("refused a stream resumption", "session", s.id, "last_event_id", logValue(last), "err", err)
		httpError(w, http.StatusBadRequest, "Bad Request: "+err.Error())
		return
	}
	e.sessions.serveStream(w, r, s, st, cursor)
	e.log.Info("GET stream closed", "endpoint", endpointName(endpoint), "session", s.id, "stream", st.id,
		"status_code", http.StatusOK, "latency_ms", time.Since(start).Milliseconds())
}

// serveDelete ends a session, as its client asks.
func (e *edge) serveDelete(w http.ResponseWriter, r *http.Request, endpoint string) {
	start := time.Now()
	if !checkVersionHeader(w, r) {
		return
	}
	s := e.lookupSession(w, r, endpoint)
	if s == nil {
		return
	}
	e.sessions.end(s)
	w.WriteHeader(http.StatusNoContent)
	e.log.Info("DELETE", "endpoint", endpointName(endpoint), "session", s.id, "status_code", http.StatusNoContent,
		"latency_ms", time.Since(start).Milliseconds())
}

// acceptHeader joins every Accept line: several lines mean the same as one
// comma-separated list (RFC 9110 §5.3).
func acceptHeader(r *http.Request) string {
	return strings.Join(r.Header.Values("Accept"), ",")
}

// flush sends what w holds through its ResponseController, which reaches
// the server's writer through any wrapper that has Unwrap.
func flush(w http.ResponseWriter) error { return http.NewResponseController(w).Flush() }

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
// a response while passing everything through. It has no Flush of its own:
// http.ResponseController reaches the real writer through Unwrap, so a
// failed flush is reported, not swallowed.
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

// Unwrap lets http.ResponseController reach the real writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
