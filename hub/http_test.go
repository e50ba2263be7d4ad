package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/mcphub/mcphub/api"
)

const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`

func TestHTTPInitializeCreatesSession(t *testing.T) {
	th := startHub(t, twoServers, nil)
	r := th.send(http.MethodPost, "/mcp", initReq("2025-06-18", `{}`))
	if r.status != http.StatusOK {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	sid := r.header.Get("Mcp-Session-Id")
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(sid) {
		t.Errorf("Mcp-Session-Id = %q, want a version 4 UUID", sid)
	}
	for _, c := range []byte(sid) {
		if c < 0x21 || c > 0x7e {
			t.Errorf("Mcp-Session-Id %q has a character outside visible ASCII", sid)
		}
	}
	m := r.msg(t)
	if string(m.ID) != "0" || m.Result == nil {
		t.Fatalf("initialize reply = %s", r.body)
	}
	for _, want := range []string{`"protocolVersion":"2025-06-18"`, `"name":"mcphub"`, `"tools":{"listChanged":true}`} {
		if !strings.Contains(string(m.Result), want) {
			t.Errorf("initialize result %s lacks %s", m.Result, want)
		}
	}
	if other := th.send(http.MethodPost, "/mcp", initReq("2025-06-18", `{}`)).header.Get("Mcp-Session-Id"); other == sid {
		t.Error("two initializes got the same session id")
	}
	// A per-server endpoint answers with the server's own identity.
	r = th.send(http.MethodPost, "/alpha/mcp", initReq("2025-03-26", `{}`))
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"name":"alpha"`) ||
		!strings.Contains(string(r.body), `"protocolVersion":"2025-03-26"`) {
		t.Errorf("/alpha/mcp initialize: %d %s", r.status, r.body)
	}
}

func TestHTTPSessionStatuses(t *testing.T) {
	th := startHub(t, twoServers, nil)
	c := th.connect("/mcp", "2025-06-18", `{}`)
	per := th.connect("/alpha/mcp", "2025-06-18", `{}`)
	tests := []struct {
		name   string
		path   string
		body   string
		kv     []string
		status int
	}{
		{"valid session", "/mcp", ping, []string{"Mcp-Session-Id", c.sid}, 200},
		{"missing session header", "/mcp", ping, nil, 400},
		{"malformed session id", "/mcp", ping, []string{"Mcp-Session-Id", "not-a-session"}, 400},
		{"uppercase session id: well-formed, unknown", "/mcp", ping, []string{"Mcp-Session-Id", strings.ToUpper(c.sid)}, 404},
		{"session id a UUID of version 1", "/mcp", ping, []string{"Mcp-Session-Id", "3f2504e0-4f89-11d3-9a0c-0305e82c3301"}, 400},
		{"unknown session", "/mcp", ping, []string{"Mcp-Session-Id", "3f2504e0-4f89-41d3-9a0c-0305e82c3301"}, 404},
		{"/mcp session on /alpha/mcp", "/alpha/mcp", ping, []string{"Mcp-Session-Id", c.sid}, 404},
		{"/alpha/mcp session on /mcp", "/mcp", ping, []string{"Mcp-Session-Id", per.sid}, 404},
		{"/alpha/mcp session on /beta/mcp", "/beta/mcp", ping, []string{"Mcp-Session-Id", per.sid}, 404},
		{"protocol version absent", "/mcp", ping, []string{"Mcp-Session-Id", c.sid, "MCP-Protocol-Version", ""}, 200},
		{"protocol version supported", "/mcp", ping, []string{"Mcp-Session-Id", c.sid, "MCP-Protocol-Version", "2025-06-18"}, 200},
		{"protocol version unsupported", "/mcp", ping, []string{"Mcp-Session-Id", c.sid, "MCP-Protocol-Version", "1999-01-01"}, 400},
		{"wrong Content-Type", "/mcp", ping, []string{"Mcp-Session-Id", c.sid, "Content-Type", "text/plain"}, 415},
		{"no Content-Type", "/mcp", ping, []string{"Mcp-Session-Id", c.sid, "Content-Type", ""}, 415},
		{"Content-Type with charset", "/mcp", ping, []string{"Mcp-Session-Id", c.sid, "Content-Type", "application/json; charset=utf-8"}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := th.send(http.MethodPost, tt.path, tt.body, tt.kv...)
			if r.status != tt.status {
				t.Fatalf("status = %d %s, want %d", r.status, r.body, tt.status)
			}
			if tt.status != 200 {
				rpcErr(t, r, 0, "null") // a JSON-RPC error without an id
			}
		})
	}
}

