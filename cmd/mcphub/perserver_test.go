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

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// The per-server endpoint /{server}/mcp, tested with the raw client where
// status codes matter (seed 002, adjusted to one shared upstream per server).

// unknownSID is a well-formed session id that was never minted.
const unknownSID = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"

// initBody is an initialize request as a raw body.
const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

// oneStdioHub starts an in-process hub over the stdio fake "a" and returns
// it with a raw client.
func oneStdioHub(t *testing.T, cfg hubConfig, lines string) (*inprocHub, *rawClient) {
	f := startInproc(t, childServer(t, "a", childOpts{lines: lines}), cfg)
	return f, newRawClient(t, f.url)
}

// blockCall starts a blocking call of tag on s in the background and waits
// until it is in flight upstream; the call's status and body arrive on the
// returned channel once it ends.
func blockCall(t *testing.T, ctx context.Context, s, observer *rawSession, id int, tag string) <-chan string {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		resp, body, err := s.c.tryDo(ctx, s.req(http.MethodPost, acceptJSON, fmt.Sprintf(
			`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"block","arguments":{"tag":%q}}}`, id, tag)))
		if err != nil {
			done <- "0 " + err.Error()
			return
		}
		done <- fmt.Sprint(resp.StatusCode, " ", string(body))
	}()
	if !poll(5*time.Second, func() bool { return slices.Contains(observer.state().Inflight, tag) }) {
		t.Fatalf("the call %s never reached the upstream", tag)
	}
	return done
}

