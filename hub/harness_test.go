package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/sse"
)

// twoServers is the registry most HTTP tests use: alpha prefixed as
// alpha__, beta unprefixed.
const twoServers = `
[servers.alpha]
command = "alpha-server"
[servers.beta]
command = "beta-server"
prefix = ""
`

// testHub is a started Hub behind an httptest server, with its fakes.
type testHub struct {
	t     testing.TB
	h     *Hub
	srv   *testServer
	fakes map[string]*fakeUpstream
}

// startHub starts a hub over fakes (nil: empty fakes) for a registry text.
func startHub(t testing.TB, regText string, fakes map[string]*fakeUpstream, opts ...func(*Options)) *testHub {
	t.Helper()
	return startHubOn(t, false, regText, fakes, opts...)
}

// startHubOn is startHub, served over TLS with HTTP/2 when tls is set.
func startHubOn(t testing.TB, tls bool, regText string, fakes map[string]*fakeUpstream, opts ...func(*Options)) *testHub {
	t.Helper()
	if fakes == nil {
		fakes = map[string]*fakeUpstream{}
	}
	o := Options{
		Registry:         parseRegistry(t, regText),
		NewUpstream:      fakeFactory(fakes),
		Version:          "test",
		Logger:           slog.New(slog.DiscardHandler),
		ListChangedDelay: 200 * time.Millisecond,
	}
	for _, f := range opts {
		f(&o)
	}
	h := New(o)
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	quietStartup(h)
	srv := serveHub(t, h, tls)
	t.Cleanup(func() {
		h.Close()
		srv.close()
	})
	return &testHub{t: t, h: h, srv: srv, fakes: fakes}
}

// testServer serves a hub on loopback with the HTTP server serve uses
// (NewServer), so every hub test also runs through its limits.
type testServer struct {
	*httptest.Server
}

func serveHub(t testing.TB, h http.Handler, tls bool) *testServer {
	srv := httptest.NewUnstartedServer(h)
	srv.Config = NewServer(h, slog.New(slog.DiscardHandler))
	if tls {
		srv.EnableHTTP2 = true
		srv.StartTLS()
	} else {
		srv.Start()
	}
	return &testServer{srv}
}

func (s *testServer) close() { s.Close() }

// quietStartup drops the list_changed that Start schedules for the lists
// the hub has just loaded: no session existed to see the old ones, and the
// tests count notifications exactly.
func quietStartup(h *Hub) {
	f := h.fanout
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.timer != nil && f.timer.Stop() {
		f.timer = nil
		f.pending = map[string]map[string]bool{}
	}
}

// reply is a whole HTTP response.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// msg decodes the body as one JSON-RPC message.
func (r reply) msg(t testing.TB) *jsonrpc.Message {
	t.Helper()
	m, err := jsonrpc.Decode(r.body)
	if err != nil {
		t.Fatalf("body %q is not a JSON-RPC message: %v", r.body, err)
	}
	return m
}

// request builds a request with the defaults of its method (POST: JSON body,
// compliant Accept; GET: Accept text/event-stream). kv pairs override
// headers; an empty value removes one; "Host" sets the Host; a key starting
// with "+" adds another field line instead of replacing.
func (th *testHub) request(ctx context.Context, method, path, body string, kv ...string) *http.Request {
	th.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, th.srv.URL+path, rd)
	if err != nil {
		th.t.Fatal(err)
	}
	switch method {
	case http.MethodPost:
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	case http.MethodGet:
		req.Header.Set("Accept", "text/event-stream")
	}
	for i := 0; i+1 < len(kv); i += 2 {
		switch {
		case kv[i] == "Host":
			req.Host = kv[i+1]
		case strings.HasPrefix(kv[i], "+"):
			req.Header.Add(kv[i][1:], kv[i+1])
		case kv[i+1] == "":
			req.Header.Del(kv[i])
		default:
			req.Header.Set(kv[i], kv[i+1])
		}
	}
	return req
}

