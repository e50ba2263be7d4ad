package hub

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// streamAfter is how long a lazy reply waits for its result before it turns
// into an SSE stream anyway: a long call gets a resumable stream (and
// heartbeats) without waiting for its first message.
var streamAfter = 500 * time.Millisecond

// lazyStream is a reply that becomes an SSE stream only when it has to: when
// the call produces a message (progress, a log line, a server request) before
// its result, or takes longer than streamAfter. A result that comes first is
// answered as plain JSON: no stream, no events to persist, fewer writes on
// the hot path. The spec lets the server choose either for a client that
// accepts both.
//
// The call runs on the HTTP handler's goroutine, so the common case costs no
// hand-off at all; only when the reply turns into a stream does a goroutine
// take over the ResponseWriter to serve it, and the handler waits for it.
type lazyStream struct {
	set *sessionSet
	s   *session
	id  json.RawMessage
	w   http.ResponseWriter
	r   *http.Request
	// keep stops the hook that cancels the call when the client goes
	// away: once there is a stream, the call outlives the connection.
	keep func() bool
	// cancel cancels the call (a client gone with no way to resume).
	cancel func()

	mu      sync.Mutex
	st      *stream
	json    bool          // the result came first: answered as JSON
	served  chan struct{} // closed when the stream has been served
	fwd     *forwardInfo  // where the call went, recorded once a stream exists
	failure error
}

// forwardInfo is where a call went upstream (see sessionPeer.Forwarded).
type forwardInfo struct {
	server        string
	upstreamID    json.RawMessage
	hubToken      string
	progressToken json.RawMessage
}

// openLocked creates the stream unless the reply went JSON, and starts
// serving it; l.mu is held.
func (l *lazyStream) openLocked() *stream {
	if l.st != nil || l.json || l.failure != nil {
		return l.st
	}
	st, err := l.set.openStream(l.s, true, l.id)
	if err != nil {
		l.failure = err
		return nil
	}
	st.attach(-1)
	l.st = st
	if f := l.fwd; f != nil {
		l.set.store.saveCall(st, *f)
	}
	l.keep()
	l.served = make(chan struct{})
	go func() {
		defer close(l.served)
		l.set.serveReply(l.w, l.r, l.s, st, 0, l.cancel)
	}()
	return st
}

// open turns the reply into a stream now (the timer fired); nil when it has
// already been answered as JSON.
func (l *lazyStream) open() *stream {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.openLocked()
}

// send delivers a message that belongs to the call, on the stream.
func (l *lazyStream) send(b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st := l.openLocked(); st != nil {
		st.append(b, false)
	}
}

// finish delivers the reply on the stream when there is one (and returns
// the channel closed once it is served); otherwise the handler answers JSON.
func (l *lazyStream) finish(reply []byte) (served <-chan struct{}, asJSON bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.st == nil {
		l.json = true
		return nil, true
	}
	if reply == nil {
		l.st.finish()
	} else {
		l.st.append(reply, true)
	}
	return l.served, false
}

// forwarded records where the call went, now or once a stream exists.
func (l *lazyStream) forwarded(f forwardInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.st != nil {
		l.set.store.saveCall(l.st, f)
		return
	}
	l.fwd = &f
}
