package httpserve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// start serves h on a loopback port until the test ends.
func start(t *testing.T, h http.Handler, opts Options) (*Server, string) {
	t.Helper()
	opts.Handler = h
	s := New(opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
		}
	})
	return s, ln.Addr().String()
}

// rawConn is a client connection that writes bytes as given and reads
// responses with net/http's parser.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dial(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (c *rawConn) send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.nc, s); err != nil {
		c.t.Fatal(err)
	}
}

// read reads one response to a request of method and its whole body.
func (c *rawConn) read(method string) (*http.Response, string) {
	c.t.Helper()
	resp, err := http.ReadResponse(c.br, &http.Request{Method: method})
	if err != nil {
		c.t.Fatalf("reading a response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("reading a response body: %v", err)
	}
	return resp, string(b)
}

// closed reports whether the server closed the connection: a read sees EOF.
func (c *rawConn) closed() bool {
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.br.ReadByte()
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err)
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

func post(path, body string, extra ...string) string {
	return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + strings.Join(extra, "") +
		fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)) + body
}

func TestFramingAndKeepAlive(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
		case "/stream":
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			for i := range 3 {
				fmt.Fprintf(w, "data: %d\n\n", i)
				w.(http.Flusher).Flush()
			}
		case "/big":
			w.Write([]byte(strings.Repeat("x", 3*holdLimit)))
		case "/empty":
			w.WriteHeader(http.StatusAccepted)
		}
	}), Options{})
	c := dial(t, addr)

	c.send(post("/json", `{"a":1}`))
	resp, body := c.read("POST")
	if resp.StatusCode != 200 || body != `{"a":1}` || resp.ContentLength != 7 || len(resp.TransferEncoding) != 0 {
		t.Fatalf("json: status %d, body %q, length %d, te %v", resp.StatusCode, body, resp.ContentLength, resp.TransferEncoding)
	}
	if resp.Close {
		t.Fatal("json: the connection closes")
	}
	if d, err := http.ParseTime(resp.Header.Get("Date")); err != nil || time.Since(d) > 2*time.Second || time.Until(d) > time.Second {
		t.Fatalf("json: Date %q is not now (%v)", resp.Header.Get("Date"), err)
	}

	c.send(post("/stream", ""))
	resp, body = c.read("POST")
	if resp.Header.Get("Content-Type") != "text/event-stream" || len(resp.TransferEncoding) != 1 || body != "data: 0\n\ndata: 1\n\ndata: 2\n\n" {
		t.Fatalf("stream: type %q, te %v, body %q", resp.Header.Get("Content-Type"), resp.TransferEncoding, body)
	}

	c.send(post("/big", ""))
	resp, body = c.read("POST")
	if len(body) != 3*holdLimit || len(resp.TransferEncoding) != 1 {
		t.Fatalf("big: %d bytes, te %v", len(body), resp.TransferEncoding)
	}
	if got := resp.Header.Get("Content-Type"); got != "text/plain; charset=utf-8" {
		t.Fatalf("big: sniffed Content-Type %q", got)
	}

	c.send(post("/empty", ""))
	resp, body = c.read("POST")
	if resp.StatusCode != http.StatusAccepted || body != "" || resp.ContentLength != 0 {
		t.Fatalf("empty: status %d, body %q, length %d", resp.StatusCode, body, resp.ContentLength)
	}

	c.send("HEAD /json HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, body = c.read("HEAD")
	if resp.StatusCode != 200 || body != "" {
		t.Fatalf("head: status %d, body %q", resp.StatusCode, body)
	}
	// All of it went over one connection, and it is still open.
	c.send(post("/json", "1"))
	if _, body := c.read("POST"); body != "1" {
		t.Fatalf("after the others: body %q", body)
	}
}

func TestPipelinedRequestsAnswerInOrder(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	}), Options{})
	c := dial(t, addr)
	c.send(post("/", "one") + post("/", "two") + post("/", "three"))
	for _, want := range []string{"one", "two", "three"} {
		if _, body := c.read("POST"); body != want {
			t.Fatalf("got %q, want %q", body, want)
		}
	}
}

// awaitCause is a handler that reads the body it is given, if any,
// signals entered, and sends the cause its request's context ends with (or
// an error after 30 s).
func awaitCause(readBody bool, entered chan<- struct{}, cause chan<- error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if readBody {
			io.ReadAll(r.Body)
		}
		close(entered)
		select {
		case <-r.Context().Done():
			cause <- context.Cause(r.Context())
		case <-time.After(30 * time.Second):
			cause <- errors.New("the context never ended")
		}
	})
}

