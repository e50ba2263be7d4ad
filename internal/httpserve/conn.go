package httpserve

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcphub/mcphub/internal/coarse"
)

// errClientGone is the request context's cause when the client closed its
// side of the connection, or writing to it failed.
var errClientGone = errors.New("httpserve: client connection closed")

// conn is one client connection. Its goroutine reads a request, runs the
// handler and writes the response, then waits for the next request.
type conn struct {
	srv    *Server
	rwc    net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	idle   bool // guarded by srv.mu: between requests
	doomed bool // guarded by srv.mu: the server closed the connection
	used   bool // a request has been read; only the connection's goroutine uses it

	// What follows is guarded by mu. remain bounds reads while a request's
	// head is read; inRead is set while the watch goroutine waits in Read;
	// the byte it read, if any, is kept for the next request.
	mu       sync.Mutex
	cond     *sync.Cond
	remain   int64
	inRead   bool
	aborting bool
	hasByte  bool
	byteBuf  [1]byte
	cancel   context.CancelCauseFunc // the current request's, while it runs
	bodyDone bool                    // the current request's body hit its end
	watchDue bool                    // start watching when the body ends
	werr     error                   // the first write error
}

func newConn(s *Server, rwc net.Conn) *conn {
	c := &conn{srv: s, rwc: rwc, idle: true, remain: -1}
	c.cond = sync.NewCond(&c.mu)
	c.br = bufio.NewReaderSize(c, 4<<10)
	c.bw = bufio.NewWriterSize(connWriter{c}, 4<<10)
	return c
}

// Read serves the buffered reader: the byte the watch goroutine read first,
// then the socket, within the head's bound while a head is read.
func (c *conn) Read(p []byte) (int, error) {
	c.mu.Lock()
	if c.hasByte {
		p[0] = c.byteBuf[0]
		c.hasByte = false
		c.mu.Unlock()
		return 1, nil
	}
	if c.remain == 0 {
		c.mu.Unlock()
		return 0, errHeadTooLarge
	}
	if c.remain > 0 && int64(len(p)) > c.remain {
		p = p[:c.remain]
	}
	c.mu.Unlock()
	n, err := c.rwc.Read(p)
	c.mu.Lock()
	if c.remain > 0 {
		c.remain -= int64(n)
	}
	c.mu.Unlock()
	return n, err
}

var errHeadTooLarge = errors.New("httpserve: request head too large")

// connWriter writes to the socket and remembers the first failure, which
// also ends the running request's context, as a gone client does.
type connWriter struct{ c *conn }

func (w connWriter) Write(p []byte) (int, error) {
	n, err := w.c.rwc.Write(p)
	if err != nil {
		w.c.mu.Lock()
		if w.c.werr == nil {
			w.c.werr = err
		}
		cancel := w.c.cancel
		w.c.mu.Unlock()
		if cancel != nil {
			cancel(errClientGone)
		}
	}
	return n, err
}

// writeErr returns the first error writing to the connection.
func (c *conn) writeErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.werr
}

func (c *conn) serve() {
	defer c.srv.forget(c)
	defer c.rwc.Close()
	for {
		req, err := c.readRequest()
		if err != nil {
			c.refuse(err)
			return
		}
		if !c.srv.setIdle(c, false) {
			return
		}
		keep := c.serveOne(req)
		if !keep || !c.srv.setIdle(c, true) {
			return
		}
	}
}

