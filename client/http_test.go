package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/testkit"
)

// This file holds a scripted Streamable HTTP server written against the wire
// protocol (no SDK), the helpers the HTTP tests share, and the tests of
// sessions, re-initialization, server-to-client requests and Close.

// seenReq is one HTTP request the fake server received.
type seenReq struct {
	method string // HTTP method
	path   string
	query  string
	header http.Header
	msg    *jsonrpc.Message // the POSTed JSON-RPC message; nil for GET and DELETE
	at     time.Time
	remote string // the client's address: one per TCP connection
	proto  int    // the HTTP major version
}

// rpc names the JSON-RPC message a request carried: its method, "response"
// for a response, "" for none.
func (s seenReq) rpc() string {
	switch {
	case s.msg == nil:
		return ""
	case s.msg.Method != "":
		return s.msg.Method
	}
	return "response"
}

// fakeSession is one session the fake server issued.
type fakeSession struct {
	id      string
	posts   int
	expired bool
	gone    chan struct{} // closed when the session's streams must end
	closed  bool
}

type toolFunc func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, sess *fakeSession)

// fakeStreamable is a Streamable HTTP server scripted by each test.
type fakeStreamable struct {
	t    *testing.T
	srv  *httptest.Server
	url  string
	stop chan struct{} // closed at cleanup: every held stream ends

	// The script. Set before the client starts.
	version      string              // protocolVersion answered to initialize; "" echoes the offered one
	tools        map[string]toolFunc // tools/call by tool name; unknown names get a JSON echo
	get          toolFunc            // GET handler; nil holds a silent stream fed by push
	deleteStatus int                 // the answer to DELETE; 0 means 204
	expire       map[string]int      // session id → POSTs it serves before it is forgotten (404)
	beforeInit   func(n int)         // called before the n-th initialize is answered; may block
	stateless    func(n int) bool    // when it says so, the n-th initialize is answered without a session id

	push     chan string           // events written on the standalone GET stream
	replies  chan *jsonrpc.Message // responses the client POSTed
	openGETs atomic.Int32          // GET streams currently held open by holdGET

	mu       sync.Mutex
	seen     []seenReq
	inits    int
	sessions map[string]*fakeSession
}

func newFakeStreamable(t *testing.T) *fakeStreamable {
	f := &fakeStreamable{
		t:        t,
		stop:     make(chan struct{}),
		tools:    map[string]toolFunc{},
		push:     make(chan string, 16),
		replies:  make(chan *jsonrpc.Message, 16),
		sessions: map[string]*fakeSession{},
	}
	f.srv = httptest.NewServer(f)
	f.url = f.srv.URL + "/mcp"
	t.Cleanup(func() {
		close(f.stop)
		f.srv.Close()
	})
	return f
}