// TestHTTPErrorBodies checks the 4xx answers that carry a specific
// JSON-RPC code.
func TestHTTPErrorBodies(t *testing.T) {
	th := startHub(t, twoServers, nil)
	c := th.connect("/mcp", "2025-06-18", `{}`)

	r := c.post(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	if r.status != http.StatusBadRequest {
		t.Errorf("batch: %d %s, want 400", r.status, r.body)
	}
	rpcErr(t, r, -32600, "null")

	r = c.post(`{"jsonrpc":"2.0","id":1,"method":`)
	if r.status != http.StatusBadRequest {
		t.Errorf("malformed JSON: %d %s, want 400", r.status, r.body)
	}
	rpcErr(t, r, -32700, "null")

	r = th.send(http.MethodPut, "/mcp", ping, "Mcp-Session-Id", c.sid)
	if r.status != http.StatusMethodNotAllowed || !strings.Contains(r.header.Get("Allow"), "POST") {
		t.Errorf("PUT: %d Allow=%q, want 405 naming POST", r.status, r.header.Get("Allow"))
	}
}

func TestHTTPMessagesWithoutReply(t *testing.T) {
	th := startHub(t, twoServers, nil)
	c := th.connect("/mcp", "2025-06-18", `{}`)
	for name, body := range map[string]string{
		"notification":          `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`,
		"client response":       `{"jsonrpc":"2.0","id":"mcphub-99","result":{}}`,
		"client error response": `{"jsonrpc":"2.0","id":"mcphub-98","error":{"code":-1,"message":"no"}}`,
	} {
		r := c.post(body)
		if r.status != http.StatusAccepted || len(r.body) != 0 {
			t.Errorf("%s: %d %q, want 202 with an empty body", name, r.status, r.body)
		}
	}
	// roots/list_changed is forwarded to every server the session sees.
	for _, f := range th.fakes {
		f.mu.Lock()
		got := strings.Join(f.notified, ",")
		f.mu.Unlock()
		if got != "notifications/roots/list_changed" {
			t.Errorf("%s was notified of %q, want roots/list_changed once", f.name, got)
		}
	}
}

func TestHTTPDeleteEndsSession(t *testing.T) {
	th := startHub(t, twoServers, nil)
	c := th.connect("/mcp", "2025-06-18", `{}`)
	if r := th.send(http.MethodDelete, "/mcp", "", "Mcp-Session-Id", c.sid); r.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s, want 204", r.status, r.body)
	}
	for _, f := range th.fakes {
		f.mu.Lock()
		closed := strings.Join(f.closedSS, ",")
		f.mu.Unlock()
		if closed != c.sid {
			t.Errorf("%s: SessionClosed got %q, want %q", f.name, closed, c.sid)
		}
	}
	if r := c.post(ping); r.status != http.StatusNotFound {
		t.Errorf("POST after DELETE: %d, want 404", r.status)
	}
	if r := th.send(http.MethodGet, "/mcp", "", "Mcp-Session-Id", c.sid); r.status != http.StatusNotFound {
		t.Errorf("GET after DELETE: %d, want 404", r.status)
	}
	if r := th.send(http.MethodDelete, "/mcp", "", "Mcp-Session-Id", c.sid); r.status != http.StatusNotFound {
		t.Errorf("second DELETE: %d, want 404", r.status)
	}
}

func TestHTTPBodyTooLarge(t *testing.T) {
	th := startHub(t, "[hub]\nmax_body_bytes = 300\n"+twoServers, nil)
	c := th.connect("/mcp", "2025-06-18", `{}`)
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"alpha__x","arguments":{"pad":"` +
		strings.Repeat("x", 400) + `"}}}`
	r := c.post(big)
	if r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("large body: %d %s, want 413", r.status, r.body)
	}
	rpcErr(t, r, -32600, "null")
	if r := c.post(ping); r.status != http.StatusOK {
		t.Errorf("small body after a large one: %d", r.status)
	}
}

