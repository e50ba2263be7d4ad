// Package httpserve serves HTTP/1.1 on plain TCP to an http.Handler with
// less work per request than net/http's server.
//
// The hub sits on every tool call, and on loopback the request itself is
// cheap: what costs is waking goroutines. net/http's server starts a
// background reader goroutine for every request so it can notice a client
// that goes away, and stops it again when the response is done. Here that
// reader starts only when a handler is still running after a short while, so
// a call answered in well under a millisecond is read, handled and written on
// the connection's own goroutine alone. Request heads are parsed by
// http.ReadRequest, the same parser net/http's server uses.
package httpserve

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync"
	"time"
)

// Options configures a Server. Zero values take the defaults named below.
type Options struct {
	// Handler answers every request.
	Handler http.Handler
	// ReadHeaderTimeout bounds reading one request's head; 10 s by default.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends nothing for this
	// long; 2 min by default.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's head; 64 KiB by default.
	MaxHeaderBytes int
	// WatchAfter is how long a handler runs before the connection is watched
	// for the client going away; 20 ms by default.
	WatchAfter time.Duration
	// Logger receives malformed requests (debug) and handler panics (error).
	Logger *slog.Logger
}

// Server serves HTTP/1.1 connections from one listener. Its lifecycle is New,
// Serve (which blocks), then Shutdown or Close.
type Server struct {
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	ln       net.Listener
	conns    map[*conn]struct{}
	stopping bool
	wg       sync.WaitGroup
}

// New returns a Server for opts, with defaults filled in.
func New(opts Options) *Server {
	if opts.ReadHeaderTimeout <= 0 {
		opts.ReadHeaderTimeout = 10 * time.Second
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 2 * time.Minute
	}
	if opts.MaxHeaderBytes <= 0 {
		opts.MaxHeaderBytes = 64 << 10
	}
	if opts.WatchAfter <= 0 {
		opts.WatchAfter = 20 * time.Millisecond
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{opts: opts, log: log, conns: map[*conn]struct{}{}}
}

// Serve accepts connections on ln until Shutdown or Close, and then returns
// http.ErrServerClosed. Any other accept error that is not transient ends it
// too. Serve closes ln.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		ln.Close()
		return http.ErrServerClosed
	}
	s.ln = ln
	s.mu.Unlock()
	defer ln.Close()
	var backoff time.Duration
	for {
		rwc, err := ln.Accept()
		if err != nil {
			if s.isStopping() {
				return http.ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// Out of file descriptors and the like: wait and try again, as
			// net/http does, rather than stop serving.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed; retrying", "err", err, "retry_in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		c := newConn(s, rwc)
		s.mu.Lock()
		if s.stopping {
			s.mu.Unlock()
			rwc.Close()
			return http.ErrServerClosed
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go c.serve()
	}
}

func (s *Server) isStopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping
}

// stopListening marks the server stopping, and closes its listener and
// every connection that is between requests. A connection closed here
// runs no request it may already have buffered.
func (s *Server) stopListening() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopping = true
	if s.ln != nil {
		s.ln.Close()
	}
	for c := range s.conns {
		if c.idle {
			c.doomed = true
			c.rwc.Close()
		}
	}
}

// closeAll closes every connection and ends the context of every request
// still running, with http.ErrServerClosed as its cause.
func (s *Server) closeAll() {
	s.stopListening()
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		c.doomed = true
		c.rwc.Close()
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		cancel := c.cancel
		c.mu.Unlock()
		if cancel != nil {
			cancel(http.ErrServerClosed)
		}
	}
}

// Shutdown stops accepting, closes idle connections, and waits for the
// requests in flight to finish; a connection closes as soon as its request
// is answered. When ctx ends first, the remaining connections are closed
// and ctx's error is returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopListening()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		// Like net/http's, this Shutdown does not wait for handlers past
		// its deadline; it ends their requests' contexts and returns.
		s.closeAll()
		return ctx.Err()
	}
}

// Close stops accepting, closes every connection at once and ends the
// contexts of the requests still running, then waits for the connections'
// goroutines (each handler returns once its context has ended). It is safe
// to call more than once.
func (s *Server) Close() error {
	s.closeAll()
	s.wg.Wait()
	return nil
}

// setIdle records whether c is between requests. It reports false when c
// must close instead: it is going idle while the server stops, or the
// server has already closed it.
func (s *Server) setIdle(c *conn, idle bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.idle = idle
	return !c.doomed && !(idle && s.stopping)
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.wg.Done()
}

// handle runs the handler, turning a panic into a closed connection and a
// log line, as net/http does.
func (s *Server) handle(w *response, r *http.Request) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			ok = false
			if v == http.ErrAbortHandler {
				return
			}
			buf := make([]byte, 16<<10)
			buf = buf[:runtime.Stack(buf, false)]
			s.log.Error("http handler panicked", "path", r.URL.Path, "panic", v, "stack", string(buf))
		}
	}()
	s.opts.Handler.ServeHTTP(w, r)
	return true
}

// discard reads what is left of a request body, up to a bound, so the next
// request on the connection can be read; it reports whether that worked.
func discard(body io.Reader) bool {
	const maxDrain = 256 << 10
	n, err := io.CopyN(io.Discard, body, maxDrain+1)
	return n <= maxDrain && (err == nil || err == io.EOF)
}
