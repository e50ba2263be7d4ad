package hub

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
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
		// net/http reports malformed requests and TLS handshake failures
		// here: a client's problem, not the hub's, so debug level.
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
}

// errSlowBody means a request body arrived slower than minBodyRate.
var errSlowBody = errors.New("the request body arrived too slowly")

// guardBody makes a request's body arrive at a sane rate: the connection's
// read deadline is set to bodyGrace plus the time the declared length (or,
// for a body of unknown length, the largest the hub takes) may take at
// minBodyRate. Reading past it fails with errSlowBody. net/http clears the
// deadline itself once the body has been read to its end, so it never
// reaches a call that runs after; a body left unread is discarded by
// net/http under the same deadline.
func (h *Hub) guardBody(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	size := r.ContentLength
	if size < 0 {
		size = h.registry().Hub.MaxBodyBytes
	}
	allowed := bodyGrace + time.Duration(size)*time.Second/time.Duration(minBodyRate)
	if http.NewResponseController(w).SetReadDeadline(time.Now().Add(allowed)) != nil {
		return // a writer without deadlines (a test recorder)
	}
	r.Body = slowBody{r.Body}
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

// extendWrite pushes the response's write deadline d from now, for a
// writer about to write after a wait; it is a no-op on writers without
// deadlines.
func extendWrite(w http.ResponseWriter, d time.Duration) {
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
}