func TestHTTPGet(t *testing.T) {
	th := startHub(t, twoServers, nil)
	c := th.connect("/mcp", "2025-06-18", `{}`)
	for name, accept := range map[string]string{"no Accept": "", "json only": "application/json", "wildcard": "*/*",
		"sse refused": "text/event-stream;q=0"} {
		if r := th.send(http.MethodGet, "/mcp", "", "Mcp-Session-Id", c.sid, "Accept", accept); r.status != http.StatusNotAcceptable {
			t.Errorf("GET with %s: %d, want 406", name, r.status)
		}
	}
	if r := th.send(http.MethodGet, "/mcp", ""); r.status != http.StatusBadRequest {
		t.Errorf("GET without a session: %d, want 400", r.status)
	}
	if r := th.send(http.MethodGet, "/mcp", "", "Mcp-Session-Id", c.sid, "MCP-Protocol-Version", "1999-01-01"); r.status != http.StatusBadRequest {
		t.Errorf("GET with an unsupported version: %d, want 400", r.status)
	}
	s := c.get("Accept", "application/json, text/event-stream")
	for k, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := s.resp.Header.Get(k); got != want {
			t.Errorf("GET stream %s = %q, want %q", k, got, want)
		}
	}
}

func TestHTTPHostAndOrigin(t *testing.T) {
	th := startHub(t, "[hub]\nallowed_origins = [\"https://app.example.com\"]\n"+twoServers, nil)
	init := initReq("2025-06-18", `{}`)
	tests := []struct {
		name   string
		kv     []string
		status int
		cors   bool
	}{
		{"no Origin", nil, 200, false},
		{"non-loopback Host", []string{"Host", "evil.example.com"}, 403, false},
		{"rebinding: Host and Origin foreign", []string{"Host", "evil.example.com", "Origin", "http://evil.example.com"}, 403, false},
		{"localhost Host", []string{"Host", "localhost:7733"}, 200, false},
		{"foreign Origin", []string{"Origin", "http://evil.example.com"}, 403, false},
		{"null Origin", []string{"Origin", "null"}, 403, false},
		{"loopback Origin", []string{"Origin", "http://localhost:5173"}, 200, true},
		{"loopback IP Origin", []string{"Origin", "http://127.0.0.1:9999"}, 200, true},
		{"IPv6 loopback Origin", []string{"Origin", "http://[::1]:3000"}, 200, true},
		{"allowed_origins entry", []string{"Origin", "https://app.example.com"}, 200, true},
		{"allowed_origins is exact", []string{"Origin", "https://other.example.com"}, 403, false},
		{"lookalike localhost Origin", []string{"Origin", "http://localhost.evil.com"}, 403, false},
		{"lookalike loopback IP Origin", []string{"Origin", "http://127.0.0.1.nip.io"}, 403, false},
		{"file Origin", []string{"Origin", "file://"}, 403, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := th.send(http.MethodPost, "/mcp", init, tt.kv...)
			if r.status != tt.status {
				t.Fatalf("status = %d %s, want %d", r.status, r.body, tt.status)
			}
			origin := ""
			for i := 0; i+1 < len(tt.kv); i += 2 {
				if tt.kv[i] == "Origin" {
					origin = tt.kv[i+1]
				}
			}
			if !tt.cors {
				return
			}
			if got := r.header.Get("Access-Control-Allow-Origin"); got != origin {
				t.Errorf("Access-Control-Allow-Origin = %q, want %q", got, origin)
			}
			if got := r.header.Get("Access-Control-Expose-Headers"); !strings.Contains(strings.ToLower(got), "mcp-session-id") {
				t.Errorf("Access-Control-Expose-Headers = %q, want Mcp-Session-Id exposed", got)
			}
		})
	}

	r := th.send(http.MethodOptions, "/mcp", "", "Origin", "http://localhost:5173",
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type, mcp-session-id")
	if r.status != http.StatusNoContent && r.status != http.StatusOK {
		t.Fatalf("preflight: %d, want 204", r.status)
	}
	if got := r.header.Get("Access-Control-Allow-Origin"); got != "http://localhost:5173" {
		t.Errorf("preflight Access-Control-Allow-Origin = %q", got)
	}
	for k, want := range map[string][]string{
		"Access-Control-Allow-Methods": {"GET", "POST", "DELETE"},
		"Access-Control-Allow-Headers": {"Content-Type", "Mcp-Session-Id", "MCP-Protocol-Version", "Last-Event-ID", "Authorization"},
	} {
		for _, w := range want {
			if !strings.Contains(strings.ToLower(r.header.Get(k)), strings.ToLower(w)) {
				t.Errorf("preflight %s = %q, lacks %s", k, r.header.Get(k), w)
			}
		}
	}
	if r := th.send(http.MethodOptions, "/mcp", "", "Origin", "http://evil.example.com"); r.status != http.StatusForbidden {
		t.Errorf("preflight from a foreign Origin: %d, want 403", r.status)
	}
}