// readRequest waits for the next request and reads its head, with the idle
// and head timeouts, and checks what net/http's server checks beyond the
// parser: the protocol major version and the Host header.
func (c *conn) readRequest() (*http.Request, error) {
	opts := &c.srv.opts
	// The bound covers the bytes read while waiting too, since they are the
	// head's first ones.
	c.setRemain(int64(opts.MaxHeaderBytes) + 4096) // net/http's slack for the request line
	wait := opts.IdleTimeout
	if !c.used {
		wait = opts.ReadHeaderTimeout // a new connection owes its request at once
	}
	c.used = true
	for {
		if c.br.Buffered() == 0 {
			c.rwc.SetReadDeadline(time.Now().Add(wait))
			if _, err := c.br.Peek(1); err != nil {
				return nil, io.EOF // closed or timed out between requests: say nothing
			}
		}
		// Empty lines before a request line are ignored (RFC 9112 §2.2);
		// some clients send a CRLF after a POST body.
		if b, _ := c.br.Peek(1); b[0] != '\r' && b[0] != '\n' {
			break
		}
		c.br.Discard(1)
	}
	c.rwc.SetReadDeadline(time.Now().Add(opts.ReadHeaderTimeout))
	req, err := http.ReadRequest(c.br)
	c.mu.Lock()
	tooLarge := c.remain == 0
	c.remain = -1
	c.mu.Unlock()
	c.rwc.SetReadDeadline(time.Time{})
	if err != nil && tooLarge {
		return nil, errHeadTooLarge
	}
	if err != nil {
		return nil, err
	}
	if req.ProtoMajor != 1 {
		return nil, errVersion
	}
	// http.ReadRequest has moved the Host header to req.Host (or taken the
	// URI's host instead) and refused more than one. The hub is no proxy:
	// a request for an absolute URI is refused, so req.Host is the header.
	if req.URL.IsAbs() || req.URL.Host != "" {
		return nil, badRequest("absolute request URI")
	}
	if req.ProtoAtLeast(1, 1) && req.Host == "" {
		return nil, badRequest("missing required Host header")
	}
	if !validHost(req.Host) {
		return nil, badRequest("malformed Host header")
	}
	if e := req.Header.Get("Expect"); e != "" && !strings.EqualFold(e, "100-continue") {
		return nil, errExpectation
	}
	req.RemoteAddr = c.rwc.RemoteAddr().String()
	return req, nil
}

func (c *conn) setRemain(n int64) {
	c.mu.Lock()
	c.remain = n
	c.mu.Unlock()
}

type badRequest string

func (e badRequest) Error() string { return string(e) }

var (
	errVersion     = errors.New("unsupported HTTP version")
	errExpectation = errors.New("unsupported Expect header")
)

// validHost allows the characters a host[:port] or bracketed IPv6 literal
// can have, as net/http's server does.
func validHost(h string) bool {
	for i := 0; i < len(h); i++ {
		b := h[i]
		switch {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		case strings.IndexByte("!$%&'()*+,-.:;=[]_~", b) >= 0:
		default:
			return false
		}
	}
	return true
}

// refuse answers a request that could not be read, when there is anything
// to say, and the connection then closes.
func (c *conn) refuse(err error) {
	var status int
	var bad badRequest
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return
	case errors.Is(err, errHeadTooLarge):
		status = http.StatusRequestHeaderFieldsTooLarge
	case errors.Is(err, errVersion):
		status = http.StatusHTTPVersionNotSupported
	case errors.Is(err, errExpectation):
		status = http.StatusExpectationFailed
	case errors.As(err, &bad):
		status = http.StatusBadRequest
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return
		}
		status = http.StatusBadRequest
	}
	c.srv.log.Debug("refused a malformed request", "remote", c.rwc.RemoteAddr().String(), "status", status, "err", err)
	text := http.StatusText(status)
	c.rwc.SetWriteDeadline(time.Now().Add(time.Second))
	io.WriteString(c.rwc, "HTTP/1.1 "+strconv.Itoa(status)+" "+text+
		"\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"+strconv.Itoa(status)+" "+text)
	c.lingerClose()
}

// lingerClose ends a connection whose client may still be sending: closing
// a socket with unread input makes the kernel reset it, and the reset can
// destroy the response before the client reads it. So the write side shuts
// first, and what arrives is read and dropped for a short while, as
// net/http does.
func (c *conn) lingerClose() {
	if cw, ok := c.rwc.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	deadline := time.Now().Add(500 * time.Millisecond)
	c.rwc.SetReadDeadline(deadline)
	if _, err := io.CopyN(io.Discard, c.rwc, 256<<10); err == nil {
		// The client is still sending: closing now would reset the
		// connection all the same. Wait out the rest of the time, as
		// net/http does, so the client reads the answer first.
		time.Sleep(time.Until(deadline))
	}
	c.rwc.Close()
}

