package hub

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// request runs one client request of a session and answers it as JSON, as an
// SSE stream, or lazily as whichever the call turns out to need.
func (set *sessionSet) request(w http.ResponseWriter, r *http.Request, s *session, m *jsonrpc.Message, release func()) {
	acc := parseAccept(acceptHeader(r))
	mode := replyModeFor(acc, set.servers.registry().Hub.PostSSE, m)
	if set.log.Enabled(r.Context(), slog.LevelDebug) {
		set.log.Debug("reply mode", "method", m.Method, "accept", acc.mode.String(), "prefers_sse", acc.prefersSSE, "mode", mode, "session", s.id)
	}

	// The call belongs to the session, not to the HTTP request: a client
	// whose SSE connection drops may resume it. Only a JSON reply, which
	// cannot be resumed, ends with its connection.
	ctx, cancelCause := context.WithCancelCause(s.ctx)
	untracked, err := s.track(m.ID, cancelCause)
	if err != nil {
		release()
	}
	// The call's slot of its caller's concurrent calls is given back when
	// the call is over, which may be after its HTTP request (a resumable
	// stream).
	untrack := func() {
		untracked()
		release()
	}
	if errors.Is(err, errSessionEnded) {
		// Ended (deleted, evicted for room) since the edge found it.
		cancelCause(nil)
		httpError(w, http.StatusNotFound, "Session not found: it ended; initialize a new one")
		return
	}
	if err != nil {
		cancelCause(nil)
		set.log.Warn("refused a request", "session", s.id, "method", m.Method, "err", err)
		writeRPCError(w, http.StatusOK, m.ID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, err.Error()))
		return
	}
	rc := &replyCall{set: set, w: w, r: r, s: s, m: m, ctx: ctx, cancel: func() { cancelCause(nil) }, untrack: untrack}
	switch mode {
	case replyJSON:
		rc.replyJSON()
	case replySSE:
		rc.replySSE()
	case replyLazy:
		rc.replyLazy()
	}
}

// replyCall is one client request being answered.
type replyCall struct {
	set     *sessionSet
	w       http.ResponseWriter
	r       *http.Request
	s       *session
	m       *jsonrpc.Message
	ctx     context.Context // the call's; ended by cancel or the session
	cancel  func()
	untrack func()
}

// run routes the call and encodes its answer; nil when the client cancelled
// it (no response, as the spec asks).
func (rc *replyCall) run(peer *sessionPeer) ([]byte, int) {
	res, err := rc.set.router.route(rc.ctx, rc.s, rc.m, peer)
	// The id is free again before the client can see the answer.
	rc.untrack()
	switch {
	case err != nil && errors.Is(context.Cause(rc.ctx), errClientCancelled):
		return nil, 0
	case err != nil:
		e, status := rpcError(err, rc.s.endpoint)
		return jsonrpc.NewErrorResponse(rc.m.ID, e).Encode(), status
	}
	return jsonrpc.NewResponse(rc.m.ID, res).Encode(), http.StatusOK
}

// replyJSON answers with one JSON body; the call ends with its connection.
func (rc *replyCall) replyJSON() {
	defer rc.cancel()
	defer rc.untrack()
	stop := context.AfterFunc(rc.r.Context(), rc.cancel)
	defer stop()
	// The call may outlast the response's write deadline, which over
	// HTTP/2 would reset the stream mid-call: it is lifted for the call and
	// set again for the write.
	ctl := http.NewResponseController(rc.w)
	ctl.SetWriteDeadline(time.Time{})
	body, status := rc.run(&sessionPeer{s: rc.s, send: rc.s.deliver})
	ctl.SetWriteDeadline(time.Now().Add(writeTimeout))
	writeJSONReply(rc.w, status, rc.m.ID, body)
}