func TestHTTPAuth(t *testing.T) {
	th := startHub(t, twoServers, nil, func(o *Options) { o.Token = "s3cret-token" })
	init := initReq("2025-06-18", `{}`)
	for name, auth := range map[string]string{"missing": "", "wrong": "Bearer nope", "not bearer": "Basic czNjcmV0LXRva2Vu",
		"token without scheme": "s3cret-token"} {
		r := th.send(http.MethodPost, "/mcp", init, "Authorization", auth)
		if r.status != http.StatusUnauthorized {
			t.Errorf("%s token: %d, want 401", name, r.status)
		}
		if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s token: WWW-Authenticate = %q, want a Bearer challenge", name, r.header.Get("WWW-Authenticate"))
		}
	}
	r := th.send(http.MethodPost, "/mcp", init, "Authorization", "Bearer s3cret-token")
	if r.status != http.StatusOK || r.header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("right token: %d %s", r.status, r.body)
	}
	sid := r.header.Get("Mcp-Session-Id")
	if r := th.send(http.MethodPost, "/mcp", ping, "Mcp-Session-Id", sid, "Authorization", "Bearer s3cret-token"); r.status != http.StatusOK {
		t.Errorf("ping with the token: %d, want 200", r.status)
	}
	// The auth scheme is a case-insensitive token (RFC 9110 §11.1).
	if r := th.send(http.MethodPost, "/mcp", ping, "Mcp-Session-Id", sid, "Authorization", "bearer s3cret-token"); r.status != http.StatusOK {
		t.Errorf("scheme written \"bearer\": %d, want 200", r.status)
	}
	if r := th.send(http.MethodPost, "/mcp", ping, "Mcp-Session-Id", sid); r.status != http.StatusUnauthorized {
		t.Errorf("a session id without the token: %d, want 401 (sessions are not authentication)", r.status)
	}
	// A browser preflight carries no credentials and must still be answered.
	if r := th.send(http.MethodOptions, "/mcp", "", "Origin", "http://localhost:5173", "Access-Control-Request-Method", "POST"); r.status >= 300 {
		t.Errorf("preflight with auth on: %d, want 2xx", r.status)
	}
}

func TestHTTPReadyz(t *testing.T) {
	fakes := map[string]*fakeUpstream{"alpha": newFake("alpha").setList("tools/list", toolItems("a", "b"))}
	th := startHub(t, twoServers, fakes)
	fakes["alpha"].setStatus(UpstreamStatus{State: api.StateRestarting, Transport: "stdio", LastError: "exit status 1", Restarts: 2})
	r := th.send(http.MethodGet, "/readyz", "")
	var st api.Status
	if err := json.Unmarshal(r.body, &st); err != nil || r.status != http.StatusOK {
		t.Fatalf("/readyz: %d %s (%v)", r.status, r.body, err)
	}
	if len(st.Servers) != 2 || st.Servers[0].Name != "alpha" {
		t.Fatalf("servers = %+v", st.Servers)
	}
	a := st.Servers[0]
	if a.State != api.StateRestarting || a.LastError != "exit status 1" || a.Restarts != 2 || a.Tools != 2 || a.Transport != "stdio" {
		t.Errorf("alpha = %+v, want the fake's status and 2 tools", a)
	}
}

func TestHTTPPaths(t *testing.T) {
	th := startHub(t, twoServers, nil)
	for path, status := range map[string]int{
		"/nope":           404,
		"/":               404,
		"/ghost/mcp":      404,
		"/alpha/other":    404,
		"/alpha/sse":      410,
		"/alpha/message":  410,
		"/alpha/messages": 410,
		"/healthz":        200,
	} {
		r := th.send(http.MethodGet, path, "")
		if r.status != status {
			t.Errorf("GET %s: %d %s, want %d", path, r.status, r.body, status)
		}
		if status == 410 && !strings.Contains(string(r.body), "/alpha/mcp") {
			t.Errorf("GET %s: 410 body %s does not point to /alpha/mcp", path, r.body)
		}
	}
	if r := th.send(http.MethodPost, "/alpha/message", ping); r.status != http.StatusGone {
		t.Errorf("POST /alpha/message: %d, want 410", r.status)
	}
}