// serveOne runs the handler for req and finishes its response. It reports
// whether the connection can carry another request.
func (c *conn) serveOne(req *http.Request) bool {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(context.Canceled)
	body := &reqBody{rc: req.Body}
	if req.Header.Get("Expect") != "" && req.ContentLength != 0 && req.ProtoAtLeast(1, 1) {
		body.expect = true
	}
	req.Body = body
	c.mu.Lock()
	c.cancel = cancel
	c.bodyDone = req.ContentLength == 0 && !body.expect
	c.watchDue = false
	c.mu.Unlock()
	req = req.WithContext(ctx)

	w := &response{c: c, req: req, body: body, header: http.Header{}, contentLength: -1}
	body.w = w
	timer := coarse.AfterFunc(c.srv.opts.WatchAfter, c.watchSoon)
	ok := c.srv.handle(w, req)
	timer.Stop()
	// With cancel cleared, a watchSoon that raced the Stop starts nothing.
	c.mu.Lock()
	c.cancel = nil
	c.mu.Unlock()
	c.stopWatching()
	if !ok {
		return false
	}
	// finish commits the head if the handler did not; commit decides
	// whether a client still waiting for its 100 Continue ends the
	// connection.
	if err := w.finish(); err != nil {
		return false
	}
	ended := body.ended || req.ContentLength == 0 && !body.expect
	if w.closeAfter || req.Close || !req.ProtoAtLeast(1, 1) {
		if !ended {
			c.lingerClose()
		}
		return false
	}
	if ended {
		return true
	}
	c.rwc.SetReadDeadline(time.Now().Add(c.srv.opts.ReadHeaderTimeout))
	defer c.rwc.SetReadDeadline(time.Time{})
	if !discard(body.rc) {
		c.lingerClose()
		return false
	}
	return true
}

// watchSoon starts watching the connection for the client going away, now
// if the request's body has been read and otherwise once it is.
func (c *conn) watchSoon() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel == nil {
		return
	}
	if !c.bodyDone {
		c.watchDue = true
		return
	}
	c.startWatchLocked()
}

// bodyEnded is called when the request body reaches its end.
func (c *conn) bodyEnded() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bodyDone = true
	if c.watchDue && c.cancel != nil {
		c.watchDue = false
		c.startWatchLocked()
	}
}

// startWatchLocked starts a goroutine that waits to read one byte. A client
// that sends nothing while its request is answered gets its context ended
// when the read fails; a byte it does send (a pipelined request) is kept
// for the next read.
func (c *conn) startWatchLocked() {
	if c.inRead || c.hasByte {
		return
	}
	c.inRead = true
	cancel := c.cancel
	go func() {
		n, err := c.rwc.Read(c.byteBuf[:])
		c.mu.Lock()
		if n == 1 {
			c.hasByte = true
		}
		var ne net.Error
		aborted := c.aborting && errors.As(err, &ne) && ne.Timeout()
		c.aborting = false
		c.inRead = false
		c.cond.Broadcast()
		c.mu.Unlock()
		if err != nil && !aborted {
			cancel(errClientGone)
		}
	}()
}

// stopWatching ends the watch goroutine, if one runs, by expiring the read
// deadline, and waits for it.
func (c *conn) stopWatching() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.inRead {
		return
	}
	c.aborting = true
	c.rwc.SetReadDeadline(time.Unix(1, 0))
	for c.inRead {
		c.cond.Wait()
	}
	c.rwc.SetReadDeadline(time.Time{})
}

// reqBody is the request body the handler sees. Closing it does not read
// the rest (net/http's body would, without bound); the connection decides
// afterwards whether the rest is small enough to skip. With Expect:
// 100-continue, the first read tells the client to go ahead.
type reqBody struct {
	w         *response // and through it the connection
	rc        io.ReadCloser
	expect    bool
	continued bool // 100 Continue was sent
	closed    bool
	ended     bool
}

func (b *reqBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	// An interim response cannot follow the final one's head: once that
	// is out, the client gets no 100 Continue (and the connection closes).
	if b.expect && !b.continued && !b.w.committed {
		b.continued = true
		if _, err := io.WriteString(b.w.c.bw, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return 0, err
		}
		if err := b.w.c.bw.Flush(); err != nil {
			return 0, err
		}
	}
	n, err := b.rc.Read(p)
	if err == io.EOF && !b.ended {
		b.ended = true
		b.w.c.bodyEnded()
	}
	return n, err
}

func (b *reqBody) Close() error {
	b.closed = true
	return nil
}
