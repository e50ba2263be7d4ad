package hub

import (
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"
)

// The limits of the HTTP server in front of the hub. They are variables so
// tests can shorten them.
var (
	// readHeaderTimeout bounds reading a request's head: a client that
	// trickles headers (slowloris) loses its connection.
	readHeaderTimeout = 10 * time.Second
	// idleTimeout closes a kept-alive connection that sends nothing.
	idleTimeout = 2 * time.Minute
	// writeTimeout bounds writing a response: every response has it from
	// the moment its request was read, and the writers of long replies
	// (SSE streams, a JSON answer after a long call) push it forward
	// before they write. A client that stops reading loses its connection
	// instead of holding the handler and its unsent events.
	writeTimeout = 30 * time.Second
	// bodyGrace and minBodyRate bound reading a request's body: it must
	// arrive within bodyGrace plus one second per minBodyRate bytes, or
	// the request is answered 408 and the connection closed.
	bodyGrace   = 10 * time.Second
	minBodyRate = 32 << 10 // bytes per second
)

// maxHeaderBytes bounds a request's head (net/http answers 431 beyond it).
const maxHeaderBytes = 64 << 10

// NewServer returns the net/http server for the hub's handler, with the
// limits above and the connection caps of connLimiter: when handler is the
// Hub, its registry's [hub] max_connections and max_connections_per_address,
// read as each connection arrives, so a reload applies to the next one; for
// any other handler, their defaults. Serve it on a listener (with TLS when
// configured); the caller owns its Shutdown.
func NewServer(handler http.Handler, log *slog.Logger) *http.Server {
	srv, _ := newServer(handler, log)
	return srv
}

// newServer is NewServer that also returns the server's connection caps.
func newServer(handler http.Handler, log *slog.Logger) (*http.Server, *connLimiter) {
	limits := defaultConnLimits
	if h, ok := handler.(connLimited); ok {
		limits = h.connLimits
	}
	conns := newConnLimiter(log, limits)
	return &http.Server{
		Handler:           conns.wrap(handler),
		ConnContext:       conns.connContext,
		ConnState:         conns.connState,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		WriteTimeout:      writeTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          stdlog.New(serverLog{log}, "", 0),
	}, conns
}

// serverLog carries what net/http reports into the hub's log. A handler's
// panic is the hub's own error; failing to accept connections (out of file
// descriptors, say) and a handler misusing its writer deserve a warning;
// the rest (malformed requests, failed TLS handshakes) is about clients, so
// debug level.
type serverLog struct{ log *slog.Logger }

func (l serverLog) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	switch {
	case strings.Contains(msg, "panic serving"):
		l.log.Error("a request handler panicked", "err", msg)
	case strings.Contains(msg, "Accept error"), strings.Contains(msg, "superfluous"):
		l.log.Warn(msg)
	default:
		l.log.Debug(msg)
	}
	return len(p), nil
}

// errSlowBody means a request body arrived slower than minBodyRate.
var errSlowBody = errors.New("the request body arrived too slowly")

// guardBody makes a request's body arrive at a sane rate: bodyGrace for
// its first bytes, then one second more per minBodyRate bytes received, and
// never more in all than the allowance of its declared length (at most the
// largest body the hub takes; for a body of unknown length, that largest).
// The connection's read deadline follows that rule as the body arrives, so
// a client that sends a little and stalls is cut off soon after bodyGrace,
// whatever length it declared, while a large body that keeps the pace gets
// all the time it needs. Reading past the deadline fails with errSlowBody.
// net/http clears the deadline itself once the body has been read to its
// end, so it never reaches a call that runs after; a body left unread is
// discarded by net/http under the deadline last set.
//
// While the handler reads, the connection counts as waiting for a body, and
// so may be closed to make room when a connection cap is reached (see
// connLimiter).
//
// The response's write deadline (writeTimeout from the request's head, and
// over HTTP/2 a timer that resets the stream) must not run out while a
// legitimately slow body is still arriving: when the allowance is more than
// half of writeTimeout it is pushed to the allowance plus writeTimeout, so
// that once the body is in (or cut off, for the 408) at least half of
// writeTimeout is left to answer. The usual small body needs no push.
func (e *edge) guardBody(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	limit := e.servers.registry().Hub.MaxBodyBytes
	size := r.ContentLength
	if size < 0 || size > limit {
		size = limit // a larger body is refused once limit+1 bytes are in
	}
	allowed := bodyAllowance(size)
	now := time.Now()
	b := &slowBody{ReadCloser: r.Body, rc: http.NewResponseController(w), req: requestFrom(r.Context()),
		start: now, end: now.Add(allowed)}
	if b.rc.SetReadDeadline(b.deadline()) != nil {
		return // a writer without deadlines (a test recorder)
	}
	if allowed > writeTimeout/2 {
		b.rc.SetWriteDeadline(now.Add(allowed + writeTimeout))
	}
	r.Body = b
}

// bodyAllowance is how long a body of size bytes may take: bodyGrace plus
// one second per minBodyRate bytes, capped at a day so that no size
// overflows it.
func bodyAllowance(size int64) time.Duration {
	rate := int64(minBodyRate)
	size = max(size, 0)
	if size/rate >= 24*3600 {
		return bodyGrace + 24*time.Hour
	}
	return bodyGrace + time.Duration(size)*time.Second/time.Duration(rate)
}

// slowBody keeps the read deadline of guardBody's rule as the body
// arrives, reports a read that ran into it as errSlowBody, and marks the
// handler's reading on its connection's tracking. Reads come from the one
// handler goroutine.
type slowBody struct {
	io.ReadCloser
	rc         *http.ResponseController
	req        *inRequest // nil without tracking
	start, end time.Time  // end: the allowance of the declared length
	got        int64      // bytes read so far
	reading    bool       // the first read has been made
}

// deadline is when the next bytes must have arrived.
func (b *slowBody) deadline() time.Time {
	d := b.start.Add(bodyAllowance(b.got))
	if d.After(b.end) {
		return b.end
	}
	return d
}

func (b *slowBody) Read(p []byte) (int, error) {
	if !b.reading {
		b.reading = true
		b.req.startBody()
	}
	n, err := b.ReadCloser.Read(p)
	b.got += int64(n)
	switch {
	case err == nil && n > 0:
		// Only before the end: at its end net/http clears the deadline
		// and reads the connection in the background, which a deadline
		// set now would break.
		b.rc.SetReadDeadline(b.deadline())
	case err != nil:
		b.req.endBody()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("%w (%w)", errSlowBody, err)
		}
	}
	return n, err
}
