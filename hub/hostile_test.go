package hub

// Hostile input: garbage thrown at every endpoint must get a clear 4xx (or a
// JSON-RPC error) and a log line, must never disturb another session, and
// must leave no goroutine behind once the hub is closed. Every helper here
// starts with "hostile" so that it cannot collide with the other test files
// of this package.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// hostileRegistry caps bodies at 256 KiB: big enough for 10 kB ids and for
// 100k-deep nested arrays (200 kB), small enough to test 413 cheaply.
const hostileRegistry = "[hub]\nmax_body_bytes = 262144\n" + twoServers

// hostileLog collects the hub's log lines so tests can require one per
// refusal.
type hostileLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *hostileLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *hostileLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// cut returns the log with every line cut to n bytes.
func (l *hostileLog) cut(n int) string {
	lines := strings.Split(l.String(), "\n")
	for i, line := range lines {
		if len(line) > n {
			lines[i] = fmt.Sprintf("%s… (%d bytes)", line[:n], len(line))
		}
	}
	return strings.Join(lines, "\n")
}

// longest returns the length of the longest log line.
func (l *hostileLog) longest() int {
	n := 0
	for _, line := range strings.Split(l.String(), "\n") {
		n = max(n, len(line))
	}
	return n
}

// wantLine requires a log line containing every one of parts.
func (l *hostileLog) wantLine(t *testing.T, what string, parts ...string) {
	t.Helper()
	for _, line := range strings.Split(l.String(), "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return
		}
	}
	t.Errorf("%s: no log line contains all of %q", what, parts)
}

// hostileSet sets a package limit for the rest of the test. The caller sets
// it before the hub starts (so the hub's goroutines see it through their
// creation) and it is restored only when the test's goroutines are gone.
func hostileSet[T any](t *testing.T, p *T, v T) {
	old := *p
	*p = v
	t.Cleanup(func() { *p = old })
}

// hostileGoroutines waits until the goroutine count is stable (three equal
// readings in a row) and returns it: the baseline of a leak check.
func hostileGoroutines() int {
	last, same := -1, 0
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		n := runtime.NumGoroutine()
		if n == last {
			same++
			if same >= 3 {
				return n
			}
		} else {
			last, same = n, 0
		}
		time.Sleep(10 * time.Millisecond)
	}
	return runtime.NumGoroutine()
}

