package main

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The floors: proxies in front of the reference upstream that do no MCP
// work, measured beside the hub so that its overhead is judged against
// what any proxy pays on this machine.

// serveFloor serves ln as the floor named mode ("relay" or "http-proxy")
// in front of the upstream at the address to. It returns when ln is closed.
func serveFloor(mode string, ln net.Listener, to string) error {
	switch mode {
	case "relay":
		return serveRelay(ln, to)
	case "http-proxy":
		p := newHTTPProxy(to)
		defer p.transport.CloseIdleConnections()
		return (&http.Server{Handler: p}).Serve(ln)
	}
	return errors.New("unknown floor " + mode)
}

// serveRelay opens a connection to target for each one accepted on ln and
// copies bytes both ways between them, and nothing else: the least any
// proxy in front of the upstream can cost (one more process and one more
// TCP hop, no parsing). It returns when ln is closed.
func serveRelay(ln net.Listener, target string) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			u, err := net.Dial("tcp", target)
			if err != nil {
				return
			}
			// The relay closes its upstream side when a client goes;
			// closing it with a reset leaves no TIME_WAIT behind, so a
			// client that opens and drops many connections (the Go SDK
			// keeps 2 idle per host) cannot run the relay out of ports.
			u.(*net.TCPConn).SetLinger(0)
			defer u.Close()
			relay(c, u)
		}()
	}
}

// relay copies bytes both ways between c and u until either side ends.
func relay(c, u net.Conn) {
	// Either side ending ends both: a server keeps an idle connection
	// open, and the relay must not keep it for a client that has gone.
	done := make(chan struct{}, 2)
	go func() { io.Copy(u, c); done <- struct{}{} }()
	go func() { io.Copy(c, u); done <- struct{}{} }()
	<-done
}

// httpProxy is the least an HTTP-aware proxy does: net/http's server reads
// each request, one http.Transport (a pool of kept-alive connections)
// forwards it to the upstream, and the response's status, headers and body
// are copied back as they come. There is no MCP work and no rewriting:
// headers pass verbatim except the hop-by-hop ones that net/http manages
// on each side itself.
type httpProxy struct {
	target    string // the upstream's scheme and host, "http://host:port"
	transport *http.Transport
}

// newHTTPProxy returns a proxy to the upstream at addr (host:port). Its
// pool keeps enough idle connections for the 32 concurrent callers of the
// bench's load phase, so none of them dials per call.
func newHTTPProxy(addr string) *httpProxy {
	return &httpProxy{
		target: "http://" + addr,
		transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConns:        64,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
			// Without this the transport would ask for gzip and unpack it,
			// which changes both the request's and the response's headers.
			DisableCompression: true,
		},
	}
}

// hopHeaders are the headers that describe one connection, not the
// message, and that net/http writes itself on each side (RFC 9110, 7.6.1).
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func dropHopHeaders(h http.Header) {
	// A Connection header may name further headers of this one hop.
	for _, f := range h.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// copyBuffers holds the buffers response bodies are copied through, so a
// call costs the proxy no 32 KB allocation.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (p *httpProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	// The transport may still be reading the request body while the
	// response goes out; without this, the server would read the rest of
	// the body itself, and close it, as soon as the response's head is
	// written.
	rc.EnableFullDuplex()
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.target+r.URL.RequestURI(), nil)
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	if r.ContentLength != 0 {
		body := &requestBody{body: r.Body}
		defer body.Close()
		out.Body = body
	}
	out.ContentLength = r.ContentLength // -1 (a chunked body) stays chunked
	out.Host = r.Host
	out.Header = r.Header.Clone()
	dropHopHeaders(out.Header)
	if _, ok := out.Header["User-Agent"]; !ok {
		// A present but empty User-Agent keeps the transport from adding
		// its own.
		out.Header["User-Agent"] = nil
	}
	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()

	h := w.Header()
	for k, vv := range resp.Header {
		h[k] = vv
	}
	dropHopHeaders(h)
	if _, ok := h["Content-Type"]; !ok {
		// A present but empty Content-Type keeps the server from sniffing
		// the body and adding one.
		h["Content-Type"] = nil
	}
	w.WriteHeader(resp.StatusCode)

	// Each piece of the body is sent on as soon as it is read, so a stream
	// reaches the client event by event. The head goes out with the first
	// piece (or, for an empty body, when the handler returns), as it does
	// through net/http's ReverseProxy; the reference upstream writes a
	// comment at once on a stream that may stay idle, for that reason.
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	for {
		n, err := resp.Body.Read(*bp)
		if n > 0 {
			if _, werr := w.Write((*bp)[:n]); werr != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			// The upstream broke off: ending the handler normally would
			// finish a chunked body as if it were complete, so the
			// client's connection is aborted instead.
			panic(http.ErrAbortHandler)
		}
	}
}

// requestBody hands the client's request body to the transport, whose
// writer may read it until after the handler has returned. Once it has
// seen the body's end it answers io.EOF itself, so the transport's last
// read never reaches a body the server has closed; once the handler has
// returned (Close), an unfinished body fails rather than ending early.
// The server, not the transport, closes the client's body.
type requestBody struct {
	body   io.Reader
	ended  bool // set and read only by the transport's writer
	closed atomic.Bool
}

// errRequestGone is what the transport reads once the handler has
// returned before the request body ended.
var errRequestGone = errors.New("the client's request is over")

func (b *requestBody) Read(p []byte) (int, error) {
	if b.ended {
		return 0, io.EOF
	}
	if b.closed.Load() {
		return 0, errRequestGone
	}
	n, err := b.body.Read(p)
	b.ended = err == io.EOF
	return n, err
}

func (b *requestBody) Close() error {
	b.closed.Store(true)
	return nil
}
