package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcphub/mcphub/hub"
)

// The per-server endpoint /{server}/mcp, tested with raw HTTP where status
// codes matter (seed 002, adjusted to one shared upstream per server).

const (
	acceptBoth = "application/json, text/event-stream"
	acceptJSON = "application/json"
	unknownSID = "AAAAAAAAAAAAAAAAAAAAAAAAAA" // well-formed, never minted
)

// rawClient speaks Streamable HTTP by hand.
type rawClient struct {
	t    *testing.T
	base string
	id   atomic.Int64
}

// do sends one request and returns the response with its body read.
func (c *rawClient) do(method, path, sid, accept, body string) (*http.Response, []byte) {
	c.t.Helper()
	resp, b, err := c.tryDo(method, path, sid, accept, body)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp, b
}

// tryDo is do for goroutines other than the test's: it returns the error.
func (c *rawClient) tryDo(method, path, sid, accept, body string) (*http.Response, []byte, error) {
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// initialize starts a session on path and returns its id.
func (c *rawClient) initialize(path string) (string, rpcReply) {
	c.t.Helper()
	resp, body := c.do("POST", path, "", acceptBoth, fmt.Sprintf(
		`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`,
		c.id.Add(1)))
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		c.t.Fatalf("initialize %s: %d, session %q: %s", path, resp.StatusCode, sid, body)
	}
	var r rpcReply
	if err := json.Unmarshal(body, &r); err != nil || r.Result == nil {
		c.t.Fatalf("initialize %s: %v: %s", path, err, body)
	}
	if resp, body := c.do("POST", path, sid, acceptBoth, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		c.t.Fatalf("notifications/initialized: %d %s", resp.StatusCode, body)
	}
	return sid, r
}

// request sends a JSON-RPC request in JSON mode and returns the status and reply.
func (c *rawClient) request(path, sid, method string, params any) (int, rpcReply, string) {
	c.t.Helper()
	p, _ := json.Marshal(params)
	resp, body := c.do("POST", path, sid, acceptJSON,
		fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, c.id.Add(1), method, p))
	var r rpcReply
	json.Unmarshal(body, &r)
	return resp.StatusCode, r, string(body)
}

// call makes a tools/call in JSON mode.
func (c *rawClient) call(path, sid, tool string, args any) (int, rpcReply, string) {
	c.t.Helper()
	return c.request(path, sid, "tools/call", map[string]any{"name": tool, "arguments": args})
}

// callOK makes a tools/call that must succeed and returns its text.
func (c *rawClient) callOK(path, sid, tool string, args any) string {
	c.t.Helper()
	status, r, body := c.call(path, sid, tool, args)
	var res struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	if status != http.StatusOK || r.Error != nil || json.Unmarshal(r.Result, &res) != nil || res.IsError || len(res.Content) == 0 {
		c.t.Fatalf("%s %s: %d %s", path, tool, status, body)
	}
	return res.Content[0].Text
}

func (c *rawClient) state(path, sid string) fakeState {
	c.t.Helper()
	var st fakeState
	if err := json.Unmarshal([]byte(c.callOK(path, sid, "state", map[string]any{})), &st); err != nil {
		c.t.Fatal(err)
	}
	return st
}

