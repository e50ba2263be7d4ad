package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// rawServer answers each request on a connection with the next reply its
// script gives, written as raw bytes, so the tests control the wire.
type rawServer struct {
	t     *testing.T
	ln    net.Listener
	reply func(conn, req int, r *http.Request) (raw string, closeAfter bool)

	mu    sync.Mutex
	conns int
	reqs  []*http.Request
	ends  chan int // connection numbers, as the server closes them
}

func newRawServer(t *testing.T, reply func(conn, req int, r *http.Request) (string, bool)) *rawServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{t: t, ln: ln, reply: reply, ends: make(chan int, 64)}
	var wg sync.WaitGroup
	var open sync.Map
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns++
			n := s.conns
			s.mu.Unlock()
			open.Store(c, true)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { c.Close(); open.Delete(c); s.ends <- n }()
				br := bufio.NewReader(c)
				for i := 1; ; i++ {
					r, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					body, _ := io.ReadAll(r.Body)
					r.Body = io.NopCloser(strings.NewReader(string(body)))
					s.mu.Lock()
					s.reqs = append(s.reqs, r)
					s.mu.Unlock()
					raw, closeAfter := s.reply(n, i, r)
					if _, err := io.WriteString(c, raw); err != nil || closeAfter {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		open.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		wg.Wait()
	})
	return s
}

func (s *rawServer) url() string { return "http://" + s.ln.Addr().String() + "/mcp" }

func (s *rawServer) connCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

func (s *rawServer) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.reqs...)
}

func chunked(body string) string {
	return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
		strconvHex(len(body)) + "\r\n" + body + "\r\n0\r\n\r\n"
}

func strconvHex(n int) string {
	const digits = "0123456789abcdef"
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 16 {
		b = append([]byte{digits[n%16]}, b...)
	}
	return string(b)
}

func newTestH1(t *testing.T, url string) *h1 {
	t.Helper()
	h := newH1(Config{URL: url})
	if h == nil {
		t.Fatalf("newH1(%s) = nil, want a pool for a plain-http URL", url)
	}
	t.Cleanup(h.close)
	return h
}

func h1Post(t *testing.T, h *h1, ctx context.Context, url, body string, header map[string]string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if !h.carries(req) {
		t.Fatalf("h1 does not carry POST %s", url)
	}
	return h.roundTrip(req)
}

func readAllClose(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return string(b)
}

