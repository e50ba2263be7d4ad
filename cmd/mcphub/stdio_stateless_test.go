package main

import (
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/stdioface"
)

// modernParams is params with the _meta a 2026-07-28 request carries.
func modernParams(version string, params map[string]any) map[string]any {
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		jsonrpc.MetaProtocolVersion:    version,
		jsonrpc.MetaClientCapabilities: map[string]any{},
		jsonrpc.MetaClientInfo:         map[string]any{"name": "lines", "version": "0"},
	}
	return params
}

// TestStdioFaceStateless: `mcphub stdio` carries a client of the 2026-07-28
// revision, which sends no initialize, to the hub one request at a time:
// a call to a tool with an x-mcp-header argument made before any
// tools/list goes with its Mcp-Param header (the hub refuses it without);
// the hub's refusals pass through as they are; a call made while the hub
// is down waits for it and goes to the restarted hub; and a client that
// turns to the session era with initialize gets a session. A listen stream
// is cancelled by notifications/cancelled, and by stdin's end.
func TestStdioFaceStateless(t *testing.T) {
	h, run := erasHub(t)
	p := startStdioProc(t, h, nil)

	call := p.await(p.send(1, "tools/call", modernParams(jsonrpc.Version20260728, map[string]any{
		"name": "hs__test_x_mcp_header", "arguments": map[string]any{"region": "eu-west", "level": 3},
	})), 30*time.Second, "the x-mcp-header call")
	if call.Error != nil || !strings.Contains(string(call.Result), `"resultType":"complete"`) {
		t.Errorf("the x-mcp-header call before any tools/list: %s", call.Encode())
	}

	bad := p.await(p.send(2, "tools/list", modernParams("2099-01-01", nil)), 30*time.Second, "the unsupported version")
	if bad.Error == nil || bad.Error.Code != jsonrpc.CodeUnsupportedProtocolVersion || string(bad.ID) != "2" {
		t.Errorf("a request of an unsupported version: %s, want the hub's -32022 under id 2", bad.Encode())
	}

	run.kill9(t)
	whileDown := p.send(4, "server/discover", modernParams(jsonrpc.Version20260728, nil))
	run = h.start(nil)
	if m := p.await(whileDown, 30*time.Second, "the discover made while the hub was down"); m.Error != nil ||
		!strings.Contains(string(m.Result), jsonrpc.Version20260728) {
		t.Errorf("server/discover made while the hub was down: %s", m.Encode())
	}
	h.waitStatus(t, run, 30*time.Second, "both upstreams connect again", connected("st", "hs"))
	echo := p.await(p.send(5, "tools/call", modernParams(jsonrpc.Version20260728, map[string]any{
		"name": "st__test_simple_text", "arguments": map[string]any{},
	})), 30*time.Second, "a call after the restart")
	if echo.Error != nil {
		t.Errorf("a call after the restart: %s", echo.Encode())
	}

	// A listen stream: its acknowledgement comes through; cancelled, it
	// gets no response. The second one is open when stdin ends, which
	// cancels it rather than waiting for it.
	acked := func(n int) bool {
		got, _ := p.messages(func(m *jsonrpc.Message) bool { return m.Method == "notifications/subscriptions/acknowledged" })
		return len(got) >= n
	}
	listen := modernParams(jsonrpc.Version20260728, map[string]any{"notifications": map[string]any{"toolsListChanged": true}})
	cancelled := p.send(6, "subscriptions/listen", listen)
	if !poll(10*time.Second, func() bool { return acked(1) }) {
		t.Fatal("no acknowledgement of the listen stream")
	}
	p.notify("notifications/cancelled", map[string]any{"requestId": 6})
	if !holds(300*time.Millisecond, func() bool { return len(cancelled) == 0 }) {
		t.Errorf("the cancelled listen got a response: %s", (<-cancelled).Encode())
	}
	p.send(7, "subscriptions/listen", listen)
	if !poll(10*time.Second, func() bool { return acked(2) }) {
		t.Fatal("no acknowledgement of the second listen stream")
	}

	if st, err := h.status(); err != nil || st.Sessions != 0 {
		t.Errorf("status %+v, %v: a 2026-07-28 client opens no session", st, err)
	}

	// A dual-era client that turns to the session era gets a session (the
	// listen stream goes on).
	if init := p.initialize(); init.Error != nil {
		t.Fatalf("initialize after stateless requests: %s", init.Encode())
	}
	if st, err := h.status(); err != nil || st.Sessions != 1 {
		t.Errorf("status %+v, %v: want the session the client initialized", st, err)
	}
	if m := p.request("tools/call", map[string]any{"name": "st__test_simple_text", "arguments": map[string]any{}}); m.Error != nil {
		t.Errorf("a call in the session: %s", m.Encode())
	}
	began := time.Now()
	if code := p.exitCode(t); code != 0 {
		t.Errorf("mcphub stdio exited %d at stdin's end, want 0\n%s", code, p.stderr.String())
	}
	if took := time.Since(began); took >= stdioface.DefaultDrain {
		t.Errorf("mcphub stdio took %s to exit with a listen stream open; it waited for the stream instead of cancelling it", took)
	}
	if bad := p.badLines(); len(bad) > 0 {
		t.Errorf("stdout lines that are not one JSON-RPC message: %q", bad)
	}
}