// openGET opens the standalone SSE stream of a session; its messages arrive
// on the returned channel until the body is closed.
func (c *rawClient) openGET(path, sid string) (io.Closer, <-chan rpcReply) {
	c.t.Helper()
	req, _ := http.NewRequest("GET", c.base+path, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body.Close()
		c.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	c.t.Cleanup(func() { resp.Body.Close() })
	events := make(chan rpcReply, 16)
	go readSSE(resp.Body, events)
	return resp.Body, events
}

func TestPerServerSessionLifecycle(t *testing.T) {
	f := startHub(t, "", []string{stdioServer(t, "a", "")}, nil)
	c := &rawClient{t: t, base: f.url}

	// POST initialize without a session creates one, answered with the
	// server's own identity.
	sid, init := c.initialize("/a/mcp")
	var ir struct {
		ProtocolVersion string                `json:"protocolVersion"`
		ServerInfo      struct{ Name string } `json:"serverInfo"`
	}
	json.Unmarshal(init.Result, &ir)
	if ir.ProtocolVersion != "2025-11-25" || ir.ServerInfo.Name != "fake-a" {
		t.Errorf("initialize result: %s", init.Result)
	}

	// The server's own names, unprefixed.
	status, r, body := c.request("/a/mcp", sid, "tools/list", map[string]any{})
	if status != http.StatusOK || !strings.Contains(string(r.Result), `"name":"echo"`) || strings.Contains(string(r.Result), "a__") {
		t.Errorf("tools/list on /a/mcp: %d %s", status, body)
	}
	if got := c.callOK("/a/mcp", sid, "echo", map[string]any{"text": "hi"}); got != "a:hi" {
		t.Errorf("echo = %q", got)
	}
	if status, r, body := c.call("/a/mcp", sid, "a__echo", map[string]any{"text": "hi"}); status != http.StatusOK || r.Error == nil {
		t.Errorf("a prefixed name must be unknown on /a/mcp: %d %s", status, body)
	}
	// The call reached the shared process /readyz reports.
	pid := serverStatus(f.readyz(), "a").PID
	if st := c.state("/a/mcp", sid); st.PID != pid || pid == 0 {
		t.Errorf("call ran in pid %d, /readyz says %d", st.PID, pid)
	}

	echo := `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`
	for _, tc := range []struct {
		name, method, path, sid, body string
		want                          int
	}{
		{"unknown session POST", "POST", "/a/mcp", unknownSID, echo, http.StatusNotFound},
		{"unknown session GET", "GET", "/a/mcp", unknownSID, "", http.StatusNotFound},
		{"unknown session DELETE", "DELETE", "/a/mcp", unknownSID, "", http.StatusNotFound},
		{"malformed session POST", "POST", "/a/mcp", "not-a-session-id", echo, http.StatusBadRequest},
		{"malformed session GET", "GET", "/a/mcp", "not-a-session-id", "", http.StatusBadRequest},
		{"missing session POST", "POST", "/a/mcp", "", echo, http.StatusBadRequest},
		{"GET without session", "GET", "/a/mcp", "", "", http.StatusBadRequest},
		{"DELETE without session", "DELETE", "/a/mcp", "", "", http.StatusBadRequest},
		{"session of /a/mcp on /mcp", "POST", "/mcp", sid, echo, http.StatusNotFound},
	} {
		accept := acceptJSON
		if tc.method == "GET" {
			accept = "text/event-stream"
		}
		if resp, body := c.do(tc.method, tc.path, tc.sid, accept, tc.body); resp.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d: %s", tc.name, resp.StatusCode, tc.want, body)
		}
	}

	if resp, body := c.do("POST", "/a/mcp", sid, acceptJSON, "["+echo+"]"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a batch: %d %s; want 400", resp.StatusCode, body)
	}
	// Two GET streams on one session may coexist (seed 002: "allow both").
	g1, _ := c.openGET("/a/mcp", sid)
	g2, _ := c.openGET("/a/mcp", sid)
	g1.Close()
	g2.Close()

	// The legacy HTTP+SSE routes are gone and say where to go.
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/a/sse", ""},
		{"POST", "/a/message", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
	} {
		resp, body := c.do(tc.method, tc.path, "", acceptBoth, tc.body)
		if resp.StatusCode != http.StatusGone || !strings.Contains(string(body), "/a/mcp") {
			t.Errorf("%s %s: %d %s; want 410 pointing to /a/mcp", tc.method, tc.path, resp.StatusCode, body)
		}
	}

	// DELETE ends the session, not the shared upstream process.
	if resp, body := c.do("DELETE", "/a/mcp", sid, "", ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", resp.StatusCode, body)
	}
	if resp, body := c.do("POST", "/a/mcp", sid, acceptJSON, echo); resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST after DELETE: %d %s", resp.StatusCode, body)
	}
	after := serverStatus(f.readyz(), "a")
	if after.State != "connected" || after.PID != pid || !pidAlive(pid) {
		t.Errorf("after DELETE the shared upstream must keep running: %+v (pid before %d)", after, pid)
	}
	sid2, _ := c.initialize("/a/mcp")
	if st := c.state("/a/mcp", sid2); st.PID != pid {
		t.Errorf("a new session reached pid %d, want the same process %d", st.PID, pid)
	}
}

