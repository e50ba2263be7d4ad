package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// fakeLegacy is a scripted HTTP+SSE server of protocol 2024-11-05: a GET on
// any path but /messages opens the stream, whose first event names the
// endpoint; POSTs to /messages?sessionId=abc get 202 and their replies come
// as message events on the stream. A POST anywhere else is answered with
// postStatus, as a legacy server answers the Streamable HTTP probe.
type fakeLegacy struct {
	srv  *httptest.Server
	stop chan struct{}

	endpoint   string // data of the endpoint event
	postStatus int    // answer to a POST outside /messages

	out     chan *jsonrpc.Message // messages for the stream
	kill    chan struct{}         // a send ends the stream
	streams atomic.Int32          // streams open now

	mu   sync.Mutex
	seen []seenReq
}

func newFakeLegacy(t *testing.T) *fakeLegacy {
	f := &fakeLegacy{
		stop:       make(chan struct{}),
		endpoint:   "/messages?sessionId=abc",
		postStatus: http.StatusMethodNotAllowed,
		out:        make(chan *jsonrpc.Message, 64),
		kill:       make(chan struct{}, 1),
	}
	f.srv = httptest.NewServer(f)
	t.Cleanup(func() {
		close(f.stop)
		f.srv.Close()
	})
	return f
}