// A handler still running after WatchAfter learns that its client went
// away through its request's context.
func TestClientGoneEndsContext(t *testing.T) {
	entered := make(chan struct{})
	cause := make(chan error, 1)
	_, addr := start(t, awaitCause(true, entered, cause), Options{WatchAfter: time.Millisecond})
	c := dial(t, addr)
	c.send(post("/", "x"))
	<-entered
	c.nc.Close()
	if err := <-cause; !errors.Is(err, errClientGone) {
		t.Fatalf("cause %v, want errClientGone", err)
	}
}

// A watched request whose client pipelines the next one is not cancelled,
// and the byte the watch read reaches the next request.
func TestWatchKeepsPipelinedByte(t *testing.T) {
	var n atomic.Int32
	watching := make(chan struct{})
	// until polls c's state under its lock, for up to 5 s.
	until := func(c *conn, cond func() bool) bool {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			c.mu.Lock()
			ok := cond()
			c.mu.Unlock()
			if ok {
				return true
			}
		}
		return false
	}
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if n.Add(1) == 1 {
			c := w.(*response).c
			if !until(c, func() bool { return c.inRead }) {
				t.Error("the request was never watched")
			}
			close(watching)
			if !until(c, func() bool { return c.hasByte }) {
				t.Error("the watch never read the next request's first byte")
			}
			if r.Context().Err() != nil {
				b = []byte("cancelled")
			}
		}
		w.Write(b)
	}), Options{WatchAfter: time.Millisecond})
	c := dial(t, addr)
	c.send(post("/", "first"))
	<-watching
	c.send(post("/", "second"))
	for _, want := range []string{"first", "second"} {
		if _, body := c.read("POST"); body != want {
			t.Fatalf("got %q, want %q", body, want)
		}
	}
}

func TestMalformedRequestsAreRefused(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("handled"))
	}), Options{MaxHeaderBytes: 1 << 10})
	for _, tc := range []struct {
		name, req string
		status    int
	}{
		{"no host", "GET / HTTP/1.1\r\n\r\n", 400},
		{"bad host", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400},
		{"two hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
		{"bad request line", "GET\r\n\r\n", 400},
		{"bad header", "GET / HTTP/1.1\r\nHost: a\r\nno colon\r\n\r\n", 400},
		{"bad length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400},
		{"http/2", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505},
		{"expect", "GET / HTTP/1.1\r\nHost: a\r\nExpect: something\r\n\r\n", 417},
		{"huge head", "GET / HTTP/1.1\r\nHost: a\r\nX: " + strings.Repeat("y", 8<<10) + "\r\n\r\n", 431},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, addr)
			c.send(tc.req)
			resp, _ := c.read("GET")
			if resp.StatusCode != tc.status || !resp.Close {
				t.Fatalf("status %d close %v, want %d and close", resp.StatusCode, resp.Close, tc.status)
			}
			if !c.closed() {
				t.Fatal("the connection stayed open")
			}
		})
	}
	// HTTP/1.0 needs no Host, and its connection closes after the reply.
	c := dial(t, addr)
	c.send("GET / HTTP/1.0\r\n\r\n")
	if resp, body := c.read("GET"); resp.StatusCode != 200 || body != "handled" {
		t.Fatalf("HTTP/1.0: status %d body %q", resp.StatusCode, body)
	}
	if !c.closed() {
		t.Fatal("HTTP/1.0: the connection stayed open")
	}
}

func TestExpectContinue(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ignore" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	}), Options{})
	c := dial(t, addr)
	c.send("POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	line, err := c.br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("got %q, %v before sending the body", line, err)
	}
	c.br.ReadString('\n')
	c.send("hello")
	if _, body := c.read("POST"); body != "hello" {
		t.Fatalf("body %q", body)
	}

	// A handler that never reads the body: no 100 Continue, and the
	// connection closes after the answer.
	c.send("POST /ignore HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	if resp, _ := c.read("POST"); resp.StatusCode != http.StatusForbidden || !resp.Close {
		t.Fatalf("status %d close %v", resp.StatusCode, resp.Close)
	}
	if !c.closed() {
		t.Fatal("the connection stayed open")
	}
}