// TestPerServerNotificationToGetStream: a notification the upstream sends
// while a call is in flight, but which belongs to no request
// (resources/updated), goes to the GET stream, never into the POST reply.
func TestPerServerNotificationToGetStream(t *testing.T) {
	f := startHub(t, "", []string{stdioServer(t, "a", "")}, nil)
	c := &rawClient{t: t, base: f.url}
	sid, _ := c.initialize("/a/mcp")
	const uri = "test://a/res"

	_, events := c.openGET("/a/mcp", sid)

	if status, r, body := c.request("/a/mcp", sid, "resources/subscribe", map[string]any{"uri": uri}); status != http.StatusOK || r.Error != nil {
		t.Fatalf("subscribe: %d %s", status, body)
	}
	// The call is answered on an SSE stream of its own; read all of it.
	resp, body := c.do("POST", "/a/mcp", sid, acceptBoth,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"touch","arguments":{"uri":"`+uri+`"}}}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("touch: %d %s", resp.StatusCode, body)
	}
	var inPost []rpcReply
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		ch := make(chan rpcReply, 16)
		readSSE(strings.NewReader(string(body)), ch)
		for m := range ch {
			inPost = append(inPost, m)
		}
	} else {
		var m rpcReply
		json.Unmarshal(body, &m)
		inPost = append(inPost, m)
	}
	if len(inPost) != 1 || string(inPost[0].ID) != "7" || !strings.Contains(string(inPost[0].Result), "touched") {
		t.Errorf("the POST reply must hold only the call's result; got %d messages: %s", len(inPost), body)
	}

	deadline := time.After(5 * time.Second)
	for {
		select {
		case m, ok := <-events:
			if !ok {
				t.Fatal("GET stream ended before the notification")
			}
			if m.Method == "notifications/resources/updated" && strings.Contains(string(m.Params), uri) {
				return
			}
			t.Logf("GET stream event: %s %s", m.Method, m.Params)
		case <-deadline:
			t.Fatal("notifications/resources/updated never reached the GET stream")
		}
	}
}

// TestPerServerTimeouts: a request the upstream does not answer in time gets
// 504 in JSON mode, and the upstream sees it cancelled: tools/call bounded
// by the server's call_timeout, other requests by [hub] request_timeout.
func TestPerServerTimeouts(t *testing.T) {
	f := startHub(t, `request_timeout = "300ms"`, []string{stdioServer(t, "a", `call_timeout = "300ms"`)}, nil)
	c := &rawClient{t: t, base: f.url}
	sid, _ := c.initialize("/a/mcp")

	start := time.Now()
	status, r, body := c.call("/a/mcp", sid, "block", map[string]any{"tag": "slow-call"})
	if took := time.Since(start); status != http.StatusGatewayTimeout || r.Error == nil || took < 250*time.Millisecond || took > 5*time.Second {
		t.Errorf("tools/call past call_timeout: %d after %v: %s; want 504 after ~300ms", status, took, body)
	}
	status, r, body = c.request("/a/mcp", sid, "prompts/get", map[string]any{"name": "slow", "arguments": map[string]string{"tag": "p"}})
	if status != http.StatusGatewayTimeout || r.Error == nil {
		t.Errorf("prompts/get past request_timeout: %d %s; want 504", status, body)
	}
	var st fakeState
	if !poll(5*time.Second, func() bool {
		st = c.state("/a/mcp", sid)
		return slices.Contains(st.Cancelled, "slow-call") && slices.Contains(st.Cancelled, "prompt:p")
	}) {
		t.Errorf("the upstream did not see both requests cancelled: %+v", st)
	}
}

// TestPerServerResponseTooLarge: a result over max_response_bytes is 502.
func TestPerServerResponseTooLarge(t *testing.T) {
	f := startHub(t, `max_response_bytes = 65536`, []string{stdioServer(t, "a", "")}, nil)
	c := &rawClient{t: t, base: f.url}
	sid, _ := c.initialize("/a/mcp")
	if status, r, body := c.call("/a/mcp", sid, "big", map[string]any{"bytes": 200000}); status != http.StatusBadGateway || r.Error == nil {
		t.Errorf("oversized result: %d %.300s; want 502", status, body)
	}
	if got := c.callOK("/a/mcp", sid, "big", map[string]any{"bytes": 1000}); len(got) != 1000 {
		t.Errorf("a small result after the refused one: %d bytes", len(got))
	}
}