func TestH1KeepsConnectionAlive(t *testing.T) {
	srv := newRawServer(t, func(_, i int, r *http.Request) (string, bool) {
		switch i % 3 {
		case 0:
			return "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n", false
		case 1:
			return chunked("data: {\"n\":1}\n\n"), false
		}
		return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"n\":2}", false
	})
	h := newTestH1(t, srv.url())
	for i := range 30 {
		resp, err := h1Post(t, h, context.Background(), srv.url(), `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"X-Api": "k"})
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if resp.StatusCode == http.StatusAccepted {
			resp.Body.Close() // a 202 is never read, and still keeps its connection
			continue
		}
		if got := readAllClose(t, resp); !strings.Contains(got, `"n"`) {
			t.Fatalf("request %d: body %q", i, got)
		}
	}
	if n := srv.connCount(); n != 1 {
		t.Errorf("30 sequential requests used %d connections, want 1", n)
	}
	r := srv.requests()[0]
	if r.Method != http.MethodPost || r.URL.Path != "/mcp" || r.Host != strings.TrimPrefix(strings.TrimSuffix(srv.url(), "/mcp"), "http://") ||
		r.Header.Get("X-Api") != "k" || r.ContentLength != int64(len(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)) {
		t.Errorf("server saw %s %s Host %q X-Api %q Content-Length %d", r.Method, r.URL.Path, r.Host, r.Header.Get("X-Api"), r.ContentLength)
	}
	if b, _ := io.ReadAll(r.Body); string(b) != `{"jsonrpc":"2.0","id":1,"method":"ping"}` {
		t.Errorf("server read body %q", b)
	}
	// Closing the pool closes the kept connection.
	h.close()
	select {
	case <-srv.ends:
	case <-time.After(5 * time.Second):
		t.Fatal("the idle connection stayed open after close")
	}
}

// A connection is given back only when its response was read to the end
// and allows it; anything else closes it.
func TestH1ClosesWhatCannotBeReused(t *testing.T) {
	srv := newRawServer(t, func(conn, _ int, r *http.Request) (string, bool) {
		switch r.Header.Get("X-Case") {
		case "close":
			return "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", false
		case "http10":
			return "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", false
		}
		return chunked("data: one\n\n"), false // a partial read leaves the terminator unread
	})
	h := newTestH1(t, srv.url())
	for i, c := range []string{"close", "http10", "partial"} {
		resp, err := h1Post(t, h, context.Background(), srv.url(), "{}", map[string]string{"X-Case": c})
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if c == "partial" {
			buf := make([]byte, 3)
			io.ReadFull(resp.Body, buf)
			resp.Body.Close()
		} else {
			readAllClose(t, resp)
		}
		select {
		case n := <-srv.ends:
			if n != i+1 {
				t.Errorf("%s: connection %d ended, want %d", c, n, i+1)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the connection stayed open; it cannot be reused", c)
		}
		h.mu.Lock()
		idle := len(h.idle)
		h.mu.Unlock()
		if idle != 0 {
			t.Errorf("%s: %d idle connections kept, want 0", c, idle)
		}
	}
}

// An idle connection the server has closed is noticed before a request is
// written on it: the request goes out on a new one and succeeds.
func TestH1SkipsConnectionsTheServerClosed(t *testing.T) {
	srv := newRawServer(t, func(conn, _ int, _ *http.Request) (string, bool) {
		// The first connection is closed right after its response, as a
		// server with a short keep-alive timeout would.
		return "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", conn == 1
	})
	h := newTestH1(t, srv.url())
	resp, err := h1Post(t, h, context.Background(), srv.url(), "{}", nil)
	if err != nil {
		t.Fatal(err)
	}
	readAllClose(t, resp)
	select {
	case <-srv.ends:
	case <-time.After(5 * time.Second):
		t.Fatal("the server did not close the first connection")
	}
	waitFor(t, 5*time.Second, "the closed connection to read as dead", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.idle) == 1 && !h.idle[0].alive()
	})
	resp, err = h1Post(t, h, context.Background(), srv.url(), "{}", nil)
	if err != nil {
		t.Fatalf("request after the server closed the idle connection: %v", err)
	}
	if got := readAllClose(t, resp); got != "ok" {
		t.Fatalf("body %q", got)
	}
	if n := srv.connCount(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

// A request whose context ends while it waits for its response returns at
// once with the context's cause, and its connection is closed.
func TestH1CancelWhileWaiting(t *testing.T) {
	release := make(chan struct{})
	srv := newRawServer(t, func(_, _ int, _ *http.Request) (string, bool) {
		<-release
		return "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false
	})
	t.Cleanup(func() { close(release) }) // before the server's cleanup waits for it
	h := newTestH1(t, srv.url())
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("caller gave up")
	time.AfterFunc(50*time.Millisecond, func() { cancel(cause) })
	start := time.Now()
	_, err := h1Post(t, h, ctx, srv.url(), "{}", nil)
	if !errors.Is(err, cause) {
		t.Fatalf("err = %v, want the context's cause", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("returned %v after the cancel", d)
	}
	h.mu.Lock()
	idle := len(h.idle)
	h.mu.Unlock()
	if idle != 0 {
		t.Errorf("an interrupted connection was kept (%d idle)", idle)
	}
}

// Informational responses are skipped; the real one is returned.
func TestH1SkipsInformationalResponses(t *testing.T) {
	srv := newRawServer(t, func(_, _ int, _ *http.Request) (string, bool) {
		return "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n" + chunked("data: x\n\n"), false
	})
	h := newTestH1(t, srv.url())
	resp, err := h1Post(t, h, context.Background(), srv.url(), "{}", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("got %d %q, want the 200 after the 1xx", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if got := readAllClose(t, resp); got != "data: x\n\n" {
		t.Fatalf("body %q", got)
	}
}

// A header that would break the request's head is refused before anything
// is sent.
func TestH1RefusesHeaderInjection(t *testing.T) {
	srv := newRawServer(t, func(_, _ int, _ *http.Request) (string, bool) {
		return "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false
	})
	h := newTestH1(t, srv.url())
	for _, hdr := range []map[string]string{{"X-A": "v\r\nX-Injected: 1"}, {"X-A": "v\nx"}, {"X-A": "v\x00"}} {
		req, _ := http.NewRequest(http.MethodPost, srv.url(), strings.NewReader("{}"))
		for k, v := range hdr {
			req.Header[k] = []string{v}
		}
		if _, err := h.roundTrip(req); !errors.Is(err, errBadHeader) {
			t.Errorf("header %q: err = %v, want errBadHeader", hdr, err)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, srv.url(), strings.NewReader("{}"))
	req.Header["Bad Name"] = []string{"v"}
	if _, err := h.roundTrip(req); !errors.Is(err, errBadHeader) {
		t.Errorf("header name with a space: err = %v, want errBadHeader", err)
	}
	if got := len(srv.requests()); got != 0 {
		t.Errorf("the server received %d requests, want 0", got)
	}
}

func TestH1OnlyForPlainHTTPPosts(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want bool
	}{
		{Config{URL: "http://127.0.0.1:9/mcp"}, true},
		{Config{URL: "http://localhost/mcp"}, true},
		{Config{URL: "https://127.0.0.1:9/mcp"}, false},
		{Config{URL: "http://user:pw@127.0.0.1:9/mcp"}, false},
		{Config{URL: "http://127.0.0.1:9/mcp", HTTPClient: &http.Client{}}, false},
		{Config{Command: "x"}, false},
	} {
		if got := newH1(c.cfg) != nil; got != c.want {
			t.Errorf("newH1(%q, client set %v) = %v, want %v", c.cfg.URL, c.cfg.HTTPClient != nil, got, c.want)
		}
	}
	if h := newH1(Config{URL: "http://localhost/mcp"}); h.addr != "localhost:80" {
		t.Errorf("addr %q, want the default port", h.addr)
	}
	h := newH1(Config{URL: "http://127.0.0.1:9/mcp"})
	for _, c := range []struct {
		method, url string
		want        bool
	}{
		{http.MethodPost, "http://127.0.0.1:9/messages?s=1", true},
		{http.MethodGet, "http://127.0.0.1:9/mcp", false},
		{http.MethodDelete, "http://127.0.0.1:9/mcp", false},
		{http.MethodPost, "http://127.0.0.2:9/mcp", false},
		{http.MethodPost, "https://127.0.0.1:9/mcp", false},
	} {
		req, _ := http.NewRequest(c.method, c.url, nil)
		if got := h.carries(req); got != c.want {
			t.Errorf("carries(%s %s) = %v, want %v", c.method, c.url, got, c.want)
		}
	}
	h.close()
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:9/mcp", nil)
	if _, err := h.roundTrip(req); !errors.Is(err, ErrClosed) {
		t.Errorf("after close: err = %v, want ErrClosed", err)
	}
}

// A call answered on an SSE stream that the server ends a little after the
// response (by then the caller has its result and has cancelled its
// context) gives its connection back once the stream's end is read, instead
// of having it closed under the server: sequential calls share one.
func TestStreamableCallsReuseConnections(t *testing.T) {
	f := newFakeStreamable(t)
	var cut atomic.Int32 // streams whose connection closed before their end
	f.tools["sse"] = func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, _ *fakeSession) {
		startSSE(w)
		writeSSE(w, sseData(jsonrpc.NewResponse(m.ID, json.RawMessage(`{"content":[]}`))))
		select {
		case <-time.After(20 * time.Millisecond): // the scenario: a late end
		case <-r.Context().Done():
			cut.Add(1)
		}
	}
	c, _ := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP}, newRecorder())
	idle := func() int {
		c.h1.mu.Lock()
		defer c.h1.mu.Unlock()
		return len(c.h1.idle)
	}
	const calls = 10
	for i := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.Call(ctx, "tools/call", json.RawMessage(`{"name":"sse"}`))
		cancel()
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		waitFor(t, 5*time.Second, fmt.Sprintf("call %d's connection back in the pool (%d closed under their stream)", i, cut.Load()), func() bool { return idle() >= 1 })
	}
	conns := map[string]bool{}
	for _, r := range f.requests(func(s seenReq) bool { return s.method == http.MethodPost && s.rpc() == "tools/call" }) {
		conns[r.remote] = true
	}
	if len(conns) != 1 || cut.Load() > 0 {
		t.Errorf("%d sequential calls used %d POST connections, %d closed before their stream ended; want 1 and none", calls, len(conns), cut.Load())
	}
}