func (f *fakeStreamable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var m *jsonrpc.Message
	if len(body) > 0 {
		var err error
		if m, err = jsonrpc.Decode(body); err != nil {
			http.Error(w, "bad JSON-RPC: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	f.mu.Lock()
	f.seen = append(f.seen, seenReq{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), msg: m, at: time.Now(), remote: r.RemoteAddr, proto: r.ProtoMajor})
	f.mu.Unlock()

	if r.Method == http.MethodPost && m != nil && m.Method == "initialize" {
		f.initialize(w, m)
		return
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		http.Error(w, "Bad Request: Mcp-Session-Id header is required", http.StatusBadRequest)
		return
	}
	sess := f.session(sid, r.Method == http.MethodPost)
	if sess == nil {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodGet:
		if f.get != nil {
			f.get(w, r, nil, sess)
		} else {
			f.holdGET(w, r, sess)
		}
	case http.MethodDelete:
		st := f.deleteStatus
		if st == 0 {
			st = http.StatusNoContent
		}
		w.WriteHeader(st)
	case http.MethodPost:
		switch {
		case m == nil:
			http.Error(w, "empty body", http.StatusBadRequest)
		case m.IsNotification():
			w.WriteHeader(http.StatusAccepted)
		case m.IsResponse():
			select {
			case f.replies <- m:
			default:
			}
			w.WriteHeader(http.StatusAccepted)
		case m.Method == "tools/call":
			tool := f.tools[toolName(m)]
			if tool == nil {
				writeJSONMsg(w, jsonrpc.NewResponse(m.ID, json.RawMessage(`{"content":[{"type":"text","text":"echo"}]}`)))
				return
			}
			tool(w, r, m, sess)
		default:
			writeJSONMsg(w, jsonrpc.NewResponse(m.ID, nil))
		}
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// initialize issues the next session (s1, s2, …) and ends the streams of
// every session forgotten before it.
func (f *fakeStreamable) initialize(w http.ResponseWriter, m *jsonrpc.Message) {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	json.Unmarshal(m.Params, &p)
	f.mu.Lock()
	f.inits++
	n := f.inits
	f.mu.Unlock()
	if f.beforeInit != nil {
		f.beforeInit(n)
	}
	f.mu.Lock()
	sid := fmt.Sprintf("s%d", n)
	f.sessions[sid] = &fakeSession{id: sid, gone: make(chan struct{})}
	for _, s := range f.sessions {
		if s.expired && !s.closed {
			s.closed = true
			close(s.gone)
		}
	}
	version := f.version
	f.mu.Unlock()
	if version == "" {
		version = p.ProtocolVersion
	}
	if f.stateless == nil || !f.stateless(n) {
		w.Header().Set("Mcp-Session-Id", sid)
	}
	writeJSONMsg(w, jsonrpc.NewResponse(m.ID, fmt.Appendf(nil,
		`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"scripted","version":"1"}}`, version)))
}

// session returns a live session, counting a POST against its expiry; nil
// when the session is unknown or forgotten.
func (f *fakeStreamable) session(sid string, post bool) *fakeSession {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sessions[sid]
	if s == nil || s.expired {
		return nil
	}
	if post {
		s.posts++
		if n, ok := f.expire[sid]; ok && s.posts > n {
			s.expired = true
			return nil
		}
	}
	return s
}

// holdGET keeps a standalone stream open, silent unless a test pushes an
// event, until the client leaves, the session ends or the test stops.
func (f *fakeStreamable) holdGET(w http.ResponseWriter, r *http.Request, sess *fakeSession) {
	f.openGETs.Add(1)
	defer f.openGETs.Add(-1)
	startSSE(w)
	for {
		select {
		case ev := <-f.push:
			writeSSE(w, ev)
		case <-r.Context().Done():
			return
		case <-sess.gone:
			return
		case <-f.stop:
			return
		}
	}
}

// hold blocks a handler until the client leaves, the session ends or the
// test stops.
func (f *fakeStreamable) hold(r *http.Request, sess *fakeSession) {
	select {
	case <-r.Context().Done():
	case <-sess.gone:
	case <-f.stop:
	}
}

// requests returns the requests seen so far that match keep (all if nil).
func (f *fakeStreamable) requests(keep func(seenReq) bool) []seenReq {
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

func (f *fakeStreamable) count(keep func(seenReq) bool) int { return len(f.requests(keep)) }

func (f *fakeStreamable) initCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inits
}

func isGET(s seenReq) bool { return s.method == http.MethodGet }

func toolName(m *jsonrpc.Message) string {
	var p struct {
		Name string `json:"name"`
	}
	json.Unmarshal(m.Params, &p)
	return p.Name
}

func startSSE(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	http.NewResponseController(w).Flush()
}

func writeSSE(w http.ResponseWriter, s string) {
	io.WriteString(w, s)
	http.NewResponseController(w).Flush()
}

// sseData is one SSE event carrying m.
func sseData(m *jsonrpc.Message) string { return "data: " + string(m.Encode()) + "\n\n" }

func writeJSONMsg(w http.ResponseWriter, m *jsonrpc.Message) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(m.Encode())
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startHTTP starts a connection with cfg and closes it at cleanup, before
// the servers the test started (cleanups run last-registered first).
func startHTTP(t *testing.T, cfg Config, h Handler) (*Conn, *testkit.SyncBuffer) {
	t.Helper()
	logs := &testkit.SyncBuffer{}
	if cfg.Name == "" {
		cfg.Name = "up"
	}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := New(cfg, h)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("Start: %v\nlogs:\n%s", err, logs)
	}
	t.Cleanup(func() { c.Close() })
	return c, logs
}

// relHandler is a recorder that also keeps the related id of each
// server-to-client request.
type relHandler struct {
	*recorder
	mu         sync.Mutex
	reqRelated []json.RawMessage
}

func newRelHandler() *relHandler { return &relHandler{recorder: newRecorder()} }

func (h *relHandler) HandleRequest(ctx context.Context, m *jsonrpc.Message, related json.RawMessage) (json.RawMessage, error) {
	h.mu.Lock()
	h.reqRelated = append(h.reqRelated, append(json.RawMessage(nil), related...))
	h.mu.Unlock()
	return h.recorder.HandleRequest(ctx, m, related)
}

// relatedOf returns the related ids of the notifications with method.
func (r *recorder) relatedOf(method string) []json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []json.RawMessage
	for i, n := range r.notes {
		if n.Method == method {
			out = append(out, r.related[i])
		}
	}
	return out
}

// acceptsBoth reports whether an Accept header lists both media types.
func acceptsBoth(accept string) (hasJSON, hasSSE bool) {
	for _, part := range strings.Split(accept, ",") {
		mt, _, _ := mime.ParseMediaType(strings.TrimSpace(part))
		switch mt {
		case "application/json":
			hasJSON = true
		case "text/event-stream":
			hasSSE = true
		}
	}
	return hasJSON, hasSSE
}

var registryHeaders = map[string]string{"Authorization": "Bearer registry-token", "X-Registry": "yes"}

func TestStreamableSessionHeadersAndReplyKinds(t *testing.T) {
	f := newFakeStreamable(t)
	f.version = jsonrpc.Version20250618 // not what the client offers: the negotiated one must be sent
	f.tools["sse"] = func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, _ *fakeSession) {
		startSSE(w)
		writeSSE(w, sseData(jsonrpc.NewNotification("notifications/message", json.RawMessage(`{"level":"info","data":"on the POST stream"}`))))
		writeSSE(w, sseData(jsonrpc.NewResponse(m.ID, json.RawMessage(`{"content":[{"type":"text","text":"from sse"}]}`))))
	}
	rec := newRecorder()
	c, logs := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP, Headers: registryHeaders}, rec)
	if c.Transport() != TransportStreamableHTTP || c.Initialize().ProtocolVersion != jsonrpc.Version20250618 {
		t.Fatalf("transport %q, negotiated %q", c.Transport(), c.Initialize().ProtocolVersion)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if res, err := callTool(ctx, c, "echo", `{}`); err != nil || !strings.Contains(string(res), "echo") {
		t.Fatalf("application/json reply: %s %v", res, err)
	}
	if res, err := callTool(ctx, c, "sse", `{}`); err != nil || !strings.Contains(string(res), "from sse") {
		t.Fatalf("text/event-stream reply: %s %v", res, err)
	}
	if len(rec.notifications("notifications/message")) != 1 {
		t.Fatalf("the notification on the POST stream was not delivered before the result")
	}
	if err := c.Notify(ctx, "notifications/roots/list_changed", nil); err != nil {
		t.Fatalf("a notification answered 202: %v", err)
	}
	waitFor(t, 5*time.Second, "the standalone GET", func() bool { return f.count(isGET) >= 1 })
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	seen := f.requests(nil)
	// The era probe comes first: server/discover with the 2026-07-28
	// headers, answered as a session-era server does.
	if len(seen) < 2 || seen[0].rpc() != "server/discover" || seen[1].rpc() != "initialize" {
		t.Fatalf("the first requests were not server/discover, then initialize: %+v", seen)
	}
	if h := seen[0].header; h.Get("MCP-Protocol-Version") != jsonrpc.Version20260728 || h.Get("Mcp-Method") != "server/discover" || h.Get("Mcp-Session-Id") != "" {
		t.Errorf("server/discover headers: %v", h)
	}
	seen = seen[1:]
	initializedAt := -1
	for i, s := range seen {
		what := fmt.Sprintf("request %d (%s %s)", i, s.method, s.rpc())
		for k, v := range registryHeaders {
			if got := s.header.Get(k); got != v {
				t.Errorf("%s: registry header %s = %q, want %q", what, k, got, v)
			}
		}
		if s.method == http.MethodPost {
			if j, e := acceptsBoth(s.header.Get("Accept")); !j || !e {
				t.Errorf("%s: Accept %q must list application/json and text/event-stream", what, s.header.Get("Accept"))
			}
			if ct, _, _ := mime.ParseMediaType(s.header.Get("Content-Type")); ct != "application/json" {
				t.Errorf("%s: Content-Type %q", what, s.header.Get("Content-Type"))
			}
		}
		if s.method == http.MethodGet {
			if _, e := acceptsBoth(s.header.Get("Accept")); !e {
				t.Errorf("%s: Accept %q lacks text/event-stream", what, s.header.Get("Accept"))
			}
		}
		sid, ver := s.header.Get("Mcp-Session-Id"), s.header.Get("MCP-Protocol-Version")
		if i == 0 {
			if sid != "" || ver != "" {
				t.Errorf("initialize carried Mcp-Session-Id %q and MCP-Protocol-Version %q; it must carry neither", sid, ver)
			}
			continue
		}
		if sid != "s1" || ver != jsonrpc.Version20250618 {
			t.Errorf("%s: Mcp-Session-Id %q, MCP-Protocol-Version %q; want s1 and the negotiated %s", what, sid, ver, jsonrpc.Version20250618)
		}
		if s.rpc() == "notifications/initialized" && initializedAt < 0 {
			initializedAt = i
		}
		if (s.method == http.MethodGet || s.rpc() == "tools/call") && initializedAt < 0 {
			t.Errorf("%s was sent before notifications/initialized", what)
		}
	}
	if initializedAt < 0 {
		t.Errorf("notifications/initialized was never sent")
	}
	if f.count(func(s seenReq) bool { return s.method == http.MethodDelete }) != 1 {
		t.Errorf("Close sent no DELETE\nlogs:\n%s", logs)
	}
}