// TestPerServerCrashDuringCall: when the stdio process exits, the calls in
// flight fail at once with 503 (never replayed) and the server comes back
// with a new process after the restart delay.
func TestPerServerCrashDuringCall(t *testing.T) {
	f := startHub(t, "", []string{stdioServer(t, "a", "")}, nil)
	c := &rawClient{t: t, base: f.url}
	sid1, _ := c.initialize("/a/mcp")
	sid2, _ := c.initialize("/a/mcp")
	pid := serverStatus(f.readyz(), "a").PID

	type result struct {
		status int
		body   string
	}
	blocked := make(chan result, 1)
	go func() {
		resp, body, err := c.tryDo("POST", "/a/mcp", sid2, acceptJSON,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block","arguments":{"tag":"victim"}}}`)
		if err != nil {
			blocked <- result{0, err.Error()}
			return
		}
		blocked <- result{resp.StatusCode, string(body)}
	}()
	if !poll(5*time.Second, func() bool { return slices.Contains(c.state("/a/mcp", sid1).Inflight, "victim") }) {
		t.Fatal("the blocking call never reached the upstream")
	}
	start := time.Now()
	status, r, body := c.call("/a/mcp", sid1, "crash", map[string]any{})
	if took := time.Since(start); status != http.StatusServiceUnavailable || r.Error == nil || took > 2*time.Second {
		t.Errorf("call whose process exited: %d after %v: %s; want 503 at once", status, took, body)
	}
	select {
	case res := <-blocked:
		if res.status != http.StatusServiceUnavailable {
			t.Errorf("other call in flight: %d %s; want 503", res.status, res.body)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the other call in flight did not fail when the process exited")
	}
	if !pidGone(pid) {
		t.Errorf("the crashed process %d is still there", pid)
	}
	// Between the exit and the restart (backoff ≥ 375 ms) /readyz says so,
	// and a new session still starts (fail open).
	var down hub.ServerStatus
	if !poll(2*time.Second, func() bool { down = serverStatus(f.readyz(), "a"); return down.State != hub.StateConnected }) {
		t.Errorf("/readyz never showed the server down after the exit")
	} else if down.State != hub.StateRestarting || !strings.Contains(down.LastError, "exit") {
		t.Errorf("/readyz while down: %+v; want restarting with the exit as last_error", down)
	}
	c.initialize("/a/mcp")

	st := f.waitConnected(map[string]int{"a": pid})
	newPID := serverStatus(st, "a").PID
	if rz := serverStatus(f.readyz(), "a"); rz.State != "connected" || rz.PID != newPID || rz.Restarts < 1 {
		t.Errorf("/readyz after restart: %+v", rz)
	}
	// Sessions survive the restart; the old call was not replayed.
	if got := c.callOK("/a/mcp", sid1, "echo", map[string]any{"text": "back"}); got != "a:back" {
		t.Errorf("echo after restart = %q", got)
	}
	if st := c.state("/a/mcp", sid2); st.PID != newPID || len(st.Inflight) != 0 {
		t.Errorf("after restart: %+v (want pid %d, nothing in flight)", st, newPID)
	}
}

// TestPerServerSessionCap: the 11th session on one server's endpoint is
// refused with 503 naming the cap; the merged endpoint is not capped, and a
// DELETE frees a place.
func TestPerServerSessionCap(t *testing.T) {
	f := startHub(t, "", []string{stdioServer(t, "a", "")}, nil)
	c := &rawClient{t: t, base: f.url}
	var sids []string
	for range 10 {
		sid, _ := c.initialize("/a/mcp")
		sids = append(sids, sid)
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
	resp, body := c.do("POST", "/a/mcp", "", acceptBoth, init)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Mcp-Session-Id") != "" ||
		!strings.Contains(string(body), "max_sessions_per_server") || !strings.Contains(string(body), "10") {
		t.Errorf("11th session: %d %s; want 503 naming the cap of 10", resp.StatusCode, body)
	}
	c.initialize("/mcp")
	if resp, body := c.do("DELETE", "/a/mcp", sids[0], "", ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", resp.StatusCode, body)
	}
	c.initialize("/a/mcp")
}

// TestPerServerSessionCapUnderConcurrency: initializes racing each other
// must not get past the cap. A server held in "starting" keeps the hub's
// warmup open, which is where initialize waits between its cap check and
// the session's creation.
func TestPerServerSessionCapUnderConcurrency(t *testing.T) {
	gate := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	servers := []string{stdioServer(t, "a", ""), httpServer("g", startGatedHTTPFake(t, "g", gate), "")}
	var entered atomic.Int32
	f := newHub(t, "", servers, nil, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			entered.Add(1)
			h.ServeHTTP(w, r)
		})
	})
	t.Cleanup(open)
	c := &rawClient{t: t, base: f.url}
	const n = 12
	codes := make(chan int, n)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
	for range n {
		go func() {
			resp, _, err := c.tryDo("POST", "/a/mcp", "", acceptBoth, init)
			if err != nil {
				codes <- 0
				return
			}
			codes <- resp.StatusCode
		}()
	}
	if !poll(5*time.Second, func() bool { return entered.Load() == n }) {
		t.Fatalf("only %d of %d initializes reached the hub", entered.Load(), n)
	}
	open()
	f.waitConnected(nil)
	got := map[int]int{}
	for range n {
		got[<-codes]++
	}
	if got[http.StatusOK] != 10 || got[http.StatusServiceUnavailable] != n-10 {
		t.Errorf("%d concurrent initializes on /a/mcp: statuses %v; want 10×200 and %d×503 (max_sessions_per_server = 10); /readyz counts %d sessions",
			n, got, n-10, f.readyz().Sessions)
	}
}

