package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// h1 sends the POSTs to a plain-http upstream over HTTP/1.1 keep-alive
// connections of its own, writing each request and reading its response on
// the caller's goroutine.
//
// net/http's Transport hands every request to a writer goroutine and every
// response back from a reader goroutine, and the caller waits for the
// reader again once the body ends. On a small machine each hand-off can be
// a thread wake-up on another CPU, and those wake-ups, not the bytes, are
// most of what a tool call through the hub costs over calling the server
// directly. Everything else (GET streams, DELETE, https, proxies, a
// configured http.Client) still goes through net/http.
type h1 struct {
	host   string // the URL's host, as written
	addr   string // host:port to dial
	dialer net.Dialer

	mu     sync.Mutex
	idle   []*h1Conn // most recently used last
	closed bool
}

// h1MaxIdle bounds the kept-alive connections of one upstream; h1IdleTime
// is how long an unused one is kept.
const (
	h1MaxIdle  = 64
	h1IdleTime = 90 * time.Second
	// h1MaxKeptBuffer bounds the request buffer a connection keeps between
	// requests, so one large request does not pin its memory.
	h1MaxKeptBuffer = 64 << 10
)

type h1Conn struct {
	nc        net.Conn
	br        *bufio.Reader
	buf       []byte // the request being written; reused
	idleSince time.Time
}

// newH1 returns an h1 for cfg, or nil when its POSTs must go through
// net/http: a configured client, https, credentials in the URL, or a proxy
// from the environment.
func newH1(cfg Config) *h1 {
	if cfg.HTTPClient != nil {
		return nil
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || u.Scheme != "http" || u.User != nil || u.Host == "" {
		return nil
	}
	if p, err := http.ProxyFromEnvironment(&http.Request{URL: u}); err != nil || p != nil {
		return nil
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	return &h1{host: u.Host, addr: net.JoinHostPort(u.Hostname(), port)}
}

// carries reports whether req is one of the requests h1 sends: a POST to
// the upstream's own host over plain http.
func (h *h1) carries(req *http.Request) bool {
	return h != nil && req.Method == http.MethodPost && req.URL.Scheme == "http" && req.URL.Host == h.host && req.URL.User == nil
}

// roundTrip sends req (a POST with a byte body) and returns its response,
// whose body must be closed. The request's context bounds the exchange and
// the reading of the body.
func (h *h1) roundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	pc, err := h.get(ctx)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() {
		// Unblocks a write or read in progress; the connection is not
		// reused afterwards.
		pc.nc.SetDeadline(time.Unix(1, 0))
	})
	resp, err := pc.exchange(req)
	if err != nil {
		pc.nc.Close()
		if !stop() {
			// The context ended: that, not the broken read or write, is
			// why the exchange failed.
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	body := &h1Body{h: h, pc: pc, rc: resp.Body, stop: stop, keep: !resp.Close && resp.ProtoAtLeast(1, 1)}
	if resp.Body == http.NoBody {
		body.eof.Store(true) // a 202, say: nothing to read before reuse
	}
	resp.Body = body
	return resp, nil
}

// get takes a live idle connection or dials a new one.
func (h *h1) get(ctx context.Context) (*h1Conn, error) {
	for {
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return nil, ErrClosed
		}
		n := len(h.idle)
		if n == 0 {
			h.mu.Unlock()
			break
		}
		pc := h.idle[n-1]
		h.idle[n-1] = nil
		h.idle = h.idle[:n-1]
		h.mu.Unlock()
		if pc.alive() {
			return pc, nil
		}
		pc.nc.Close()
	}
	nc, err := h.dialer.DialContext(ctx, "tcp", h.addr)
	if err != nil {
		return nil, err
	}
	return &h1Conn{nc: nc, br: bufio.NewReaderSize(nc, 4096)}, nil
}

// put keeps a connection whose last response was read whole.
func (h *h1) put(pc *h1Conn) {
	if cap(pc.buf) > h1MaxKeptBuffer {
		pc.buf = nil
	}
	now := time.Now()
	pc.idleSince = now
	h.mu.Lock()
	// The oldest come first: drop those unused for too long.
	var stale []*h1Conn
	for len(h.idle) > 0 && now.Sub(h.idle[0].idleSince) > h1IdleTime {
		stale = append(stale, h.idle[0])
		h.idle[0] = nil
		h.idle = h.idle[1:]
	}
	keep := !h.closed && len(h.idle) < h1MaxIdle
	if keep {
		h.idle = append(h.idle, pc)
	}
	h.mu.Unlock()
	for _, s := range stale {
		s.nc.Close()
	}
	if !keep {
		pc.nc.Close()
	}
}

// close drops every idle connection; later requests fail with ErrClosed.
func (h *h1) close() {
	h.mu.Lock()
	idle := h.idle
	h.idle, h.closed = nil, true
	h.mu.Unlock()
	for _, pc := range idle {
		pc.nc.Close()
	}
}

// alive tells whether an idle connection can carry a request: the server
// has neither closed it nor sent anything unasked (a server that times out
// an idle connection may send a 408 first). It peeks without blocking.
func (pc *h1Conn) alive() bool {
	if pc.br.Buffered() > 0 {
		return false
	}
	sc, ok := pc.nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		alive = rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK
		return true
	})
	return err == nil && alive
}

