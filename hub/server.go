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
// limits above. Serve it on a listener (with TLS when configured); the
// caller owns its Shutdown.
func NewServer(handler http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		WriteTimeout:      writeTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          stdlog.New(serverLog{log}, "", 0),
	}
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

// guardBody makes a request's body arrive at a sane rate: the connection's
// read deadline is set to bodyGrace plus the time the declared length (at
// most the largest body the hub takes; for a body of unknown length, that
// largest) may take at minBodyRate. Reading past it fails with errSlowBody.
// net/http clears the deadline itself once the body has been read to its
// end, so it never reaches a call that runs after; a body left unread is
// discarded by net/http under the same deadline.
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
	rc := http.NewResponseController(w)
	now := time.Now()
	if rc.SetReadDeadline(now.Add(allowed)) != nil {
		return // a writer without deadlines (a test recorder)
	}
	if allowed > writeTimeout/2 {
		rc.SetWriteDeadline(now.Add(allowed + writeTimeout))
	}
	r.Body = slowBody{r.Body}
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

// slowBody reports a read that ran into guardBody's deadline as errSlowBody.
type slowBody struct{ io.ReadCloser }

func (b slowBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("%w (%w)", errSlowBody, err)
	}
	return n, err
}
