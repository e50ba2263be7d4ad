package hub

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// edgeRegistry has two enabled servers, a disabled one and an extra allowed
// origin.
const edgeRegistry = `
[hub]
allowed_origins = ["https://app.example.com"]
` + twoServers + `
[servers.gamma]
command = "gamma-server"
enabled = false
`

// TestEdgeRoutes sends one request per case through the edge and checks the
// status, the JSON-RPC error a refusal carries, and the headers that go with
// it. "open" is a serving hub, "closed" one that has begun to close, and
// "token" one that requires a bearer token.
func TestEdgeRoutes(t *testing.T) {
	hubs := map[string]*testHub{
		"open":   startHub(t, edgeRegistry, nil),
		"closed": startHub(t, edgeRegistry, nil),
		"token":  startHub(t, edgeRegistry, nil, func(o *Options) { o.Token = "s3cret" }),
	}
	hubs["closed"].h.Close()
	const (
		needSession = "Mcp-Session-Id header is required"
		merged      = "the merged endpoint is /mcp"
	)
	for _, tc := range []struct {
		name   string
		hub    string
		method string
		path   string
		host   string
		header map[string]string
		status int
		code   int    // the JSON-RPC error code of the body; 0 for a body that is no error
		msg    string // a fragment of the error message
		want   map[string]string
	}{
		// The endpoints, reached: a POST without a session is the
		// endpoint's own refusal.
		{name: "/mcp", path: "/mcp", status: 400, code: -32000, msg: needSession},
		{name: "/mcp/", path: "/mcp/", status: 400, code: -32000, msg: needSession},
		{name: "/alpha/mcp", path: "/alpha/mcp", status: 400, code: -32000, msg: needSession},
		{name: "/alpha/mcp/", path: "/alpha/mcp/", status: 400, code: -32000, msg: needSession},
		{name: "/beta/mcp", path: "/beta/mcp", status: 400, code: -32000, msg: needSession},
		{name: "GET /mcp without a session", method: "GET", path: "/mcp", header: map[string]string{"Accept": "text/event-stream"},
			status: 400, code: -32000, msg: needSession},
		{name: "DELETE /alpha/mcp without a session", method: "DELETE", path: "/alpha/mcp", status: 400, code: -32000, msg: needSession},

		// Paths that name no endpoint.
		{name: "unknown server", path: "/ghost/mcp", status: 404, code: -32001, msg: merged},
		{name: "disabled server", path: "/gamma/mcp", status: 404, code: -32001, msg: merged},
		{name: "unknown server's legacy route", method: "GET", path: "/ghost/sse", status: 404, code: -32001, msg: merged},
		{name: "another path of a server", method: "GET", path: "/alpha/other", status: 404, code: -32001, msg: "use /alpha/mcp"},
		{name: "below a server's endpoint", path: "/alpha/mcp/x", status: 404, code: -32001, msg: "use /alpha/mcp"},
		{name: "double slash", path: "//mcp", status: 404, code: -32001, msg: merged},
		{name: "dot segments", path: "/alpha/../mcp", status: 404, code: -32001, msg: "no such endpoint"},
		{name: "below /mcp", path: "/mcp/x", status: 404, code: -32001, msg: merged},
		{name: "root", method: "GET", path: "/", status: 404, code: -32001, msg: merged},

		// The retired HTTP+SSE transport.
		{name: "GET /alpha/sse", method: "GET", path: "/alpha/sse", status: 410, code: -32000, msg: "use /alpha/mcp"},
		{name: "POST /alpha/message", path: "/alpha/message", status: 410, code: -32000, msg: "use /alpha/mcp"},
		{name: "POST /beta/messages", path: "/beta/messages", status: 410, code: -32000, msg: "use /beta/mcp"},
		{name: "GET /alpha/sse/", method: "GET", path: "/alpha/sse/", status: 410, code: -32000, msg: "use /alpha/mcp"},

		{name: "PUT /mcp", method: "PUT", path: "/mcp", status: 405, code: -32000, msg: "method not allowed",
			want: map[string]string{"Allow": "GET, POST, DELETE"}},

		// Health and control.
		{name: "healthz", method: "GET", path: "/healthz", status: 200, want: map[string]string{"Content-Type": "application/json"}},
		{name: "readyz", method: "GET", path: "/readyz", status: 200, want: map[string]string{"Content-Type": "application/json"}},
		{name: "readyz while closing", hub: "closed", method: "GET", path: "/readyz", status: 503},
		{name: "GET /control/restart", method: "GET", path: "/control/restart?server=alpha", status: 405, code: -32000,
			msg: "use POST", want: map[string]string{"Allow": "POST"}},
		{name: "restart an unknown server", path: "/control/restart?server=ghost", status: 404, code: -32001, msg: `"ghost" is not an enabled server`},
		{name: "restart a disabled server", path: "/control/restart?server=gamma", status: 404, code: -32001, msg: "unknown server"},

		// Host, Origin and CORS.
		{name: "preflight from a loopback origin", method: "OPTIONS", path: "/mcp",
			header: map[string]string{"Origin": "http://localhost:5173", "Access-Control-Request-Method": "POST"}, status: 204,
			want: map[string]string{"Access-Control-Allow-Origin": "http://localhost:5173", "Access-Control-Allow-Methods": "POST",
				"Access-Control-Allow-Headers": "Mcp-Session-Id", "Access-Control-Max-Age": "600"}},
		{name: "preflight from allowed_origins", method: "OPTIONS", path: "/alpha/mcp",
			header: map[string]string{"Origin": "https://app.example.com"}, status: 204,
			want: map[string]string{"Access-Control-Allow-Origin": "https://app.example.com", "Access-Control-Allow-Headers": "Last-Event-ID"}},
		{name: "preflight from a foreign origin", method: "OPTIONS", path: "/mcp",
			header: map[string]string{"Origin": "http://evil.example.com"}, status: 403, code: -32000, msg: "invalid Origin"},
		{name: "POST from an allowed origin", path: "/mcp", header: map[string]string{"Origin": "https://app.example.com"},
			status: 400, code: -32000, msg: needSession,
			want: map[string]string{"Access-Control-Allow-Origin": "https://app.example.com", "Access-Control-Expose-Headers": "Mcp-Session-Id"}},
		{name: "POST from a foreign origin", path: "/mcp", header: map[string]string{"Origin": "https://other.example.com"},
			status: 403, code: -32000, msg: "invalid Origin"},
		{name: "foreign origin on health", method: "GET", path: "/healthz", header: map[string]string{"Origin": "http://evil.example.com"},
			status: 403, code: -32000, msg: "invalid Origin"},
		{name: "non-loopback Host", path: "/mcp", host: "evil.example.com", status: 403, code: -32000, msg: "invalid Host"},
		{name: "non-loopback Host with a port", method: "GET", path: "/healthz", host: "evil.example.com:7733", status: 403, code: -32000, msg: "invalid Host"},
		{name: "localhost Host", path: "/mcp", host: "localhost:7733", status: 400, code: -32000, msg: needSession},
		{name: "IPv6 loopback Host", path: "/mcp", host: "[::1]:7733", status: 400, code: -32000, msg: needSession},

		// The bearer token.
		{name: "no token", hub: "token", path: "/mcp", status: 401, code: -32000, msg: "Unauthorized",
			want: map[string]string{"WWW-Authenticate": `Bearer realm="mcphub"`}},
		{name: "wrong token", hub: "token", path: "/mcp", header: map[string]string{"Authorization": "Bearer nope"}, status: 401,
			code: -32000, msg: "Unauthorized", want: map[string]string{"WWW-Authenticate": "Bearer"}},
		{name: "token without its scheme", hub: "token", path: "/mcp", header: map[string]string{"Authorization": "s3cret"}, status: 401,
			code: -32000, msg: "Unauthorized", want: map[string]string{"WWW-Authenticate": "Bearer"}},
		{name: "no token on health", hub: "token", method: "GET", path: "/healthz", status: 401, code: -32000, msg: "Unauthorized"},
		{name: "right token", hub: "token", path: "/mcp", header: map[string]string{"Authorization": "Bearer s3cret"},
			status: 400, code: -32000, msg: needSession},
		{name: "right token, scheme in lower case", hub: "token", path: "/alpha/mcp", header: map[string]string{"Authorization": "bearer s3cret"},
			status: 400, code: -32000, msg: needSession},
		{name: "right token on health", hub: "token", method: "GET", path: "/healthz", header: map[string]string{"Authorization": "Bearer s3cret"}, status: 200},
		{name: "preflight needs no token", hub: "token", method: "OPTIONS", path: "/mcp", header: map[string]string{"Origin": "http://127.0.0.1:5173"},
			status: 204, want: map[string]string{"Access-Control-Allow-Origin": "http://127.0.0.1:5173"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hub, method := tc.hub, tc.method
			if hub == "" {
				hub = "open"
			}
			if method == "" {
				method = http.MethodPost
			}
			body := ""
			if method == http.MethodPost {
				body = ping
			}
			rec := hubs[hub].serve(method, tc.path, tc.host, body, tc.header)
			r := reply{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
			if r.status != tc.status {
				t.Fatalf("%s %s: %d %s, want %d", method, tc.path, r.status, r.body, tc.status)
			}
			if tc.code != 0 {
				if e := rpcErr(t, r, tc.code, "null"); !strings.Contains(e.Message, tc.msg) {
					t.Errorf("error message %q lacks %q", e.Message, tc.msg)
				}
			}
			for k, want := range tc.want {
				if got := r.header.Get(k); !strings.Contains(got, want) {
					t.Errorf("%s = %q, want it to contain %q", k, got, want)
				}
			}
		})
	}
}

// failingFlusher is a writer whose client has gone: every flush fails.
type failingFlusher struct{ http.ResponseWriter }

func (failingFlusher) FlushError() error { return errors.New("the client has gone") }

// TestStatusRecorderReportsAFailedFlush checks that the POST audit wrapper
// passes a failed flush on: a stream served through it must stop at the
// event that could not be sent.
func TestStatusRecorderReportsAFailedFlush(t *testing.T) {
	rec := &statusRecorder{ResponseWriter: failingFlusher{httptest.NewRecorder()}}
	if err := flush(rec); err == nil {
		t.Error("a flush through statusRecorder reported success though the client has gone")
	}
}

// /control/env tells which variables the hub's environment lacks, never a
// value; like every control route it needs the token when auth is on.
func TestControlEnv(t *testing.T) {
	t.Setenv("MCPHUB_TEST_SET_VAR", "value-never-sent")
	th := startHub(t, "[servers.alpha]\ncommand = \"x\"\n", nil)
	r := th.send("GET", "/control/env?name=MCPHUB_TEST_SET_VAR&name=MCPHUB_TEST_UNSET_VAR", "")
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var ans struct {
		Unset []string `json:"unset"`
		PID   int      `json:"pid"`
	}
	if err := json.Unmarshal(r.body, &ans); err != nil {
		t.Fatal(err)
	}
	if len(ans.Unset) != 1 || ans.Unset[0] != "MCPHUB_TEST_UNSET_VAR" || ans.PID != os.Getpid() {
		t.Errorf("answer %s", r.body)
	}
	if strings.Contains(string(r.body), "value-never-sent") {
		t.Error("the answer holds a value")
	}
	if r := th.send("POST", "/control/env?name=A", ""); r.status != 405 {
		t.Errorf("POST: status %d", r.status)
	}
}