// TestPerServerSeedEdgeCases covers seed 002's edge cases on a shared
// stdio upstream.
func TestPerServerSeedEdgeCases(t *testing.T) {
	f := startHub(t, "", []string{stdioServer(t, "a", "")}, nil)
	c := &rawClient{t: t, base: f.url}
	sid, _ := c.initialize("/a/mcp")
	pid := serverStatus(f.readyz(), "a").PID
	inflight := func(tag string) bool { return slices.Contains(c.state("/a/mcp", sid).Inflight, tag) }
	cancelled := func(tag string) bool { return slices.Contains(c.state("/a/mcp", sid).Cancelled, tag) }
	block := func(ctx context.Context, sid string, id int, tag string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, "POST", f.url+"/a/mcp", strings.NewReader(fmt.Sprintf(
			`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"block","arguments":{"tag":%q}}}`, id, tag)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", acceptJSON)
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	// A reused id must never mix the two calls up: the hub may answer both
	// (each with its own result) or refuse the second (seed: 409, or a
	// JSON-RPC error); either way the first gets its own result.
	t.Run("same id twice in one session", func(t *testing.T) {
		first, second := make(chan string, 1), make(chan string, 1)
		go func() { _, body := block(context.Background(), sid, 9005, "dup-x"); first <- body }()
		if !poll(5*time.Second, func() bool { return inflight("dup-x") }) {
			t.Fatal("the first call never reached the upstream")
		}
		go func() {
			status, body := block(context.Background(), sid, 9005, "dup-y")
			second <- fmt.Sprint(status, " ", body)
		}()
		var refused string
		if !poll(5*time.Second, func() bool {
			select {
			case refused = <-second:
				return true
			default:
				return inflight("dup-y")
			}
		}) {
			t.Fatal("the second call was neither refused nor forwarded")
		}
		c.callOK("/a/mcp", sid, "release", map[string]any{"tag": "dup-x"})
		c.callOK("/a/mcp", sid, "release", map[string]any{"tag": "dup-y"})
		if got := <-first; !strings.Contains(got, `"id":9005`) || !strings.Contains(got, "released:dup-x") {
			t.Errorf("first call: %s", got)
		}
		if refused == "" {
			refused = <-second
			if !strings.Contains(refused, "released:dup-y") {
				t.Errorf("second call, forwarded: %s", refused)
			}
		} else if strings.Contains(refused, "released") || !(strings.HasPrefix(refused, "409 ") || strings.Contains(refused, `"error"`)) {
			t.Errorf("second call, refused: %s; want 409 or a JSON-RPC error", refused)
		}
	})
	t.Run("stdout line that is not JSON-RPC", func(t *testing.T) {
		if got := c.callOK("/a/mcp", sid, "noise", map[string]any{}); got != "after noise" {
			t.Errorf("noise = %q", got)
		}
		if st := c.state("/a/mcp", sid); st.PID != pid {
			t.Errorf("the noise restarted the server: pid %d, was %d", st.PID, pid)
		}
	})
	t.Run("client gone during a JSON reply", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { block(ctx, sid, 9006, "gone"); close(done) }()
		if !poll(5*time.Second, func() bool { return inflight("gone") }) {
			t.Fatal("the call never reached the upstream")
		}
		cancel()
		<-done
		if !poll(5*time.Second, func() bool { return cancelled("gone") }) {
			t.Error("the upstream never saw the abandoned call cancelled")
		}
	})
	t.Run("DELETE with a call in flight", func(t *testing.T) {
		other, _ := c.initialize("/a/mcp")
		done := make(chan int, 1)
		go func() { status, _ := block(context.Background(), other, 9007, "deleted"); done <- status }()
		if !poll(5*time.Second, func() bool { return inflight("deleted") }) {
			t.Fatal("the call never reached the upstream")
		}
		if resp, body := c.do("DELETE", "/a/mcp", other, "", ""); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE: %d %s", resp.StatusCode, body)
		}
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the call of the deleted session did not end")
		}
		if !poll(5*time.Second, func() bool { return cancelled("deleted") }) {
			t.Error("the upstream never saw the deleted session's call cancelled")
		}
		if rz := serverStatus(f.readyz(), "a"); rz.PID != pid || rz.State != "connected" {
			t.Errorf("the shared upstream changed: %+v", rz)
		}
	})
}