func TestStreamable404ReinitializesTransparently(t *testing.T) {
	f := newFakeStreamable(t)
	// s1 serves two POSTs (notifications/initialized and the slow call),
	// then is forgotten: the next POST on it gets 404.
	f.expire = map[string]int{"s1": 2}
	f.tools["slow"] = func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, sess *fakeSession) {
		startSSE(w)
		writeSSE(w, sseData(jsonrpc.NewNotification("notifications/message", json.RawMessage(`{"level":"info","data":"slow started"}`))))
		f.hold(r, sess) // no result: the session is forgotten meanwhile
	}
	rec := newRecorder()
	c, logs := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP}, rec)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	waitFor(t, 5*time.Second, "the standalone GET on s1", func() bool { return f.count(isGET) >= 1 })

	slow := make(chan error, 1)
	go func() {
		_, err := callTool(ctx, c, "slow", `{}`)
		slow <- err
	}()
	// Its notification proves the slow call was accepted and its stream is read.
	waitFor(t, 5*time.Second, "the slow call's stream", func() bool { return len(rec.notifications("notifications/message")) == 1 })

	res, err := callTool(ctx, c, "echo", `{}`)
	if err != nil || !strings.Contains(string(res), "echo") {
		t.Fatalf("the call whose POST got 404 must succeed on a new session: %s %v\nlogs:\n%s", res, err, logs)
	}
	select {
	case err := <-slow:
		if !errors.Is(err, ErrSessionExpired) {
			t.Errorf("the call pending on the expired session got %v, want ErrSessionExpired", err)
		}
	case <-ctx.Done():
		t.Fatal("the call pending on the expired session never ended")
	}
	if n := f.initCount(); n != 2 {
		t.Errorf("the server saw initialize %d times, want 2", n)
	}
	echoes := f.requests(func(s seenReq) bool { return s.msg != nil && s.msg.Method == "tools/call" && toolName(s.msg) == "echo" })
	if len(echoes) != 2 || echoes[0].header.Get("Mcp-Session-Id") != "s1" || echoes[1].header.Get("Mcp-Session-Id") != "s2" {
		var sids []string
		for _, e := range echoes {
			sids = append(sids, e.header.Get("Mcp-Session-Id"))
		}
		t.Errorf("echo was POSTed on sessions %v, want [s1 s2]", sids)
	}
	inits := f.requests(func(s seenReq) bool { return s.rpc() == "initialize" })
	if len(inits) == 2 && (inits[1].header.Get("Mcp-Session-Id") != "" || inits[1].header.Get("MCP-Protocol-Version") != "") {
		t.Errorf("the re-initialize carried session headers: %v", inits[1].header)
	}
	waitFor(t, 5*time.Second, "a standalone GET on s2", func() bool {
		return f.count(func(s seenReq) bool { return isGET(s) && s.header.Get("Mcp-Session-Id") == "s2" }) == 1
	})
	if res, err := callTool(ctx, c, "echo", `{}`); err != nil {
		t.Errorf("a later call on s2: %s %v", res, err)
	}
}