// replySSE answers on a new, resumable SSE stream; the call runs on its own
// and outlives the connection.
func (rc *replyCall) replySSE() {
	st, err := rc.set.openStream(rc.s, true, rc.m.ID)
	if err != nil {
		rc.cancel()
		rc.untrack()
		httpError(rc.w, http.StatusNotFound, "Session not found")
		return
	}
	cursor, _ := st.attach(-1)
	started := rc.set.calls.Go(func() {
		defer rc.cancel()
		defer rc.untrack()
		body, _ := rc.run(&sessionPeer{store: rc.set.store, s: rc.s, st: st, send: func(b []byte) { st.append(b, false) }})
		if body == nil {
			st.finish()
			return
		}
		st.append(body, true)
	})
	if !started {
		// The hub is closing: the session has ended with it.
		rc.cancel()
		rc.untrack()
		httpError(rc.w, http.StatusNotFound, "Session not found")
		return
	}
	rc.set.serveReply(rc.w, rc.r, rc.s, st, cursor, rc.cancel)
}

// replyLazy answers as JSON when the result comes first, else turns into a
// stream (see lazyStream).
func (rc *replyCall) replyLazy() {
	defer rc.untrack()
	l := &lazyStream{set: rc.set, s: rc.s, id: rc.m.ID, w: rc.w, r: rc.r, keep: context.AfterFunc(rc.r.Context(), rc.cancel), cancel: rc.cancel}
	defer l.keep()
	timer := time.AfterFunc(streamAfter, func() { l.open() })
	body, status := rc.run(&sessionPeer{store: rc.set.store, s: rc.s, lazy: l, send: l.send})
	timer.Stop()
	served, asJSON := l.finish(body)
	rc.cancel()
	switch {
	case !asJSON:
		<-served
	case l.failure != nil:
		httpError(rc.w, http.StatusNotFound, "Session not found")
	default:
		writeJSONReply(rc.w, status, rc.m.ID, body)
	}
}

// serveReply sends a POST's SSE stream. A stream wholly delivered stays
// resumable: the client may not have read the end of what was written
// before its connection dropped, and a GET with Last-Event-ID replays it.
// When serving ends with the client holding no event id of the stream, it
// cannot resume it: the call is cancelled (upstream too) rather than left
// to run to its timeout for nobody.
func (set *sessionSet) serveReply(w http.ResponseWriter, r *http.Request, s *session, st *stream, cursor int, cancel func()) {
	sseHeaders(w)
	flush(w)
	delivered, err := st.serve(w, cursor, set.heartbeat, r.Context().Done(), s.ctx.Done(), nil)
	if delivered {
		st.delivered()
		return
	}
	set.warnLagged(s, st, err)
	// However the serving ended (the client left, a write failed or timed
	// out, the reader fell behind), a client that holds no event id of the
	// stream cannot resume it.
	if !st.resumable() {
		cancel()
	}
	set.log.Debug("a reply stream ended before its response", "session", s.id, "stream", st.id, "err", err, "client_gone", r.Context().Err() != nil)
}

// warnLagged logs a reader cut off for falling behind its stream's budget.
func (set *sessionSet) warnLagged(s *session, st *stream, err error) {
	if errors.Is(err, errLagged) {
		set.log.Warn("cut off a client that fell too far behind its stream; it can resume with Last-Event-ID",
			"session", s.id, "stream", st.id, "stream_buffer_bytes", set.servers.registry().Hub.StreamBufferBytes)
	}
}

// claimStream finds the stream a GET serves: the one its Last-Event-ID
// names, resumed after that event, or a new standalone stream.
func (set *sessionSet) claimStream(s *session, lastEventID string) (*stream, int, error) {
	if lastEventID != "" {
		return s.resumeStream(lastEventID)
	}
	st, err := set.openStream(s, false, nil)
	if err != nil {
		return nil, 0, err
	}
	cursor, err := st.attach(-1)
	return st, cursor, err
}

// serveStream serves a GET's stream until the client or the session goes;
// a standalone stream first takes the messages queued for the session.
func (set *sessionSet) serveStream(w http.ResponseWriter, r *http.Request, s *session, st *stream, cursor int) {
	sseHeaders(w)
	flush(w)
	var pull func(*stream)
	if !st.post {
		pull = s.pull
	}
	delivered, err := st.serve(w, cursor, set.heartbeat, r.Context().Done(), s.ctx.Done(), pull)
	if delivered {
		st.delivered()
	}
	set.warnLagged(s, st, err)
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