func (f *fakeLegacy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var m *jsonrpc.Message
	if len(body) > 0 {
		m, _ = jsonrpc.Decode(body)
	}
	f.mu.Lock()
	f.seen = append(f.seen, seenReq{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), msg: m, at: time.Now()})
	f.mu.Unlock()

	switch {
	case r.Method == http.MethodGet && r.URL.Path != "/messages":
		f.streams.Add(1)
		defer f.streams.Add(-1)
		startSSE(w)
		writeSSE(w, "event: endpoint\ndata: "+f.endpoint+"\n\n")
		for {
			select {
			case <-f.kill:
				return
			case m := <-f.out:
				writeSSE(w, "event: message\ndata: "+string(m.Encode())+"\n\n")
			case <-r.Context().Done():
				return
			case <-f.stop:
				return
			}
		}
	case r.Method == http.MethodPost && r.URL.Path == "/messages":
		if r.URL.Query().Get("sessionId") != "abc" || m == nil {
			http.Error(w, "unknown session or bad body", http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "Accepted")
		if m.IsRequest() {
			if reply := f.reply(m); reply != nil {
				f.out <- reply
			}
		}
	case r.Method == http.MethodPost:
		http.Error(w, "Method Not Allowed", f.postStatus)
	default:
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

func (f *fakeLegacy) reply(m *jsonrpc.Message) *jsonrpc.Message {
	switch m.Method {
	case "initialize":
		return jsonrpc.NewResponse(m.ID, json.RawMessage(`{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"legacy","version":"1"}}`))
	case "tools/call":
		if toolName(m) == "hang" {
			return nil
		}
		if toolName(m) == "notify" {
			f.out <- jsonrpc.NewNotification("notifications/message", json.RawMessage(`{"level":"info","data":"legacy note"}`))
		}
		return jsonrpc.NewResponse(m.ID, json.RawMessage(`{"content":[{"type":"text","text":"legacy echo"}]}`))
	}
	return jsonrpc.NewResponse(m.ID, nil)
}

func (f *fakeLegacy) requests(keep func(seenReq) bool) []seenReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []seenReq
	for _, s := range f.seen {
		if keep == nil || keep(s) {
			out = append(out, s)
		}
	}
	return out
}

func TestLegacyHandshakeAndCall(t *testing.T) {
	f := newFakeLegacy(t)
	rec := newRecorder()
	c, logs := startHTTP(t, Config{URL: f.srv.URL + "/sse", Transport: TransportSSE, Headers: registryHeaders}, rec)
	if c.Transport() != TransportSSE {
		t.Fatalf("transport %q", c.Transport())
	}
	if init := c.Initialize(); init.ProtocolVersion != jsonrpc.Version20241105 || init.ServerInfo.Name != "legacy" {
		t.Fatalf("initialize result %+v", init)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := callTool(ctx, c, "notify", `{}`)
	if err != nil || !strings.Contains(string(res), "legacy echo") {
		t.Fatalf("call: %s %v\nlogs:\n%s", res, err, logs)
	}
	if rel := rec.relatedOf("notifications/message"); len(rel) != 1 || rel[0] != nil {
		t.Errorf("the stream's notification: related %q, want one with nil", rel)
	}

	seen := f.requests(nil)
	if len(seen) < 3 || seen[0].method != http.MethodGet || seen[0].path != "/sse" {
		t.Fatalf("requests: %+v", seen)
	}
	if accept := seen[0].header.Get("Accept"); !strings.Contains(accept, "text/event-stream") {
		t.Errorf("the SSE GET sent Accept %q", accept)
	}
	var methods []string
	for _, s := range seen {
		for k, v := range registryHeaders {
			if got := s.header.Get(k); got != v {
				t.Errorf("%s %s: registry header %s = %q", s.method, s.path, k, got)
			}
		}
		if s.method != http.MethodPost {
			continue
		}
		methods = append(methods, s.rpc())
		if s.path != "/messages" || s.query != "sessionId=abc" {
			t.Errorf("a POST went to %s?%s, not the endpoint the server named", s.path, s.query)
		}
		if ct := s.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("a POST had Content-Type %q", ct)
		}
	}
	if want := "initialize notifications/initialized tools/call"; strings.Join(methods, " ") != want {
		t.Errorf("POSTed %v, want %s", methods, want)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the SSE stream to close", func() bool { return f.streams.Load() == 0 })
}

func TestLegacyRefusesEndpointOnAnotherOrigin(t *testing.T) {
	for _, ep := range []string{
		"http://evil.example.com/messages?sessionId=abc",
		"//evil.example.com/messages?sessionId=abc",
		"http://127.0.0.1:1/messages?sessionId=abc",
	} {
		t.Run(ep, func(t *testing.T) {
			f := newFakeLegacy(t)
			f.endpoint = ep
			c := New(Config{Name: "up", URL: f.srv.URL + "/sse", Transport: TransportSSE}, nil)
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := c.Start(ctx)
			if err == nil || !strings.Contains(err.Error(), "another origin") {
				t.Fatalf("Start: %v, want a refusal naming another origin", err)
			}
			if posts := f.requests(func(s seenReq) bool { return s.method == http.MethodPost }); len(posts) != 0 {
				t.Errorf("the client POSTed despite the refusal: %+v", posts)
			}
			waitFor(t, 5*time.Second, "the refused stream to close", func() bool { return f.streams.Load() == 0 })
		})
	}
}

func TestAutoFallsBackToLegacy(t *testing.T) {
	for _, status := range []int{http.StatusMethodNotAllowed, http.StatusNotFound, http.StatusBadRequest} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			f := newFakeLegacy(t)
			f.postStatus = status
			c, logs := startHTTP(t, Config{URL: f.srv.URL + "/mcp", Transport: TransportAuto}, nil)
			if c.Transport() != TransportSSE {
				t.Fatalf("transport %q after the probe was refused with %d\nlogs:\n%s", c.Transport(), status, logs)
			}
			if res, err := callTool(context.Background(), c, "echo", `{}`); err != nil || !strings.Contains(string(res), "legacy echo") {
				t.Fatalf("call over the fallback: %s %v", res, err)
			}
			seen := f.requests(func(s seenReq) bool { return s.rpc() != "server/discover" })
			if len(seen) < 2 || seen[0].method != http.MethodPost || seen[0].rpc() != "initialize" || seen[0].path != "/mcp" ||
				seen[1].method != http.MethodGet || seen[1].path != "/mcp" {
				t.Errorf("the probe should POST initialize, then GET the same URL: %+v", seen)
			}
		})
	}
	t.Run("500 is no reason to fall back", func(t *testing.T) {
		f := newFakeLegacy(t)
		f.postStatus = http.StatusInternalServerError
		c := New(Config{Name: "up", URL: f.srv.URL + "/mcp"}, nil)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var he *HTTPError
		if err := c.Start(ctx); !errors.As(err, &he) || he.Status != http.StatusInternalServerError {
			t.Fatalf("Start: %v, want the HTTP 500", err)
		}
		if gets := f.requests(isGET); len(gets) != 0 {
			t.Errorf("the client probed the legacy transport after a 500: %+v", gets)
		}
	})
}

// The legacy transport has no resumption: a stream that ends fails the
// pending calls at once and ends the connection.
func TestLegacyStreamLossFailsPendingCalls(t *testing.T) {
	f := newFakeLegacy(t)
	c, _ := startHTTP(t, Config{URL: f.srv.URL + "/sse", Transport: TransportSSE}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pending := make(chan error, 1)
	go func() {
		_, err := callTool(ctx, c, "hang", `{}`)
		pending <- err
	}()
	waitFor(t, 5*time.Second, "the hanging call to be POSTed", func() bool {
		return len(f.requests(func(s seenReq) bool { return s.msg != nil && s.msg.Method == "tools/call" })) == 1
	})
	f.kill <- struct{}{}
	select {
	case err := <-pending:
		if !errors.Is(err, ErrStreamFailed) {
			t.Errorf("the pending call got %v, want ErrStreamFailed", err)
		}
	case <-ctx.Done():
		t.Fatal("the pending call outlived the stream")
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done did not close when the stream ended")
	}
	if _, err := callTool(ctx, c, "echo", `{}`); !errors.Is(err, ErrStreamFailed) {
		t.Errorf("a call after the loss got %v", err)
	}
}