// TestHTTPAcceptEndToEnd checks that the reply mode the matrix picks is
// what a POST gets, and that post_sse = false answers JSON whatever Accept.
func TestHTTPAcceptEndToEnd(t *testing.T) {
	for _, postSSE := range []bool{true, false} {
		th := startHub(t, fmt.Sprintf("[hub]\npost_sse = %v\n", postSSE)+twoServers, nil)
		c := th.connect("/mcp", "2025-06-18", `{}`)
		for _, tt := range []struct {
			accept     []string // one field line each
			call, list bool     // SSE wanted with post_sse on
		}{
			// Compliant, JSON first: the call's reply is lazy, and this
			// call's result (an unknown tool) comes at once, so JSON.
			{[]string{"application/json, text/event-stream"}, false, false},
			{[]string{"text/event-stream, application/json"}, true, true},
			{[]string{"application/json"}, false, false},
			{[]string{"*/*"}, false, false},
			{[]string{"text/event-stream"}, true, true},
			{[]string{""}, false, false},
			// One list split over two field lines means the same as the
			// joined list (RFC 9110 §5.3).
			{[]string{"application/json", "text/event-stream"}, false, false},
		} {
			for _, m := range []struct {
				method, body string
				sse          bool
			}{{"tools/call", rpc(1, "tools/call", `{"name":"beta_missing"}`), tt.call}, {"tools/list", rpc(2, "tools/list", ""), tt.list}} {
				kv := []string{"Accept", tt.accept[0]}
				for _, more := range tt.accept[1:] {
					kv = append(kv, "+Accept", more)
				}
				r := c.post(m.body, kv...)
				want := "application/json"
				if m.sse && postSSE {
					want = "text/event-stream"
				}
				if ct := r.header.Get("Content-Type"); r.status != http.StatusOK || ct != want {
					t.Errorf("post_sse=%v Accept %q, %s: %d %q, want 200 %q", postSSE, tt.accept, m.method, r.status, ct, want)
				}
			}
		}
	}
	// A GET whose Accept lists text/event-stream on a second line is a
	// valid GET.
	th := startHub(t, twoServers, nil)
	c := th.connect("/mcp", "2025-06-18", `{}`)
	r := th.send(http.MethodGet, "/mcp", "", "Mcp-Session-Id", c.sid, "Accept", "application/json", "+Accept", "text/event-stream",
		"MCP-Protocol-Version", "bogus") // answered before the stream opens
	if r.status == http.StatusNotAcceptable {
		t.Errorf("GET with Accept split over two lines: 406, want the Accept check passed")
	}
}

// answerWatch calls check before it writes a piece of the body that holds
// the answer (an SSE stream writes other events first): the moment the
// client could see it.
type answerWatch struct {
	*httptest.ResponseRecorder
	check func()
}

func (a *answerWatch) Write(b []byte) (int, error) {
	if strings.Contains(string(b), `"id":7`) {
		a.check()
	}
	return a.ResponseRecorder.Write(b)
}

// TestHTTPAnsweredIDIsFree: the server sends a reply as soon as it is
// written, before the handler returns, so by then its id must no longer
// count as in flight; a client may reuse it once it has the answer.
func TestHTTPAnsweredIDIsFree(t *testing.T) {
	th := startHub(t, twoServers, map[string]*fakeUpstream{"alpha": newFake("alpha").setList("tools/list", toolItems("echo"))})
	c := th.connect("/mcp", "2025-11-25", "{}")
	s := c.session()
	for _, accept := range []string{"application/json", "application/json, text/event-stream", "text/event-stream"} {
		for _, m := range []string{rpc(7, "ping", ""), rpc(7, "tools/call", `{"name":"alpha__echo","arguments":{}}`)} {
			req := th.request(context.Background(), http.MethodPost, "/mcp", m, "Mcp-Session-Id", c.sid, "Accept", accept)
			w := &answerWatch{ResponseRecorder: httptest.NewRecorder(), check: func() {
				s.mu.Lock()
				_, inFlight := s.calls["7"]
				s.mu.Unlock()
				if inFlight {
					t.Errorf("Accept %q, %s: id 7 is still in flight when its answer is written", accept, m)
				}
			}}
			th.h.ServeHTTP(w, req)
			if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"id":7`) {
				t.Fatalf("Accept %q, %s: %d %s", accept, m, w.Code, w.Body)
			}
		}
	}
}