func TestPerServerSessionLifecycle(t *testing.T) {
	f, c := oneStdioHub(t, hubConfig{}, "")

	// POST initialize without a session creates one, answered with the
	// server's own identity.
	s, init := c.initialize("/a/mcp")
	var ir struct {
		ProtocolVersion string                `json:"protocolVersion"`
		ServerInfo      struct{ Name string } `json:"serverInfo"`
	}
	json.Unmarshal(init.Result, &ir)
	if ir.ProtocolVersion != "2025-11-25" || ir.ServerInfo.Name != "fake-a" {
		t.Errorf("initialize result: %s", init.Result)
	}

	// The server's own names, unprefixed.
	status, r, body := s.request("tools/list", map[string]any{})
	if status != http.StatusOK || !strings.Contains(string(r.Result), `"name":"echo"`) || strings.Contains(string(r.Result), "a__") {
		t.Errorf("tools/list on /a/mcp: %d %s", status, body)
	}
	if got := s.toolOK("echo", map[string]any{"text": "hi"}); got != "a:hi" {
		t.Errorf("echo = %q", got)
	}
	if status, r, body := s.tool("a__echo", map[string]any{"text": "hi"}); status != http.StatusOK || r.Error == nil {
		t.Errorf("a prefixed name must be unknown on /a/mcp: %d %s", status, body)
	}
	// The call reached the shared process /readyz reports.
	pid := f.server("a").PID
	if st := s.state(); st.PID != pid || pid == 0 {
		t.Errorf("call ran in pid %d, /readyz says %d", st.PID, pid)
	}

	// Two GET streams on one session may coexist (seed 002: "allow both").
	g1, g2 := s.openGET(), s.openGET()
	g1.body.Close()
	g2.body.Close()
	// A client of 2025-03-26 or older sends no MCP-Protocol-Version.
	if resp, err := c.send(context.Background(), rawReq{method: "GET", path: "/a/mcp", sid: s.sid, accept: acceptSSE, noVersion: true}); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), acceptSSE) {
			t.Errorf("GET without MCP-Protocol-Version: %d %s, want a 200 stream", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}

	// What the endpoint answers by status, in order: the DELETE near the
	// end ends the session the requests after it use.
	echo := `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`
	req := func(method, path, sid, body string) rawReq {
		accept := acceptJSON
		if method == http.MethodGet {
			accept = acceptSSE
		}
		return rawReq{method: method, path: path, sid: sid, accept: accept, body: body}
	}
	for _, tc := range []httpCase{
		{name: "unknown session POST", req: req("POST", "/a/mcp", unknownSID, echo), status: http.StatusNotFound},
		{name: "unknown session GET", req: req("GET", "/a/mcp", unknownSID, ""), status: http.StatusNotFound},
		{name: "unknown session DELETE", req: req("DELETE", "/a/mcp", unknownSID, ""), status: http.StatusNotFound},
		{name: "malformed session POST", req: req("POST", "/a/mcp", "not-a-session-id", echo), status: http.StatusBadRequest},
		{name: "malformed session GET", req: req("GET", "/a/mcp", "not-a-session-id", ""), status: http.StatusBadRequest},
		{name: "missing session POST", req: req("POST", "/a/mcp", "", echo), status: http.StatusBadRequest},
		{name: "GET without session", req: req("GET", "/a/mcp", "", ""), status: http.StatusBadRequest},
		{name: "DELETE without session", req: req("DELETE", "/a/mcp", "", ""), status: http.StatusBadRequest},
		{name: "session of /a/mcp on /mcp", req: req("POST", "/mcp", s.sid, echo), status: http.StatusNotFound},
		{name: "a batch", req: req("POST", "/a/mcp", s.sid, "["+echo+"]"), status: http.StatusBadRequest},
		// The legacy HTTP+SSE routes are gone and say where to go.
		{name: "legacy GET /a/sse", req: rawReq{method: "GET", path: "/a/sse", accept: acceptBoth}, status: http.StatusGone, contains: "/a/mcp"},
		{name: "legacy POST /a/message", req: rawReq{method: "POST", path: "/a/message", accept: acceptBoth, body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
			status: http.StatusGone, contains: "/a/mcp"},
		// DELETE ends the session, not the shared upstream process.
		{name: "DELETE", req: rawReq{method: "DELETE", path: "/a/mcp", sid: s.sid}, status: http.StatusNoContent},
		{name: "POST after DELETE", req: req("POST", "/a/mcp", s.sid, echo), status: http.StatusNotFound},
	} {
		c.expect(t, tc)
	}
	after := f.server("a")
	if after.State != api.StateConnected || after.PID != pid || !pidAlive(pid) {
		t.Errorf("after DELETE the shared upstream must keep running: %+v (pid before %d)", after, pid)
	}
	s2, _ := c.initialize("/a/mcp")
	if st := s2.state(); st.PID != pid {
		t.Errorf("a new session reached pid %d, want the same process %d", st.PID, pid)
	}
}

// TestPerServerNotificationToGetStream: a notification the upstream sends
// while a call is in flight, but which belongs to no request
// (resources/updated), goes to the GET stream, never into the POST reply.
func TestPerServerNotificationToGetStream(t *testing.T) {
	_, c := oneStdioHub(t, hubConfig{}, "")
	s, _ := c.initialize("/a/mcp")
	uri := resURI("a")
	get := s.openGET()

	if status, r, body := s.request("resources/subscribe", map[string]any{"uri": uri}); status != http.StatusOK || r.Error != nil {
		t.Fatalf("subscribe: %d %s", status, body)
	}
	// The call is answered on an SSE stream of its own; read all of it.
	resp, body := c.do(s.req(http.MethodPost, acceptBoth,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"touch","arguments":{"uri":"`+uri+`"}}}`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("touch: %d %s", resp.StatusCode, body)
	}
	var inPost []*jsonrpc.Message
	if strings.HasPrefix(resp.Header.Get("Content-Type"), acceptSSE) {
		for ev := range follow(io.NopCloser(strings.NewReader(string(body)))).events {
			if ev.Msg != nil {
				inPost = append(inPost, ev.Msg)
			}
		}
	} else if m, err := jsonrpc.Decode(body); err == nil {
		inPost = append(inPost, m)
	}
	if len(inPost) != 1 || string(inPost[0].ID) != "7" || !strings.Contains(string(inPost[0].Result), "touched") {
		t.Errorf("the POST reply must hold only the call's result; got %d messages: %s", len(inPost), body)
	}

	get.await(t, 5*time.Second, "notifications/resources/updated reaches the GET stream", func(ev sseEvent) bool {
		if ev.Msg == nil {
			return false // the priming event
		}
		if ev.Msg.Method == "notifications/resources/updated" && strings.Contains(string(ev.Msg.Params), uri) {
			return true
		}
		t.Logf("GET stream event: %s %s", ev.Msg.Method, ev.Msg.Params)
		return false
	})
}

// TestPerServerTimeouts: a request the upstream does not answer in time gets
// 504 in JSON mode, and the upstream sees it cancelled: tools/call bounded
// by the server's call_timeout, other requests by [hub] request_timeout.
func TestPerServerTimeouts(t *testing.T) {
	_, c := oneStdioHub(t, hubConfig{hubKeys: `request_timeout = "300ms"`}, `call_timeout = "300ms"`)
	s, _ := c.initialize("/a/mcp")

	start := time.Now()
	status, r, body := s.tool("block", map[string]any{"tag": "slow-call"})
	if took := time.Since(start); status != http.StatusGatewayTimeout || r.Error == nil || took < 250*time.Millisecond || took > 5*time.Second {
		t.Errorf("tools/call past call_timeout: %d after %v: %s; want 504 after ~300ms", status, took, body)
	}
	status, r, body = s.request("prompts/get", map[string]any{"name": "slow", "arguments": map[string]string{"tag": "p"}})
	if status != http.StatusGatewayTimeout || r.Error == nil {
		t.Errorf("prompts/get past request_timeout: %d %s; want 504", status, body)
	}
	var st fakeState
	if !poll(5*time.Second, func() bool {
		st = s.state()
		return slices.Contains(st.Cancelled, "slow-call") && slices.Contains(st.Cancelled, "prompt:p")
	}) {
		t.Errorf("the upstream did not see both requests cancelled: %+v", st)
	}
}

// TestPerServerResponseTooLarge: a result over max_response_bytes is 502.
func TestPerServerResponseTooLarge(t *testing.T) {
	_, c := oneStdioHub(t, hubConfig{hubKeys: `max_response_bytes = 65536`}, "")
	s, _ := c.initialize("/a/mcp")
	if status, r, body := s.tool("big", map[string]any{"bytes": 200000}); status != http.StatusBadGateway || r.Error == nil {
		t.Errorf("oversized result: %d %.300s; want 502", status, body)
	}
	if got := s.toolOK("big", map[string]any{"bytes": 1000}); len(got) != 1000 {
		t.Errorf("a small result after the refused one: %d bytes", len(got))
	}
}

// TestPerServerCrashDuringCall: when the stdio process exits, the calls in
// flight fail at once with 503 (never replayed) and the server comes back
// with a new process after the restart delay.
func TestPerServerCrashDuringCall(t *testing.T) {
	f, c := oneStdioHub(t, hubConfig{}, "")
	s1, _ := c.initialize("/a/mcp")
	s2, _ := c.initialize("/a/mcp")
	pid := f.server("a").PID

	blocked := blockCall(t, context.Background(), s2, s1, 1, "victim")
	start := time.Now()
	status, r, body := s1.tool("crash", map[string]any{})
	if took := time.Since(start); status != http.StatusServiceUnavailable || r.Error == nil || took > 2*time.Second {
		t.Errorf("call whose process exited: %d after %v: %s; want 503 at once", status, took, body)
	}
	select {
	case res := <-blocked:
		if !strings.HasPrefix(res, "503 ") {
			t.Errorf("other call in flight: %s; want 503", res)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the other call in flight did not fail when the process exited")
	}
	if !pidGone(pid) {
		t.Errorf("the crashed process %d is still there", pid)
	}
	// Between the exit and the restart (backoff ≥ 375 ms) /readyz says so,
	// and a new session still starts (fail open).
	var down api.ServerStatus
	if !poll(2*time.Second, func() bool { down = f.server("a"); return down.State != api.StateConnected }) {
		t.Errorf("/readyz never showed the server down after the exit")
	} else if down.State != api.StateRestarting || !strings.Contains(down.LastError, "exit") {
		t.Errorf("/readyz while down: %+v; want restarting with the exit as last_error", down)
	}
	c.initialize("/a/mcp")

	newPID := findServer(f.waitConnected(15*time.Second, map[string]int{"a": pid}), "a").PID
	if rz := f.server("a"); rz.State != api.StateConnected || rz.PID != newPID || rz.Restarts < 1 {
		t.Errorf("/readyz after restart: %+v", rz)
	}
	// Sessions survive the restart; the old call was not replayed.
	if got := s1.toolOK("echo", map[string]any{"text": "back"}); got != "a:back" {
		t.Errorf("echo after restart = %q", got)
	}
	if st := s2.state(); st.PID != newPID || len(st.Inflight) != 0 {
		t.Errorf("after restart: %+v (want pid %d, nothing in flight)", st, newPID)
	}
}

// TestPerServerSessionCap: with ten sessions on one server's endpoint, each
// holding a GET stream, the 11th is refused with 503 naming the cap; the
// merged endpoint is not capped; and once a session is no longer in use,
// a new one takes its place (the old one's client gets 404).
func TestPerServerSessionCap(t *testing.T) {
	_, c := oneStdioHub(t, hubConfig{}, "")
	var sessions []*rawSession
	var streams []*sseStream
	for range 10 {
		s, _ := c.initialize("/a/mcp")
		streams = append(streams, s.openGET())
		sessions = append(sessions, s)
	}
	resp, body := c.do(rawReq{method: "POST", path: "/a/mcp", accept: acceptBoth, body: initBody})
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Mcp-Session-Id") != "" ||
		!strings.Contains(string(body), "max_sessions_per_server") || !strings.Contains(string(body), "10") {
		t.Errorf("11th session: %d %s; want 503 naming the cap of 10", resp.StatusCode, body)
	}
	c.initialize("/mcp")
	if status := sessions[0].delete(); status != http.StatusNoContent {
		t.Fatalf("DELETE: %d", status)
	}
	fresh, _ := c.initialize("/a/mcp") // takes the deleted session's place
	fresh.openGET()
	// A session whose stream is gone is no longer in use: the next one
	// ends it.
	streams[1].body.Close()
	if !poll(5*time.Second, func() bool {
		resp, _ := c.do(rawReq{method: "POST", path: "/a/mcp", accept: acceptBoth, body: initBody})
		return resp.StatusCode == http.StatusOK
	}) {
		t.Fatal("no session took the place of the one whose stream closed")
	}
	if status, _ := sessions[1].call(9, "ping", nil); status != http.StatusNotFound {
		t.Errorf("the session ended for room: ping answered %d, want 404", status)
	}
}

// TestPerServerSessionCapUnderConcurrency: initializes racing each other
// must not get past the cap. A server held in "starting" keeps the hub's
// warmup open, which is where initialize waits between its cap check and
// the session's creation.
func TestPerServerSessionCapUnderConcurrency(t *testing.T) {
	gate := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	servers := childServer(t, "a", childOpts{}) + remoteServer("g", startUpstream(t, "g", upstreamOpts{gate: gate}).url, "")
	var entered atomic.Int32
	f := startInproc(t, servers, hubConfig{noWait: true, wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			entered.Add(1)
			h.ServeHTTP(w, r)
		})
	}})
	t.Cleanup(open)
	c := newRawClient(t, f.url)
	const n = 12
	codes := make(chan int, n)
	for range n {
		go func() {
			resp, _, err := c.tryDo(context.Background(), rawReq{method: "POST", path: "/a/mcp", accept: acceptBoth, body: initBody})
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
	f.waitConnected(15*time.Second, nil)
	got := map[int]int{}
	for range n {
		got[<-codes]++
	}
	// None of the sessions is in use, so each new one past the cap ends
	// the idlest; the cap itself is never overshot.
	if got[http.StatusOK] != n || f.readyz().Sessions != 10 {
		t.Errorf("%d concurrent initializes on /a/mcp: statuses %v; want %d×200 and 10 sessions left (max_sessions_per_server = 10); /readyz counts %d sessions",
			n, got, n, f.readyz().Sessions)
	}
}

// TestPerServerSeedEdgeCases covers seed 002's edge cases on a shared
// stdio upstream.
func TestPerServerSeedEdgeCases(t *testing.T) {
	f, c := oneStdioHub(t, hubConfig{}, "")
	s, _ := c.initialize("/a/mcp")
	pid := f.server("a").PID

	// A reused id must never mix the two calls up: the hub may answer both
	// (each with its own result) or refuse the second (seed: 409, or a
	// JSON-RPC error); either way the first gets its own result.
	t.Run("same id twice in one session", func(t *testing.T) {
		first := blockCall(t, context.Background(), s, s, 9005, "dup-x")
		second := make(chan string, 1)
		go func() {
			resp, body, err := c.tryDo(context.Background(), s.req(http.MethodPost, acceptJSON,
				`{"jsonrpc":"2.0","id":9005,"method":"tools/call","params":{"name":"block","arguments":{"tag":"dup-y"}}}`))
			if err != nil {
				second <- "0 " + err.Error()
				return
			}
			second <- fmt.Sprint(resp.StatusCode, " ", string(body))
		}()
		var refused string
		if !poll(5*time.Second, func() bool {
			select {
			case refused = <-second:
				return true
			default:
				return slices.Contains(s.state().Inflight, "dup-y")
			}
		}) {
			t.Fatal("the second call was neither refused nor forwarded")
		}
		s.toolOK("release", map[string]any{"tag": "dup-x"})
		s.toolOK("release", map[string]any{"tag": "dup-y"})
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
		if got := s.toolOK("noise", map[string]any{}); got != "after noise" {
			t.Errorf("noise = %q", got)
		}
		if st := s.state(); st.PID != pid {
			t.Errorf("the noise restarted the server: pid %d, was %d", st.PID, pid)
		}
	})

	// A call in flight that its client abandons, either way, ends at once
	// and is cancelled upstream; the shared upstream itself is untouched.
	for _, tc := range []struct {
		name, tag string
		abandon   func(t *testing.T, caller *rawSession, cancel context.CancelFunc)
	}{
		{"client gone during a JSON reply", "gone", func(t *testing.T, _ *rawSession, cancel context.CancelFunc) { cancel() }},
		{"DELETE with a call in flight", "deleted", func(t *testing.T, caller *rawSession, _ context.CancelFunc) {
			if status := caller.delete(); status != http.StatusNoContent {
				t.Fatalf("DELETE: %d", status)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caller, _ := c.initialize("/a/mcp")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := blockCall(t, ctx, caller, s, 9006, tc.tag)
			tc.abandon(t, caller, cancel)
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("the abandoned call did not end")
			}
			if !poll(5*time.Second, func() bool { return slices.Contains(s.state().Cancelled, tc.tag) }) {
				t.Error("the upstream never saw the abandoned call cancelled")
			}
			if rz := f.server("a"); rz.PID != pid || rz.State != api.StateConnected {
				t.Errorf("the shared upstream changed: %+v", rz)
			}
		})
	}
}