func TestStreamableServerRequestAndRelatedIDs(t *testing.T) {
	f := newFakeStreamable(t)
	f.tools["ask"] = func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, sess *fakeSession) {
		startSSE(w)
		writeSSE(w, sseData(jsonrpc.NewNotification("notifications/message", json.RawMessage(`{"level":"info","data":"working"}`))))
		writeSSE(w, sseData(jsonrpc.NewRequest(json.RawMessage(`"srv-1"`), "sampling/createMessage",
			json.RawMessage(`{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10}`))))
		var reply *jsonrpc.Message
		select {
		case reply = <-f.replies:
		case <-r.Context().Done():
			return
		case <-f.stop:
			return
		}
		f.push <- sseData(jsonrpc.NewNotification("notifications/tools/list_changed", nil))
		writeSSE(w, sseData(jsonrpc.NewResponse(m.ID, fmt.Appendf(nil, `{"content":[{"type":"text","text":%s}]}`, jsonrpc.Quote(string(reply.Result))))))
	}
	h := newRelHandler()
	h.answer = func(m *jsonrpc.Message) (json.RawMessage, error) {
		return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"hello from the handler"},"model":"m"}`), nil
	}
	c, _ := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP, Headers: registryHeaders}, h)
	waitFor(t, 5*time.Second, "the standalone GET", func() bool { return f.openGETs.Load() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	id := c.NextID()
	res, err := c.CallWithID(ctx, id, "tools/call", json.RawMessage(`{"name":"ask","arguments":{}}`))
	if err != nil || !strings.Contains(string(res), "hello from the handler") {
		t.Fatalf("ask: %s %v", res, err)
	}
	h.mu.Lock()
	reqRelated := h.reqRelated
	h.mu.Unlock()
	if len(h.requests) != 1 || h.requests[0].Method != "sampling/createMessage" || len(reqRelated) != 1 || string(reqRelated[0]) != string(id) {
		t.Errorf("handler saw requests %v with related %q, want one sampling/createMessage related to %s", h.requests, reqRelated, id)
	}
	answers := f.requests(func(s seenReq) bool { return s.rpc() == "response" })
	if len(answers) != 1 || string(answers[0].msg.ID) != `"srv-1"` || answers[0].header.Get("Mcp-Session-Id") != "s1" ||
		answers[0].header.Get("Authorization") != registryHeaders["Authorization"] {
		t.Errorf("the answer POSTed back: %+v", answers)
	}
	if rel := h.relatedOf("notifications/message"); len(rel) != 1 || string(rel[0]) != string(id) {
		t.Errorf("a notification on the POST stream had related %q, want [%s]", rel, id)
	}
	waitFor(t, 5*time.Second, "the notification on the GET stream", func() bool {
		return len(h.relatedOf("notifications/tools/list_changed")) == 1
	})
	if rel := h.relatedOf("notifications/tools/list_changed"); rel[0] != nil {
		t.Errorf("a notification on the GET stream had related %q, want nil", rel[0])
	}
}

func TestStreamableCloseSendsDELETE(t *testing.T) {
	for _, status := range []int{http.StatusNoContent, http.StatusMethodNotAllowed} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			f := newFakeStreamable(t)
			f.deleteStatus = status
			c, _ := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP, Headers: registryHeaders}, nil)
			waitFor(t, 5*time.Second, "the standalone GET", func() bool { return f.openGETs.Load() == 1 })
			if err := c.Close(); err != nil {
				t.Fatalf("Close with DELETE answered %d: %v", status, err)
			}
			dels := f.requests(func(s seenReq) bool { return s.method == http.MethodDelete })
			if len(dels) != 1 || dels[0].header.Get("Mcp-Session-Id") != "s1" || dels[0].header.Get("Authorization") != registryHeaders["Authorization"] {
				t.Fatalf("DELETEs seen: %+v", dels)
			}
			waitFor(t, 5*time.Second, "the GET stream to close", func() bool { return f.openGETs.Load() == 0 })
			if _, err := callTool(context.Background(), c, "echo", `{}`); !errors.Is(err, ErrClosed) {
				t.Errorf("a call after Close got %v, want ErrClosed", err)
			}
			select {
			case <-c.Done():
			default:
				t.Error("Done is not closed after Close")
			}
		})
	}
}