func TestUnreadBody(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body.Close()
		if _, err := r.Body.Read(make([]byte, 1)); !errors.Is(err, http.ErrBodyReadAfterClose) {
			t.Errorf("read after close: %v", err)
		}
		w.Write([]byte("ok"))
	}), Options{})
	c := dial(t, addr)
	// A small unread body is skipped and the connection carries on.
	c.send(post("/", strings.Repeat("a", 1000)) + post("/", "b"))
	c.read("POST")
	if _, body := c.read("POST"); body != "ok" {
		t.Fatalf("second answer %q", body)
	}
	// A large one closes the connection instead of being read to its end.
	big := strings.Repeat("a", 1<<20)
	go io.WriteString(c.nc, post("/", big))
	c.read("POST")
	if !c.closed() {
		t.Fatal("the connection stayed open")
	}
}

func TestPanicClosesOnlyItsConnection(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			panic("boom")
		}
		w.Write([]byte("fine"))
	}), Options{})
	c := dial(t, addr)
	c.send(post("/panic", ""))
	if !c.closed() {
		t.Fatal("the connection stayed open after a panic")
	}
	c2 := dial(t, addr)
	c2.send(post("/", ""))
	if _, body := c2.read("POST"); body != "fine" {
		t.Fatalf("after the panic: %q", body)
	}
}

func TestShutdownWaitsForRequestsInFlight(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	s, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(entered)
			<-release
		}
		w.Write([]byte("done"))
	}), Options{})
	idle := dial(t, addr)
	idle.send(post("/", ""))
	idle.read("POST")
	busy := dial(t, addr)
	busy.send(post("/slow", ""))
	<-entered

	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	if !idle.closed() {
		t.Fatal("an idle connection stayed open during shutdown")
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a request in flight", err)
	default:
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		// The listener is closed once Shutdown has begun; a dial that
		// still connects was queued before, so only read what it gets.
		t.Log("a dial connected during shutdown")
	}
	close(release)
	resp, body := busy.read("POST")
	if body != "done" || !resp.Close && !busy.closed() {
		t.Fatalf("in-flight request: body %q", body)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

func TestShutdownDeadlineClosesWhatRemains(t *testing.T) {
	entered := make(chan struct{})
	s, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done()
	}), Options{WatchAfter: time.Millisecond})
	c := dial(t, addr)
	c.send(post("/", ""))
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v", err)
	}
	if !c.closed() {
		t.Fatal("the connection stayed open")
	}
}

func TestIdleTimeoutClosesConnection(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), Options{IdleTimeout: 20 * time.Millisecond})
	c := dial(t, addr)
	c.send(post("/", ""))
	c.read("POST")
	if !c.closed() {
		t.Fatal("an idle connection outlived its timeout")
	}
}

func TestResponseHeadersCannotBeSplit(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Echo", "a\r\nInjected: yes")
	}), Options{})
	c := dial(t, addr)
	c.send(post("/", ""))
	resp, _ := c.read("POST")
	if resp.Header.Get("Injected") != "" {
		t.Fatal("a header value split the response head")
	}
}

func TestSuperfluousAndInvalidWrites(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/204":
			w.WriteHeader(http.StatusNoContent)
			w.WriteHeader(http.StatusOK)
			if _, err := w.Write([]byte("x")); !errors.Is(err, http.ErrBodyNotAllowed) {
				t.Errorf("write after 204: %v", err)
			}
		case "/length":
			w.Header().Set("Content-Length", "3")
			if _, err := w.Write([]byte("abcd")); !errors.Is(err, http.ErrContentLength) {
				t.Errorf("write past Content-Length: %v", err)
			}
			w.Write([]byte("ab"))
		}
	}), Options{})
	c := dial(t, addr)
	c.send(post("/204", ""))
	if resp, _ := c.read("POST"); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("status %d", resp.StatusCode)
	}
	// A body shorter than its declared length can only end with the
	// connection.
	c.send(post("/length", ""))
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(resp.Body); string(b) != "ab" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("short body %q, %v", b, err)
	}
}

func TestServeAfterCloseReturnsServerClosed(t *testing.T) {
	s := New(Options{Handler: http.NotFoundHandler()})
	s.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("Serve left its listener open")
	}
}

// net/http's own client works against the server, keep-alive included.
func TestNetHTTPClient(t *testing.T) {
	var conns atomic.Int32
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}), Options{})
	tr := &http.Transport{DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
		conns.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, a)
	}}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr}
	for i := range 20 {
		want := fmt.Sprintf(`{"i":%d}`, i)
		resp, err := cl.Post("http://"+addr+"/", "application/json", strings.NewReader(want))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != want {
			t.Fatalf("got %q, want %q", b, want)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for 20 sequential requests, want 1", n)
	}
}