// hostileNoLeak polls until the goroutine count is back to base (plus slack)
// and fails with every stack when it is not within the deadline.
func hostileNoLeak(t *testing.T, base, slack int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= base+slack {
			t.Logf("goroutines: baseline %d, after the hub closed %d", base, n)
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Errorf("goroutines: %d after the hub closed, baseline %d (+%d allowed); stacks:\n%s", n, base, slack, buf)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// hostileCase is one garbage request and the answer it must get.
type hostileCase struct {
	name   string
	method string
	path   string
	body   string
	kv     []string // header overrides, as for testHub.request
	status int
	code   int    // the JSON-RPC error code the body must carry; 0: not checked
	id     string // the error's id when code != 0 ("null": none); "": not checked
	check  func(t *testing.T, r reply)
}

// hostileDeep nests n arrays.
func hostileDeep(n int) string {
	return strings.Repeat("[", n) + strings.Repeat("]", n)
}

// hostileUTF16 encodes s as UTF-16LE with a byte order mark.
func hostileUTF16(s string) string {
	var b bytes.Buffer
	b.Write([]byte{0xff, 0xfe})
	for _, u := range utf16.Encode([]rune(s)) {
		binary.Write(&b, binary.LittleEndian, u)
	}
	return b.String()
}

// hostileEchoes requires a successful response whose id is exactly id.
func hostileEchoes(id string) func(t *testing.T, r reply) {
	return func(t *testing.T, r reply) {
		t.Helper()
		m := r.msg(t)
		if m.Error != nil || string(m.ID) != id {
			t.Errorf("reply id %.40s… error %v, want a result under the request's own id (%d bytes)", m.ID, m.Error, len(id))
		}
	}
}

// TestHostileInput throws a table of garbage at every endpoint of a hub over
// fakes, then drives every per-session limit past its bound, and checks that
// a session nobody touched still lists and calls tools, and that the hub
// leaves no goroutine behind.
func TestHostileInput(t *testing.T) {
	// Small limits so that the tests reach them cheaply. They are set
	// before the hub starts and restored after its goroutines are gone.
	hostileSet(t, &maxGetStreams, 2)
	hostileSet(t, &maxSessionCalls, 3)
	hostileSet(t, &maxStreamEvents, 4)
	base := hostileGoroutines()
	t.Run("hub", hostileHub)
	hostileNoLeak(t, base, 2)
}

func hostileHub(t *testing.T) {
	logs := &hostileLog{}
	release := make(chan struct{})
	alpha := newFake("alpha").setList("tools/list", toolItems("echo", "slow")).
		setHandler(func(ctx context.Context, c *fakeCall) (json.RawMessage, error) {
			if name, _ := jsonrpc.StringMember(c.Params, "name"); name == "slow" {
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`), nil
		})
	fakes := map[string]*fakeUpstream{"alpha": alpha, "beta": newFake("beta").setList("tools/list", toolItems("search"))}
	th := startHub(t, hostileRegistry, fakes, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("hub log (lines cut at 300 bytes):\n%s", logs.cut(300))
		}
	})

	// victim is never sent anything hostile; it must keep working.
	victim := th.connect("/mcp", "2025-11-25", `{}`)
	c := th.connect("/mcp", "2025-11-25", `{}`)
	other := th.connect("/mcp", "2025-11-25", `{}`)
	per := th.connect("/alpha/mcp", "2025-11-25", `{}`)
	// Sessions for DELETEs that must be refused, one per case so that a
	// DELETE wrongly honoured shows as exactly one failure.
	doomed := th.connect("/mcp", "2025-11-25", `{}`)
	doomed2 := th.connect("/mcp", "2025-11-25", `{}`)

	sess := func(kv ...string) []string { return append([]string{"Mcp-Session-Id", c.sid}, kv...) }
	call := func(id, args string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"alpha__echo","arguments":` + args + `}}`
	}
	bigStr := `"` + strings.Repeat("a", 10<<10) + `"`
	bigNum := "9" + strings.Repeat("0", 10<<10)
	const post, get, del = http.MethodPost, http.MethodGet, http.MethodDelete

	cases := []hostileCase{
		// Bodies that are not JSON, or not one JSON-RPC message.
		{name: "invalid JSON", method: post, path: "/mcp", body: `{"jsonrpc":"2.0","id":1,"method":`, status: 400, code: -32700, id: "null"},
		{name: "not JSON at all", method: post, path: "/mcp", body: `hello`, status: 400, code: -32700, id: "null"},
		{name: "empty body", method: post, path: "/mcp", body: ``, kv: sess(), status: 400, code: -32700, id: "null"},
		{name: "empty array", method: post, path: "/mcp", body: `[]`, kv: sess(), status: 400, code: -32600, id: "null"},
		{name: "bare string", method: post, path: "/mcp", body: `"x"`, kv: sess(), status: 400, code: -32600, id: "null"},
		{name: "null", method: post, path: "/mcp", body: `null`, kv: sess(), status: 400, code: -32600, id: "null"},
		{name: "number", method: post, path: "/mcp", body: `12`, kv: sess(), status: 400, code: -32600, id: "null"},
		{name: "object id", method: post, path: "/mcp", body: `{"jsonrpc":"2.0","id":{},"method":"x"}`, kv: sess(), status: 400, code: -32600, id: "null"},
		{name: "array id", method: post, path: "/mcp", body: `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, kv: sess(), status: 400, code: -32600, id: "null"},
		{name: "boolean id", method: post, path: "/mcp", body: `{"jsonrpc":"2.0","id":true,"method":"ping"}`, kv: sess(), status: 400, code: -32600, id: "null"},
		{name: "numeric method", method: post, path: "/mcp", body: `{"jsonrpc":"2.0","id":1,"method":5}`, kv: sess(), status: 400, code: -32600, id: "1"},
		{name: "jsonrpc 1.0", method: post, path: "/mcp", body: `{"jsonrpc":"1.0","id":1,"method":"ping"}`, kv: sess(), status: 400, code: -32600, id: "1"},
		{name: "string params", method: post, path: "/mcp", body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}`, kv: sess(), status: 400, code: -32600, id: "1"},
		{name: "result and error", method: post, path: "/mcp", body: `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`, kv: sess(), status: 400, code: -32600, id: "1"},
		{name: "initialize as notification", method: post, path: "/mcp", body: `{"jsonrpc":"2.0","method":"initialize","params":{}}`, status: 400},
		// initialize always starts a new session; the header it carries
		// is ignored, and the old session is untouched.
		{name: "initialize inside a session", method: post, path: "/mcp", body: rpc(7, "initialize", `{}`), kv: sess("Accept", "application/json"), status: 200, check: func(t *testing.T, r reply) {
			sid := r.header.Get("Mcp-Session-Id")
			if sid == "" || sid == c.sid {
				t.Errorf("initialize with Mcp-Session-Id %s answered session %q, want a new one", c.sid, sid)
			}
			th.send(http.MethodDelete, "/mcp", "", "Mcp-Session-Id", sid)
		}},
		{name: "unknown method", method: post, path: "/mcp", body: rpc(8, "no/such", ""), kv: sess("Accept", "application/json"), status: 200, check: func(t *testing.T, r reply) {
			rpcErr(t, r, -32601, "8")
		}},

		// Huge and deep values.
		{name: "10 kB string id", method: post, path: "/mcp", body: `{"jsonrpc":"2.0","id":` + bigStr + `,"method":"ping"}`, kv: sess(), status: 200, check: hostileEchoes(bigStr)},
		{name: "10 kB number id", method: post, path: "/mcp", body: `{"jsonrpc":"2.0","id":` + bigNum + `,"method":"ping"}`, kv: sess(), status: 200, check: hostileEchoes(bigNum)},
		{name: "10 kB id on a tool call", method: post, path: "/mcp", body: call(bigStr, `{}`), kv: sess("Accept", "application/json"), status: 200, check: hostileEchoes(bigStr)},
		{name: "body of arrays 100k deep", method: post, path: "/mcp", body: hostileDeep(100_000), kv: sess(), status: 400, code: -32600, id: "null"},
		{name: "params of arrays 100k deep", method: post, path: "/mcp", body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":` + hostileDeep(100_000) + `}`, kv: sess(), status: 400, code: -32700, id: "null"},
		{name: "params of objects 30k deep", method: post, path: "/mcp", body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat(`{"a":`, 30_000) + "1" + strings.Repeat("}", 30_000) + `}`, kv: sess(), status: 400, code: -32700, id: "null"},
		{name: "tool arguments 5000 deep", method: post, path: "/mcp", body: call("9", strings.Repeat(`{"a":`, 5000)+"1"+strings.Repeat("}", 5000)), kv: sess("Accept", "application/json"), status: 200, check: hostileEchoes("9")},

		// Invalid UTF-8 is not JSON text (RFC 8259 §8.1); it must not be
		// routed, and never forwarded to an upstream.
		{name: "invalid UTF-8 in method", method: post, path: "/mcp", body: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/\xff\xfelist\"}", kv: sess("Accept", "application/json"), status: 400, code: -32700, id: "null"},
		{name: "invalid UTF-8 in params", method: post, path: "/mcp", body: call("1", "{\"text\":\"\xc3\x28\xff\"}"), kv: sess("Accept", "application/json"), status: 400, code: -32700, id: "null"},
		{name: "invalid UTF-8 in initialize", method: post, path: "/mcp", body: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"\xff\",\"version\":\"1\"}}}", status: 400, code: -32700, id: "null"},

		// Content types. JSON has no charset parameter (RFC 8259 §11): a
		// UTF-16 body is not JSON text, whatever its label says.
		{name: "Content-Type text/plain", method: post, path: "/mcp", body: ping, kv: sess("Content-Type", "text/plain"), status: 415, code: -32600, id: "null"},
		{name: "Content-Type missing", method: post, path: "/mcp", body: ping, kv: sess("Content-Type", ""), status: 415, code: -32600, id: "null"},
		{name: "Content-Type unparsable", method: post, path: "/mcp", body: ping, kv: sess("Content-Type", ";;;"), status: 415, code: -32600, id: "null"},
		{name: "Content-Type application/jsonx", method: post, path: "/mcp", body: ping, kv: sess("Content-Type", "application/jsonx"), status: 415, code: -32600, id: "null"},
		{name: "UTF-16 body labelled charset=utf-16", method: post, path: "/mcp", body: hostileUTF16(ping), kv: sess("Content-Type", "application/json; charset=utf-16"), status: 400, code: -32700, id: "null"},
		{name: "UTF-8 body labelled charset=utf-16", method: post, path: "/mcp", body: ping, kv: sess("Content-Type", "application/json; charset=utf-16"), status: 200, check: hostileEchoes("1")},

		// Accept. A POST without Accept is answered with JSON (seed 003's
		// compatibility rule); a GET must accept an event stream.
		{name: "POST without Accept", method: post, path: "/mcp", body: ping, kv: sess("Accept", ""), status: 200, check: hostileEchoes("1")},
		{name: "POST Accept text/html", method: post, path: "/mcp", body: ping, kv: sess("Accept", "text/html"), status: 200, check: hostileEchoes("1")},
		{name: "GET without Accept", method: get, path: "/mcp", kv: sess("Accept", ""), status: 406, code: -32600, id: "null"},
		{name: "GET Accept garbage", method: get, path: "/mcp", kv: sess("Accept", ";;;,,,=q"), status: 406, code: -32600, id: "null"},

		// Session ids.
		{name: "session id missing", method: post, path: "/mcp", body: ping, status: 400, code: -32000, id: "null"},
		{name: "session id too short", method: post, path: "/mcp", body: ping, kv: []string{"Mcp-Session-Id", c.sid[:35]}, status: 400, code: -32000, id: "null"},
		{name: "session id too long", method: post, path: "/mcp", body: ping, kv: []string{"Mcp-Session-Id", c.sid + "a"}, status: 400, code: -32000, id: "null"},
		{name: "session id of 8 kB", method: post, path: "/mcp", body: ping, kv: []string{"Mcp-Session-Id", strings.Repeat("A", 8<<10)}, status: 400, code: -32000, id: "null"},
		{name: "session id not hex", method: post, path: "/mcp", body: ping, kv: []string{"Mcp-Session-Id", "g" + c.sid[1:]}, status: 400, code: -32000, id: "null"},
		{name: "session id a UUID of version 1", method: post, path: "/mcp", body: ping, kv: []string{"Mcp-Session-Id", c.sid[:14] + "1" + c.sid[15:]}, status: 400, code: -32000, id: "null"},
		{name: "session id in braces", method: post, path: "/mcp", body: ping, kv: []string{"Mcp-Session-Id", "{" + c.sid + "}"}, status: 400, code: -32000, id: "null"},
		{name: "session id uppercase: well-formed, unknown", method: post, path: "/mcp", body: ping, kv: []string{"Mcp-Session-Id", strings.ToUpper(c.sid)}, status: 404, code: -32001, id: "null"},
		{name: "session id with padding", method: post, path: "/mcp", body: ping, kv: []string{"Mcp-Session-Id", c.sid[:34] + "=="}, status: 400, code: -32000, id: "null"},
		{name: "session id with UTF-8", method: post, path: "/mcp", body: ping, kv: []string{"Mcp-Session-Id", c.sid[:34] + "é"}, status: 400, code: -32000, id: "null"},
		{name: "session id unknown", method: post, path: "/mcp", body: ping, kv: []string{"Mcp-Session-Id", "3f2504e0-4f89-41d3-9a0c-0305e82c3301"}, status: 404, code: -32001, id: "null"},
		{name: "session id of /alpha/mcp on /mcp", method: post, path: "/mcp", body: ping, kv: []string{"Mcp-Session-Id", per.sid}, status: 404, code: -32001, id: "null"},
		{name: "session id of /mcp on /alpha/mcp", method: post, path: "/alpha/mcp", body: ping, kv: []string{"Mcp-Session-Id", c.sid}, status: 404, code: -32001, id: "null"},
		{name: "session id of /alpha/mcp on /beta/mcp", method: post, path: "/beta/mcp", body: ping, kv: []string{"Mcp-Session-Id", per.sid}, status: 404, code: -32001, id: "null"},
		{name: "GET with another endpoint's session", method: get, path: "/mcp", kv: []string{"Mcp-Session-Id", per.sid}, status: 404, code: -32001, id: "null"},
		{name: "DELETE with another endpoint's session", method: del, path: "/alpha/mcp", kv: []string{"Mcp-Session-Id", c.sid}, status: 404, code: -32001, id: "null"},
		{name: "DELETE with a malformed session", method: del, path: "/mcp", kv: []string{"Mcp-Session-Id", "garbage"}, status: 400, code: -32000, id: "null"},
		{name: "DELETE without a session", method: del, path: "/mcp", status: 400, code: -32000, id: "null"},
		// Two Mcp-Session-Id lines that disagree are ambiguous: a proxy may
		// act on one and the hub on the other. They must be refused, not
		// resolved by taking the first.
		{name: "two session ids: own then another session's", method: post, path: "/mcp", body: ping, kv: sess("+Mcp-Session-Id", other.sid), status: 400, code: -32000, id: "null"},
		{name: "two session ids: garbage then own", method: post, path: "/mcp", body: ping, kv: []string{"Mcp-Session-Id", "garbage", "+Mcp-Session-Id", c.sid}, status: 400, code: -32000, id: "null"},
		{name: "two session ids on DELETE", method: del, path: "/mcp", kv: []string{"Mcp-Session-Id", doomed.sid, "+Mcp-Session-Id", other.sid}, status: 400, code: -32000, id: "null"},

		// MCP-Protocol-Version: anything but a version the hub serves is a
		// 400, on every method (the spec's "any request").
		{name: "version garbage on POST", method: post, path: "/mcp", body: ping, kv: sess("MCP-Protocol-Version", "garbage"), status: 400, code: -32000, id: "null"},
		{name: "version 8 kB on POST", method: post, path: "/mcp", body: ping, kv: sess("MCP-Protocol-Version", strings.Repeat("9", 8<<10)), status: 400, code: -32000, id: "null"},
		{name: "version impossible date", method: post, path: "/mcp", body: ping, kv: sess("MCP-Protocol-Version", "2025-13-45"), status: 400, code: -32000, id: "null"},
		{name: "version garbage on initialize", method: post, path: "/mcp", body: initReq("2025-11-25", `{}`), kv: []string{"MCP-Protocol-Version", "garbage"}, status: 400, code: -32000, id: "null"},
		{name: "version garbage on GET", method: get, path: "/mcp", kv: sess("MCP-Protocol-Version", "garbage"), status: 400, code: -32000, id: "null"},
		{name: "version garbage on /alpha/mcp", method: post, path: "/alpha/mcp", body: ping, kv: []string{"Mcp-Session-Id", per.sid, "MCP-Protocol-Version", "x"}, status: 400, code: -32000, id: "null"},
		{name: "version garbage on DELETE", method: del, path: "/mcp", kv: []string{"Mcp-Session-Id", doomed2.sid, "MCP-Protocol-Version", "garbage"}, status: 400, code: -32000, id: "null"},

		// Methods and paths.
		{name: "PUT /mcp", method: http.MethodPut, path: "/mcp", body: ping, kv: sess(), status: 405, check: func(t *testing.T, r reply) {
			if !strings.Contains(r.header.Get("Allow"), "POST") {
				t.Errorf("Allow = %q", r.header.Get("Allow"))
			}
		}},
		{name: "PATCH /alpha/mcp", method: http.MethodPatch, path: "/alpha/mcp", body: ping, status: 405},
		{name: "unknown server", method: post, path: "/ghost/mcp", body: ping, status: 404, code: -32001, id: "null"},
		{name: "server path with junk", method: post, path: "/alpha/mcp/x/y", body: ping, status: 404},
		{name: "double slash", method: post, path: "//mcp", body: ping, status: 404},
		{name: "dot segments", method: post, path: "/alpha/../mcp", body: initReq("2025-11-25", `{}`), status: 404},
		{name: "legacy SSE route", method: get, path: "/alpha/sse", status: 410},
		{name: "foreign Host on /mcp", method: post, path: "/mcp", body: initReq("2025-11-25", `{}`), kv: []string{"Host", "evil.example"}, status: 403},
		{name: "rebinding Host", method: post, path: "/mcp", body: ping, kv: sess("Host", "127.0.0.1.nip.io:7733"), status: 403},
		{name: "foreign Origin on /mcp", method: post, path: "/mcp", body: ping, kv: sess("Origin", "https://evil.example"), status: 403},
		{name: "Origin null", method: post, path: "/mcp", body: ping, kv: sess("Origin", "null"), status: 403},
		{name: "preflight from a foreign Origin", method: http.MethodOptions, path: "/mcp", kv: []string{"Origin", "https://evil.example", "Access-Control-Request-Method", "POST"}, status: 403},

		// The health and control endpoints.
		{name: "/healthz with a garbage body", method: post, path: "/healthz", body: hostileDeep(1000), status: 200},
		{name: "/healthz with a foreign Host", method: get, path: "/healthz", kv: []string{"Host", "evil.example"}, status: 403},
		{name: "/readyz with garbage query and body", method: get, path: "/readyz?x=%ff%00&&==", body: "\xff\xfe", status: 200},
		{name: "/readyz from a foreign Origin", method: get, path: "/readyz", kv: []string{"Origin", "https://evil.example"}, status: 403},
		{name: "/control/sessions PUT", method: http.MethodPut, path: "/control/sessions", body: `{}`, status: 405},
		{name: "/control/sessions DELETE without id", method: del, path: "/control/sessions", status: 404},
		{name: "/control/sessions DELETE garbage id", method: del, path: "/control/sessions?id=%ff%00" + strings.Repeat("x", 4096), status: 404},
		{name: "/control/sessions DELETE from a foreign Origin", method: del, path: "/control/sessions?id=" + c.sid, kv: []string{"Origin", "https://evil.example"}, status: 403},
		{name: "/control/sessions from a foreign Host", method: get, path: "/control/sessions", kv: []string{"Host", "evil.example"}, status: 403},
		{name: "/control/restart GET", method: get, path: "/control/restart?server=alpha", status: 405},
		{name: "/control/restart without server", method: post, path: "/control/restart", status: 404},
		{name: "/control/restart unknown server", method: post, path: "/control/restart?server=../../etc/passwd", status: 404},
		{name: "/control/restart with a garbage body", method: post, path: "/control/restart?server=%00", body: hostileDeep(1000), status: 404},
		{name: "/control/restart from a foreign Origin", method: post, path: "/control/restart?server=alpha", kv: []string{"Origin", "https://evil.example"}, status: 403},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := th.send(tc.method, tc.path, tc.body, tc.kv...)
			if r.status != tc.status {
				t.Fatalf("%s %s: status %d, want %d; body %.300s", tc.method, tc.path, r.status, tc.status, r.body)
			}
			if tc.code != 0 {
				rpcErr(t, r, tc.code, tc.id)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}

	// Garbage must not turn into log lines of its own size: a client could
	// otherwise write megabytes to the log with every request (the body
	// limit is 4 MiB by default).
	t.Run("log lines stay bounded", func(t *testing.T) {
		if n := logs.longest(); n > 4<<10 {
			t.Errorf("the longest log line is %d bytes after requests with 10 kB ids; want at most 4 KiB (ids and methods are logged whole)", n)
		}
	})
	// Nothing with invalid UTF-8 reached an upstream.
	alpha.mu.Lock()
	for _, fc := range alpha.calls {
		if !utf8.Valid(fc.Params) {
			t.Errorf("the hub forwarded invalid UTF-8 upstream: %s %q", fc.Method, fc.Params)
		}
	}
	alpha.mu.Unlock()
	// A DELETE refused for its headers must not have ended the session.
	for name, sid := range map[string]string{"two session ids": doomed.sid, "unsupported version": doomed2.sid} {
		if r := th.send(post, "/mcp", ping, "Mcp-Session-Id", sid); r.status != http.StatusOK {
			t.Errorf("the session of the DELETE with %s: ping %d, want 200 (the refused DELETE ended it)", name, r.status)
		}
	}

	t.Run("Last-Event-ID", func(t *testing.T) { hostileLastEventID(t, th, c, other) })
	t.Run("body over max_body_bytes", func(t *testing.T) { hostileBodyLimit(t, th, c, logs) })
	t.Run("GET streams over the per-session limit", func(t *testing.T) { hostileStreamLimit(t, th, logs) })
	t.Run("requests in flight over the per-session limit", func(t *testing.T) { hostileCallLimit(t, th, logs, release) })

	// The session nobody touched lists tools and calls one.
	m := victim.call(100, "tools/list", "")
	if m.Error != nil || !strings.Contains(string(m.Result), `"alpha__echo"`) {
		t.Errorf("victim tools/list: %s %v", m.Result, m.Error)
	}
	m = victim.call(101, "tools/call", `{"name":"alpha__echo","arguments":{}}`)
	if m.Error != nil || !strings.Contains(string(m.Result), `"ok"`) {
		t.Errorf("victim tools/call: %s %v", m.Result, m.Error)
	}
	// So does the session that sent the garbage.
	if m := c.call(102, "ping", ""); m.Error != nil {
		t.Errorf("the hostile session's own ping: %v", m.Error)
	}
}

// hostileLastEventID resumes with Last-Event-IDs that belong to another
// session, are malformed, or point at events the hub no longer keeps.
func hostileLastEventID(t *testing.T, th *testHub, c, other *client) {
	// other reads ten messages one by one on its GET stream; with
	// maxStreamEvents = 4 the first ones are purged as they are read.
	s := other.get()
	var ids []string
	for i := range 10 {
		th.fakes["alpha"].notify(other.sid, logMsg(i))
		m, id := s.nextMsg()
		if !strings.Contains(string(m.Params), fmt.Sprintf("msg-%d", i)) {
			t.Fatalf("message %d on the GET stream: %s", i, m.Params)
		}
		ids = append(ids, id)
	}
	s.stop()
	eventually(t, "the GET stream detaches", func() bool {
		o := other.session()
		o.mu.Lock()
		defer o.mu.Unlock()
		for _, st := range o.streams {
			if st.isAttached() {
				return false
			}
		}
		return true
	})
	streamID, _, _ := strings.Cut(ids[0], "_")
	for _, tc := range []struct {
		name   string
		c      *client
		last   string
		status int
		body   string
	}{
		{"another session's stream", c, ids[9], 400, "no stream of this session"},
		{"malformed: no sequence", c, "garbage", 400, "malformed"},
		{"malformed: negative sequence", other, streamID + "_-1", 400, "malformed"},
		{"malformed: only a separator", other, "_", 400, "malformed"},
		{"malformed: 8 kB", other, strings.Repeat("x_", 4<<10) + "1", 400, ""},
		{"beyond the stream's end", other, streamID + "_999999", 400, "malformed"},
		{"sequence overflowing int", other, streamID + "_99999999999999999999999", 400, "malformed"},
		{"purged", other, ids[0], 400, "no longer kept"},
	} {
		r := th.send(http.MethodGet, "/mcp", "", "Mcp-Session-Id", tc.c.sid, "Last-Event-ID", tc.last)
		if r.status != tc.status || !strings.Contains(string(r.body), tc.body) {
			t.Errorf("%s (Last-Event-ID %.40q): %d %s, want %d mentioning %q", tc.name, tc.last, r.status, r.body, tc.status, tc.body)
		}
	}
	// The owner resumes its own stream from a kept event and gets the rest.
	r := other.get("Last-Event-ID", ids[8])
	m, id := r.nextMsg()
	if id != ids[9] || !strings.Contains(string(m.Params), "msg-9") {
		t.Errorf("resuming after %s: event %s %s, want %s (msg-9)", ids[8], id, m.Params, ids[9])
	}
	r.stop()
}

// hostileBodyLimit sends bodies over max_body_bytes, with a length and
// chunked.
func hostileBodyLimit(t *testing.T, th *testHub, c *client, logs *hostileLog) {
	pad := strings.Repeat("x", 300<<10)
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"pad":"` + pad + `"}}}`
	r := c.post(big)
	if r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body over the limit: %d %.200s, want 413", r.status, r.body)
	}
	rpcErr(t, r, -32600, "null")

	// Chunked: no Content-Length for the server to refuse up front.
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	req := th.request(ctx, http.MethodPost, "/mcp", "", "Mcp-Session-Id", c.sid)
	req.Body = io.NopCloser(io.MultiReader(strings.NewReader(big[:100]), strings.NewReader(big[100:])))
	req.ContentLength = -1
	resp, err := th.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("chunked POST: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a chunked body over the limit: %d %.200s, want 413", resp.StatusCode, b)
	}
	logs.wantLine(t, "413", "refused a request body over the limit", "limit_bytes=262144")
	if r := c.post(ping); r.status != http.StatusOK {
		t.Errorf("a small body after large ones: %d", r.status)
	}
}

// hostileStreamLimit opens one GET stream more than maxGetStreams allows.
func hostileStreamLimit(t *testing.T, th *testHub, logs *hostileLog) {
	g := th.connect("/mcp", "2025-11-25", `{}`)
	for range maxGetStreams {
		g.get()
	}
	// send reads the answer itself (open would race its stream reader
	// for the body).
	r := th.send(http.MethodGet, "/mcp", "", "Mcp-Session-Id", g.sid)
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("GET stream %d: %d %s, want 429", maxGetStreams+1, r.status, r.body)
	}
	rpcErr(t, r, -32000, "null")
	// The limit is per session: another session still opens a stream.
	other := th.connect("/mcp", "2025-11-25", `{}`)
	other.get().stop()
	// Every limit reached is logged: the operator must see who hit it.
	logs.wantLine(t, "429 on GET", g.sid, "too many streams")
	th.send(http.MethodDelete, "/mcp", "", "Mcp-Session-Id", g.sid)
	th.send(http.MethodDelete, "/mcp", "", "Mcp-Session-Id", other.sid)
}

// hostileCallLimit holds maxSessionCalls requests in flight and sends more:
// a reused id and one over the bound are refused with a JSON-RPC error,
// while another session's calls go through.
func hostileCallLimit(t *testing.T, th *testHub, logs *hostileLog, release chan struct{}) {
	f := th.connect("/mcp", "2025-11-25", `{}`)
	slow := func(id int) string { return rpc(id, "tools/call", `{"name":"alpha__slow","arguments":{}}`) }
	inFlight := func() int {
		s := f.session()
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.calls)
	}
	var replies []<-chan reply
	replies = append(replies, f.postAsync(slow(1), "Accept", "application/json"))
	eventually(t, "the first call is in flight", func() bool { return inFlight() == 1 })
	r := f.post(slow(1), "Accept", "application/json")
	if r.status != http.StatusOK {
		t.Fatalf("a reused in-flight id: %d %s", r.status, r.body)
	}
	rpcErr(t, r, -32600, "1")
	for id := 2; id <= maxSessionCalls; id++ {
		replies = append(replies, f.postAsync(slow(id), "Accept", "application/json"))
	}
	eventually(t, "the session's calls are in flight", func() bool { return inFlight() == maxSessionCalls })
	r = f.post(slow(99), "Accept", "application/json")
	if r.status != http.StatusOK {
		t.Fatalf("a call over the limit: %d %s", r.status, r.body)
	}
	if e := rpcErr(t, r, -32600, "99"); !strings.Contains(e.Message, "too many requests in flight") {
		t.Errorf("a call over the limit: %q, want it to say why", e.Message)
	}
	logs.wantLine(t, "the refused call", "refused a request", f.sid, "too many requests in flight")
	// Another session is not limited by this one.
	o := th.connect("/mcp", "2025-11-25", `{}`)
	if m := o.call(1, "tools/call", `{"name":"alpha__echo","arguments":{}}`); m.Error != nil {
		t.Errorf("another session's call while this one is at its limit: %v", m.Error)
	}
	close(release)
	for i, ch := range replies {
		select {
		case r := <-ch:
			if r.status != http.StatusOK || r.msg(t).Error != nil {
				t.Errorf("held call %d: %d %s", i+1, r.status, r.body)
			}
		case <-time.After(waitFor):
			t.Fatalf("held call %d did not finish after release", i+1)
		}
	}
	if m := f.call(100, "ping", ""); m.Error != nil {
		t.Errorf("ping once the calls finished: %v", m.Error)
	}
	th.send(http.MethodDelete, "/mcp", "", "Mcp-Session-Id", f.sid)
	th.send(http.MethodDelete, "/mcp", "", "Mcp-Session-Id", o.sid)
}

// TestHostileSessionCap fills /mcp to its cap: a new session ends the least
// recently active session not in use (its client gets 404), a session with
// an open stream is never ended for room, 503 comes only when every session
// is in use, and a per-server endpoint is not affected.
func TestHostileSessionCap(t *testing.T) {
	logs := &hostileLog{}
	th := startHub(t, "[hub]\nmax_sessions = 4\n"+twoServers, nil, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	const ping = `{"jsonrpc":"2.0","id":7,"method":"ping"}`
	oldest := th.connect("/mcp", "2025-11-25", `{}`)
	streaming := th.connect("/mcp", "2025-11-25", `{}`)
	streaming.get()
	older := th.connect("/mcp", "2025-11-25", `{}`)
	newest := th.connect("/mcp", "2025-11-25", `{}`)
	oldest.post(ping) // now the most recently active of the idle ones
	// At the cap, the next session ends "older": idle and, with "oldest"
	// just used, the least recently active.
	fifth := th.connect("/mcp", "2025-11-25", `{}`)
	if r := older.post(ping); r.status != http.StatusNotFound {
		t.Fatalf("the idlest session after a new one past the cap: %d %s, want 404", r.status, r.body)
	}
	logs.wantLine(t, "eviction", "session evicted", older.sid)
	for _, c := range []*client{oldest, streaming, newest, fifth} {
		if r := c.post(ping); r.status != http.StatusOK {
			t.Errorf("session %s after an eviction: %d %s, want 200", c.sid, r.status, r.body)
		}
	}
	// Every session in use: the next initialize is refused.
	for _, c := range []*client{oldest, newest, fifth} {
		c.get()
	}
	r := th.send(http.MethodPost, "/mcp", initReq("2025-11-25", `{}`))
	if r.status != http.StatusServiceUnavailable || r.header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("initialize with every session in use: %d %s, want 503 without a session", r.status, r.body)
	}
	rpcErr(t, r, -32000, "null")
	if !strings.Contains(string(r.body), "max_sessions = 4") {
		t.Errorf("the refusal %s does not name the setting", r.body)
	}
	logs.wantLine(t, "503", "refused a session", "sessions")
	if r := th.send(http.MethodPost, "/alpha/mcp", initReq("2025-11-25", `{}`)); r.status != http.StatusOK {
		t.Errorf("/alpha/mcp while /mcp is full: %d", r.status)
	}
}

// TestHostileIdleSessionExpires: a session idle past session_ttl is ended
// (and logged), while a session with a stream open or one in use is kept.
func TestHostileIdleSessionExpires(t *testing.T) {
	hostileSet(t, &sweepInterval, 20*time.Millisecond)
	logs := &hostileLog{}
	th := startHub(t, "[hub]\nsession_ttl = \"300ms\"\n"+twoServers, nil, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	idle := th.connect("/mcp", "2025-11-25", `{}`)
	streaming := th.connect("/mcp", "2025-11-25", `{}`)
	active := th.connect("/mcp", "2025-11-25", `{}`)
	streaming.get()
	eventually(t, "the idle session expires", func() bool {
		if r := active.post(ping); r.status != http.StatusOK {
			t.Fatalf("the active session: ping %d", r.status)
		}
		return idle.session() == nil
	})
	if r := idle.post(ping); r.status != http.StatusNotFound {
		t.Errorf("the expired session: ping %d, want 404", r.status)
	}
	logs.wantLine(t, "expiry", "session expired", idle.sid)
	if streaming.session() == nil {
		t.Error("a session with an open GET stream expired")
	}
	if active.session() == nil {
		t.Error("an active session expired")
	}
}