// errBadHeader reports a header that cannot be written on the wire.
var errBadHeader = errors.New("invalid HTTP header")

// exchange writes req in one write and reads the response's head.
func (pc *h1Conn) exchange(req *http.Request) (*http.Response, error) {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	b := append(pc.buf[:0], req.Method...)
	b = append(b, ' ')
	b = append(b, req.URL.RequestURI()...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	for k, vs := range req.Header {
		if !validHeaderName(k) {
			return nil, fmt.Errorf("%w name %q", errBadHeader, k)
		}
		for _, v := range vs {
			if !validHeaderValue(v) {
				return nil, fmt.Errorf("%w: the value of %s holds a line break or NUL", errBadHeader, k)
			}
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	if req.Body != nil && req.Body != http.NoBody {
		n := req.ContentLength
		if n <= 0 {
			data, err := io.ReadAll(req.Body)
			if err != nil {
				return nil, err
			}
			n = int64(len(data))
			b = appendContentLength(b, n)
			b = append(b, data...)
		} else {
			b = appendContentLength(b, n)
			start := len(b)
			b = append(b, make([]byte, n)...)
			if _, err := io.ReadFull(req.Body, b[start:]); err != nil {
				return nil, err
			}
		}
	} else {
		b = appendContentLength(b, 0)
	}
	pc.buf = b
	if _, err := pc.nc.Write(b); err != nil {
		return nil, err
	}
	for {
		resp, err := http.ReadResponse(pc.br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue // informational: the real response follows
		}
		return resp, nil
	}
}

func appendContentLength(b []byte, n int64) []byte {
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, n, 10)
	return append(b, "\r\n\r\n"...)
}

// validHeaderName reports whether k is an RFC 9110 token.
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c < 0x80 && c > ' ' && c != 0x7f && !isSeparator(c):
		default:
			return false
		}
	}
	return true
}

func isSeparator(c byte) bool {
	switch c {
	case '(', ')', '<', '>', '@', ',', ';', ':', '\\', '"', '/', '[', ']', '?', '=', '{', '}':
		return true
	}
	return false
}

// validHeaderValue rejects what would end the header or the head early.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == '\r' || c == '\n' || c == 0 {
			return false
		}
	}
	return true
}

// h1Body is a response body on an h1 connection. Closing it after it was
// read to its end gives the connection back for the next request; closing
// it early, or after the request's context ended, closes the connection.
type h1Body struct {
	h    *h1
	pc   *h1Conn
	rc   io.ReadCloser
	stop func() bool // stops the context's interrupt; false if it ran
	keep bool        // the response allows the connection to be reused

	eof    atomic.Bool
	closed atomic.Bool
}

func (b *h1Body) Read(p []byte) (int, error) {
	if b.closed.Load() {
		return 0, http.ErrBodyReadAfterClose
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof.Store(true)
	}
	return n, err
}

func (b *h1Body) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	if b.stop() && b.eof.Load() && b.keep {
		b.h.put(b.pc)
		return nil
	}
	return b.pc.nc.Close()
}