// send makes a request and reads the whole response.
func (th *testHub) send(method, path, body string, kv ...string) reply {
	th.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	resp, err := th.srv.Client().Do(th.request(ctx, method, path, body, kv...))
	if err != nil {
		th.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		th.t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// client is one MCP session on one endpoint.
type client struct {
	th   *testHub
	path string
	sid  string
}

// initReq is an initialize request for a protocol version and capabilities.
func initReq(version, caps string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":%q,"capabilities":%s,"clientInfo":{"name":"test","version":"1"}}}`, version, caps)
}

// connect initializes a session on path ("/mcp" or "/{server}/mcp").
func (th *testHub) connect(path, version, caps string) *client {
	th.t.Helper()
	r := th.send(http.MethodPost, path, initReq(version, caps))
	if r.status != http.StatusOK {
		th.t.Fatalf("initialize on %s: %d %s", path, r.status, r.body)
	}
	sid := r.header.Get("Mcp-Session-Id")
	if sid == "" {
		th.t.Fatalf("initialize on %s: no Mcp-Session-Id", path)
	}
	c := &client{th: th, path: path, sid: sid}
	if r := c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != http.StatusAccepted {
		th.t.Fatalf("notifications/initialized: %d %s", r.status, r.body)
	}
	return c
}

// session returns the hub's side of the client's session.
func (c *client) session() *session {
	return c.th.h.sessions.get(c.sid)
}

// post sends one message with the session header.
func (c *client) post(body string, kv ...string) reply {
	c.th.t.Helper()
	return c.th.send(http.MethodPost, c.path, body, append([]string{"Mcp-Session-Id", c.sid}, kv...)...)
}

// postAsync sends one message in the background; the reply arrives on the
// channel (status 0 when the request failed).
func (c *client) postAsync(body string, kv ...string) <-chan reply {
	req := c.th.request(context.Background(), http.MethodPost, c.path, body, append([]string{"Mcp-Session-Id", c.sid}, kv...)...)
	out := make(chan reply, 1)
	go func() {
		resp, err := c.th.srv.Client().Do(req)
		if err != nil {
			out <- reply{}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		out <- reply{status: resp.StatusCode, header: resp.Header, body: b}
	}()
	return out
}

// call sends a request asking for a JSON reply and decodes it.
func (c *client) call(id int, method, params string) *jsonrpc.Message {
	c.th.t.Helper()
	r := c.post(rpc(id, method, params), "Accept", "application/json")
	if r.status != http.StatusOK {
		c.th.t.Fatalf("%s: HTTP %d %s", method, r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		c.th.t.Fatalf("%s: Content-Type %q, want application/json", method, ct)
	}
	return r.msg(c.th.t)
}

// rpc builds a request body; params "" means none.
func rpc(id int, method, params string) string {
	if params == "" {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q}`, id, method)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)
}

// sseClient is a client's view of one SSE response, read in the background so
// every wait has a deadline.
type sseClient struct {
	t      testing.TB
	resp   *http.Response
	cancel context.CancelFunc
	events chan sse.Event
	quit   chan struct{}
	end    chan struct{} // closed when the stream ends
	stop   func()
}

// open makes a request whose answer is an SSE stream; the caller checks
// the status. The stream is dropped at the end of the test.
func (th *testHub) open(method, path, body string, kv ...string) *sseClient {
	th.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := th.srv.Client().Do(th.request(ctx, method, path, body, kv...))
	if err != nil {
		cancel()
		th.t.Fatalf("%s %s: %v", method, path, err)
	}
	s := &sseClient{t: th.t, resp: resp, cancel: cancel, events: make(chan sse.Event),
		quit: make(chan struct{}), end: make(chan struct{})}
	go func() {
		defer close(s.end)
		r := sse.NewReader(resp.Body, 0)
		for {
			ev, err := r.Next()
			if err != nil {
				return
			}
			select {
			case s.events <- ev:
			case <-s.quit:
				return
			}
		}
	}()
	var once bool
	s.stop = func() {
		if !once {
			once = true
			cancel()
			close(s.quit)
			resp.Body.Close()
		}
	}
	th.t.Cleanup(s.stop)
	return s
}

// get opens the session's standalone stream (or resumes one with
// Last-Event-ID in kv) and requires 200.
func (c *client) get(kv ...string) *sseClient {
	c.th.t.Helper()
	s := c.th.open(http.MethodGet, c.path, "", append([]string{"Mcp-Session-Id", c.sid}, kv...)...)
	if s.resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(s.resp.Body)
		c.th.t.Fatalf("GET %s: %d %s", c.path, s.resp.StatusCode, b)
	}
	return s
}

// postStream sends a request asking for an SSE reply and requires one.
func (c *client) postStream(body string, kv ...string) *sseClient {
	c.th.t.Helper()
	s := c.th.open(http.MethodPost, c.path, body, append([]string{"Mcp-Session-Id", c.sid}, kv...)...)
	if s.resp.StatusCode != http.StatusOK || s.resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(s.resp.Body)
		c.th.t.Fatalf("POST %s: %d %q %s, want an SSE stream", c.path, s.resp.StatusCode, s.resp.Header.Get("Content-Type"), b)
	}
	return s
}

// next returns the next SSE block, comments included.
func (s *sseClient) next() sse.Event {
	s.t.Helper()
	select {
	case ev := <-s.events:
		return ev
	case <-s.end:
		s.t.Fatal("the SSE stream ended")
	case <-time.After(waitFor):
		s.t.Fatalf("no SSE event within %s", waitFor)
	}
	return sse.Event{}
}

// nextMsg returns the next JSON-RPC message and its event id, skipping
// comments and priming events.
func (s *sseClient) nextMsg() (*jsonrpc.Message, string) {
	s.t.Helper()
	for {
		ev := s.next()
		if ev.Data == "" {
			continue
		}
		m, err := jsonrpc.Decode([]byte(ev.Data))
		if err != nil {
			s.t.Fatalf("SSE data %q is not a JSON-RPC message: %v", ev.Data, err)
		}
		return m, ev.ID
	}
}

// wantEnd waits for the server to end the stream with nothing more.
func (s *sseClient) wantEnd() {
	s.t.Helper()
	for {
		select {
		case ev := <-s.events:
			if ev.Data != "" {
				s.t.Fatalf("unexpected event %q before the end of the stream", ev.Data)
			}
		case <-s.end:
			return
		case <-time.After(waitFor):
			s.t.Fatalf("the stream did not end within %s", waitFor)
		}
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, waitFor)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// rpcErr checks a JSON-RPC error body: its code (unless 0) and, when id
// is not "", its id.
func rpcErr(t testing.TB, r reply, code int, id string) *jsonrpc.Error {
	t.Helper()
	var body struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc.Error  `json:"error"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil || body.Error == nil || body.JSONRPC != "2.0" {
		t.Fatalf("body %q is not a JSON-RPC error response (%v)", r.body, err)
	}
	if code != 0 && body.Error.Code != code {
		t.Errorf("error code = %d (%s), want %d", body.Error.Code, body.Error.Message, code)
	}
	if id != "" && string(body.ID) != id {
		t.Errorf("error id = %s, want %s", body.ID, id)
	}
	return body.Error
}
