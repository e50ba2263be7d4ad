package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/hub"
	"github.com/mcphub/mcphub/hubclient"
)

// cliHub is a hub in this process over one upstream server, and the
// machine (goldenEnv) whose registry points the CLI at it; regKeys are more
// [hub] keys of that registry.
func cliHub(t *testing.T, cfg hubConfig, regKeys, name string, srv *mcp.Server) *goldenEnv {
	t.Helper()
	u := startUpstream(t, name, upstreamOpts{server: srv})
	servers := remoteServer(name, u.url, "")
	var token string
	if tweak := cfg.tweak; tweak != nil {
		cfg.tweak = func(o *hub.Options) {
			tweak(o)
			token = o.Token
		}
	}
	h := startInproc(t, servers, cfg)
	waitListed(t, h, token, name)
	return cliHubOver(t, h, regKeys, servers)
}

// waitListed waits until the merged view of h lists a tool of each server:
// the hub reports a server connected a moment before its tools are in the
// merged catalog. The session it lists them with is closed again.
func waitListed(t *testing.T, h *inprocHub, token string, servers ...string) {
	t.Helper()
	var hc *http.Client
	if token != "" {
		hc = &http.Client{Transport: bearer{token, http.DefaultTransport}}
	}
	s := connectSDK(t, h.url+"/mcp", sdkOpts{hc: hc})
	defer s.Close()
	eventually(t, 10*time.Second, fmt.Sprintf("the hub lists the tools of %v", servers), func() error {
		names, err := s.tools()
		if err != nil {
			return err
		}
		for _, server := range servers {
			if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, server+"__") }) {
				return fmt.Errorf("no tool of %s in %v", server, names)
			}
		}
		return nil
	})
}

// cliHubOver is the machine whose registry, of servers, points the CLI at h.
func cliHubOver(t *testing.T, h *inprocHub, regKeys, servers string) *goldenEnv {
	t.Helper()
	addr := strings.TrimPrefix(h.url, "http://")
	e := goldenNewEnv(t)
	e.addPort(addr)
	e.writeRegistry(t, fmt.Sprintf("[hub]\nlisten = %q\n%s\n\n%s", addr, regKeys, servers))
	return e
}

// cliRun runs mcphub on e's registry, with its own stdout and stderr.
func cliRun(e *goldenEnv, stdout, stderr io.Writer, args ...string) int {
	return run(append([]string{"--config", e.config, "--data-dir", e.dataDir}, args...), stdout, stderr)
}

// answerCall wraps a hub's handler so that it answers every tools/call on
// /mcp with body (given the request's id), as Content-Type ctype, and
// passes everything else on to the hub.
func answerCall(ctype string, body func(id string) string) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || r.URL.Path != "/mcp" {
				h.ServeHTTP(w, r)
				return
			}
			data, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(data, &m) != nil || m.Method != "tools/call" {
				r.Body = io.NopCloser(bytes.NewReader(data))
				h.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Content-Type", ctype)
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, body(string(m.ID)))
		})
	}
}

// TestToolsRawResult: tools call --json prints the result as the hub sent
// it, from an SSE body with CRLF lines, a notification and a comment before
// it, another id's response, and the message split over data lines; or
// from a JSON body.
func TestToolsRawResult(t *testing.T) {
	result := `{"content":[{"type":"text","text":"x"}],"zeta":1,"alpha":2.50}`
	var want bytes.Buffer
	json.Indent(&want, []byte(result), "", "  ")
	want.WriteByte('\n')
	for name, tc := range map[string]struct {
		ctype string
		body  func(id string) string
	}{
		"sse": {"text/event-stream", func(id string) string {
			return "event: message\r\nid: 1\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"other\",\"progress\":1}}\r\n\r\n" +
				": a comment\n\n" +
				"data: {\"jsonrpc\":\"2.0\",\"id\":999999,\"result\":{\"other\":true}}\n\n" +
				"data: {\"jsonrpc\":\"2.0\",\n" + "data: \"id\":" + id + ",\"result\":" + result + "}\n\n"
		}},
		"json": {"application/json", func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,"result":` + result + `}`
		}},
	} {
		t.Run(name, func(t *testing.T) {
			e := cliHub(t, hubConfig{wrap: answerCall(tc.ctype, tc.body)}, "", "ordered", orderedServer())
			var out, errOut bytes.Buffer
			if code := cliRun(e, &out, &errOut, "tools", "call", "ordered__shape", "--json"); code != 0 || out.String() != want.String() {
				t.Errorf("exit %d, stdout %q, stderr %q; want %q", code, out.String(), errOut.String(), want.String())
			}
		})
	}
}

// TestToolsMessageLimit: a message of the hub over 16 MiB fails the
// command with a sentence, in an SSE event or a JSON body, and is not
// printed.
func TestToolsMessageLimit(t *testing.T) {
	if hubclient.MessageLimit != 16<<20 {
		t.Errorf("the CLI takes messages up to %d bytes, want 16 MiB", hubclient.MessageLimit)
	}
	big := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", hubclient.MessageLimit) + `"}]}}`
	}
	for name, tc := range map[string]struct {
		ctype string
		body  func(id string) string
	}{
		"sse":  {"text/event-stream", func(id string) string { return "data: " + big(id) + "\n\n" }},
		"json": {"application/json", big},
	} {
		t.Run(name, func(t *testing.T) {
			e := cliHub(t, hubConfig{wrap: answerCall(tc.ctype, tc.body)}, "", "ordered", orderedServer())
			var out, errOut bytes.Buffer
			code := cliRun(e, &out, &errOut, "tools", "call", "ordered__shape")
			want := fmt.Sprintf("response over %d bytes", hubclient.MessageLimit)
			if code != 1 || out.Len() != 0 || !strings.HasPrefix(errOut.String(), "mcphub: call ordered__shape: ") || !strings.Contains(errOut.String(), want) {
				t.Errorf("exit %d, stdout of %d bytes, stderr %q; want exit 1 and %q", code, out.Len(), errOut.String(), want)
			}
		})
	}
}

// orderedServer has a tool whose input schema and structured result list
// their keys out of alphabetical order, as a server may send them.
func orderedServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "ordered", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	s.AddTool(&mcp.Tool{Name: "shape", Description: "Keys out of order.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"number"}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "shaped"}},
				StructuredContent: json.RawMessage(`{"zeta":"last","alpha":"first","n":1.50}`)}, nil
		})
	return s
}

// TestToolsJSONAsSent: --json prints what the hub sent, not the SDK's
// decoding of it encoded again: keys keep their order, numbers their
// spelling, structuredContent is there.
func TestToolsJSONAsSent(t *testing.T) {
	e := cliHub(t, hubConfig{}, "", "ordered", orderedServer())
	var out, errOut bytes.Buffer
	if code := cliRun(e, &out, &errOut, "tools", "ls", "--json"); code != 0 {
		t.Fatalf("tools ls --json: exit %d: %s", code, errOut.String())
	}
	ls := out.String()
	if z, a := strings.Index(ls, `"zeta"`), strings.Index(ls, `"alpha"`); z < 0 || a < z {
		t.Errorf("tools ls --json reordered the input schema:\n%s", ls)
	}
	if !strings.Contains(ls, `"name": "ordered__shape"`) {
		t.Errorf("tools ls --json lacks the namespaced name:\n%s", ls)
	}
	out.Reset()
	if code := cliRun(e, &out, &errOut, "tools", "call", "ordered__shape", "--json"); code != 0 {
		t.Fatalf("tools call --json: exit %d: %s", code, errOut.String())
	}
	call := out.String()
	if !strings.Contains(call, `"structuredContent": {`) || !strings.Contains(call, `"n": 1.50`) {
		t.Errorf("tools call --json does not show the structured content as sent:\n%s", call)
	}
	if z, a := strings.Index(call, `"zeta"`), strings.Index(call, `"alpha"`); z < 0 || a < z {
		t.Errorf("tools call --json reordered the structured content:\n%s", call)
	}
	out.Reset()
	if code := cliRun(e, &out, &errOut, "tools", "call", "ordered__shape"); code != 0 || out.String() != "shaped\n" {
		t.Errorf("tools call without --json: exit %d, stdout %q; want only the text", code, out.String())
	}
}

// stepServer's tool "step" reports progress 1 of 2, then waits for release
// (or its cancellation, which it reports on cancelled); "hold" only waits.
type stepServer struct {
	srv       *mcp.Server
	started   chan struct{} // closed when hold runs
	release   chan struct{}
	cancelled chan struct{} // closed when hold's call was cancelled
}

func newStepServer() *stepServer {
	s := &stepServer{started: make(chan struct{}), release: make(chan struct{}), cancelled: make(chan struct{})}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "steps", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	type none struct{}
	mcp.AddTool(s.srv, &mcp.Tool{Name: "step"}, func(ctx context.Context, req *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half way"})
		}
		select {
		case <-s.release:
			return textResult("finished"), nil, nil
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	})
	mcp.AddTool(s.srv, &mcp.Tool{Name: "hold"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		close(s.started)
		select {
		case <-s.release:
			return textResult("released"), nil, nil
		case <-ctx.Done():
			close(s.cancelled)
			return nil, nil, ctx.Err()
		}
	})
	return s
}

// runAsync runs mcphub in the background; the channel gets its exit code.
func runAsync(e *goldenEnv, stdout, stderr io.Writer, args ...string) <-chan int {
	done := make(chan int, 1)
	go func() { done <- cliRun(e, stdout, stderr, args...) }()
	return done
}

// waitExit waits for a background run's exit code.
func waitExit(t *testing.T, done <-chan int, within time.Duration) int {
	t.Helper()
	select {
	case code := <-done:
		return code
	case <-time.After(within):
		t.Fatalf("mcphub did not exit within %s", within)
		return -1
	}
}

// TestToolsCallProgressOnTerminal: on a terminal the call's progress shows
// on stderr as one line rewritten in place, gone before the result prints.
func TestToolsCallProgressOnTerminal(t *testing.T) {
	steps := newStepServer()
	e := cliHub(t, hubConfig{}, "", "steps", steps.srv)
	orig := isTerminal
	isTerminal = func(io.Writer) bool { return true }
	t.Cleanup(func() { isTerminal = orig })
	stdout, stderr := &logBuffer{}, &logBuffer{}
	done := runAsync(e, stdout, stderr, "tools", "call", "steps__step")
	line := "\r\x1b[Kprogress 1/2 (50%) half way"
	eventually(t, 10*time.Second, "the progress line on stderr", func() error {
		if !strings.Contains(stderr.String(), line) {
			return fmt.Errorf("stderr is %q", stderr.String())
		}
		return nil
	})
	close(steps.release)
	if code := waitExit(t, done, 10*time.Second); code != 0 {
		t.Fatalf("exit %d; stderr %q", code, stderr.String())
	}
	if got := stderr.String(); got != line+"\r\x1b[K" {
		t.Errorf("stderr %q, want the progress line then its removal", got)
	}
	if got := stdout.String(); got != "finished\n" {
		t.Errorf("stdout %q, want the result", got)
	}
}

// TestToolsCallInterrupt: Ctrl-C during a call, or SIGTERM, or SIGHUP,
// cancels it on the server (through the hub) and exits 130.
func TestToolsCallInterrupt(t *testing.T) {
	self, err := os.FindProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			steps := newStepServer()
			e := cliHub(t, hubConfig{}, "", "steps", steps.srv)
			stdout, stderr := &logBuffer{}, &logBuffer{}
			done := runAsync(e, stdout, stderr, "tools", "call", "steps__hold")
			select {
			case <-steps.started:
			case <-time.After(10 * time.Second):
				t.Fatal("the call did not reach the server")
			}
			// The call is in flight, so the command is the one catching the signal.
			if err := self.Signal(sig); err != nil {
				close(steps.release)
				waitExit(t, done, 10*time.Second)
				t.Skipf("cannot signal this process: %v", err)
			}
			if code := waitExit(t, done, 10*time.Second); code != 130 {
				t.Errorf("exit %d after %s, want 130; stderr %q", code, sig, stderr.String())
			}
			select {
			case <-steps.cancelled:
			case <-time.After(10 * time.Second):
				t.Error("the server's call was not cancelled")
			}
			if stderr.String() != "mcphub: interrupted; the request was cancelled\n" || stdout.String() != "" {
				t.Errorf("stdout %q, stderr %q; want only a note that the request was cancelled", stdout.String(), stderr.String())
			}
		})
	}
}

// TestToolsToken: with auth on, the commands send the hub's token; a
// missing or wrong one is a sentence that says what to set, and the token is
// never printed.
func TestToolsToken(t *testing.T) {
	const token = "tools-cli-secret-token"
	e := cliHub(t, hubConfig{tweak: func(o *hub.Options) { o.Token = token }},
		"auth = \"token\"\ntoken_env = \"MCPHUB_TOKEN\"", "ordered", orderedServer())
	for _, tc := range []struct {
		name, env, want string
		code            int
	}{
		{"the token", token, "ordered__shape", 0},
		{"no token", "", "wants a token, and the registry gives none", 1},
		{"a wrong token", token + "x", "refused the registry's", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("MCPHUB_TOKEN", tc.env)
			var out, errOut bytes.Buffer
			code := cliRun(e, &out, &errOut, "tools", "ls")
			if code != tc.code || !strings.Contains(out.String()+errOut.String(), tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, out.String(), errOut.String(), tc.code, tc.want)
			}
			if strings.Contains(out.String()+errOut.String(), token) {
				t.Errorf("the output shows the token")
			}
		})
	}
}

// TestPromptsAndResourcesErrors: an unknown server, a disabled one, an
// unknown prompt or resource and a malformed argument are sentences that say
// what exists or what to type; none shows a body.
func TestPromptsAndResourcesErrors(t *testing.T) {
	u := startUpstream(t, "ordered", upstreamOpts{server: orderedServer()})
	servers := remoteServer("ordered", u.url, "") + remoteServer("off", u.url, "enabled = false")
	h := startInproc(t, servers, hubConfig{noWait: true})
	if !poll(10*time.Second, func() bool {
		st := h.h.Status()
		s := findServer(&st, "ordered")
		return s != nil && s.State == api.StateConnected
	}) {
		t.Fatalf("ordered did not connect: %+v", h.h.Status().Servers)
	}
	waitListed(t, h, "", "ordered")
	e := cliHubOver(t, h, "", servers)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"prompts", "ls", "nope"}, `mcphub: no server "nope" in the hub; known: ordered` + "\n"},
		{[]string{"resources", "ls", "nope"}, `mcphub: no server "nope" in the hub; known: ordered` + "\n"},
		{[]string{"tools", "ls", "off"}, `mcphub: server "off" is disabled; enable it with: mcphub enable off` + "\n"},
		{[]string{"prompts", "get", "shape"}, `mcphub: no prompt "shape" on the hub; it serves no prompts (run "mcphub status" to see its servers)` + "\n"},
		{[]string{"resources", "read", "test://none"}, `mcphub: read test://none: Resource not found: no server offers test://none; the hub serves no resources (run "mcphub status" to see its servers)` + "\n"},
		{[]string{"tools", "call", "ordered__shape", "novalue"}, `mcphub: argument "novalue" is not key=value; pass arguments as key=value pairs, such as path=/tmp` + "\n"},
		{[]string{"tools", "call", "ordered__shape", "--args", "[1]"}, `mcphub: --args must be one JSON object, such as --args '{"path": "/tmp"}'` + "\n"},
		{[]string{"tools", "call", "ordered__shape", "zeta=1", "zeta=2"}, "mcphub: argument zeta is given twice; give each argument once\n"},
		{[]string{"tools", "call", "ordered__shape", "alpha=abc"}, "mcphub: alpha must be a number, got abc\n"},
		{[]string{"tools", "call", "shape", "alpha=1"}, `mcphub: no tool "shape" on the hub (did you mean ordered__shape?); run "mcphub tools ls" to see the 1 tool it serves` + "\n"},
		{[]string{"prompts", "get", "shape", "a=1", "a=2"}, "mcphub: argument a is given twice; give each argument once\n"},
	} {
		var out, errOut bytes.Buffer
		code := cliRun(e, &out, &errOut, tc.args...)
		if code != 1 || errOut.String() != tc.want || out.Len() != 0 {
			t.Errorf("mcphub %s: exit %d, stdout %q, stderr %q; want exit 1 and %q", strings.Join(tc.args, " "), code, out.String(), errOut.String(), tc.want)
		}
	}
}

// TestToolsCallProgressWithoutVirtualTerminal: a terminal that cannot act
// on escape sequences (a legacy Windows console) gets no progress line.
func TestToolsCallProgressWithoutVirtualTerminal(t *testing.T) {
	steps := newStepServer()
	close(steps.release)
	e := cliHub(t, hubConfig{}, "", "steps", steps.srv)
	origTerm, origVT := isTerminal, virtualTerminal
	isTerminal = func(io.Writer) bool { return true }
	virtualTerminal = func(io.Writer) bool { return false }
	t.Cleanup(func() { isTerminal, virtualTerminal = origTerm, origVT })
	var out, errOut bytes.Buffer
	if code := cliRun(e, &out, &errOut, "tools", "call", "steps__step"); code != 0 || out.String() != "finished\n" || errOut.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q; want the result and no progress line", code, out.String(), errOut.String())
	}
}

// TestToolsTransportFailures: when the hub refuses a request at the HTTP
// level, or the connection to it fails, the command says why and what to
// do, never just "rejected by transport".
func TestToolsTransportFailures(t *testing.T) {
	t.Run("session cap", func(t *testing.T) {
		steps := newStepServer()
		e := cliHub(t, hubConfig{hubKeys: "max_sessions = 1"}, "", "steps", steps.srv)
		done := runAsync(e, &logBuffer{}, &logBuffer{}, "tools", "call", "steps__hold")
		select {
		case <-steps.started:
		case <-time.After(10 * time.Second):
			t.Fatal("the call did not reach the server")
		}
		var out, errOut bytes.Buffer
		code := cliRun(e, &out, &errOut, "tools", "ls")
		close(steps.release)
		if c := waitExit(t, done, 10*time.Second); c != 0 {
			t.Errorf("the call holding the one session exited %d", c)
		}
		if code != 1 || !strings.Contains(errOut.String(), "its cap ([hub] max_sessions = 1)") || strings.Contains(errOut.String(), "rejected by transport") {
			t.Errorf("a hub at its session cap: exit %d, stderr %q; want exit 1 and the hub's reason", code, errOut.String())
		}
	})
	t.Run("body limit", func(t *testing.T) {
		e := cliHub(t, hubConfig{hubKeys: "max_body_bytes = 100000"}, "", "ordered", orderedServer())
		var out, errOut bytes.Buffer
		code := cliRun(e, &out, &errOut, "tools", "call", "ordered__shape", "zeta="+strings.Repeat("x", 200000))
		want := "mcphub: call ordered__shape: the hub refused: Request Entity Too Large: bodies are limited to 100000 bytes ([hub] max_body_bytes)\n"
		if code != 1 || errOut.String() != want {
			t.Errorf("a body over the hub's limit: exit %d, stderr %q; want exit 1 and %q", code, errOut.String(), want)
		}
	})
	t.Run("another certificate", func(t *testing.T) {
		home := freshHome(t)
		var hits atomic.Int32
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
		}))
		defer srv.Close()
		useTLSRegistry(t, home, srv.Listener.Addr().String())
		code, out, errOut := runCLI(t, "tools", "ls")
		if code != 1 || !strings.Contains(errOut, "did not present the hub's tls_cert") || !strings.Contains(errOut, "[hub] tls_cert must be") ||
			strings.Contains(errOut, "rejected by transport") {
			t.Errorf("a server with another certificate: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		if n := hits.Load(); n != 0 {
			t.Errorf("%d requests reached a server that did not present tls_cert", n)
		}
	})
}

// TestToolsRedirect: a redirect at the hub's address is not followed but
// reported, and the token goes to the hub's endpoint only.
func TestToolsRedirect(t *testing.T) {
	const token = "tools-redirect-secret-token"
	var mu sync.Mutex
	var seen []string // the Authorization headers the other host received
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer other.Close()
	var redirecting atomic.Bool // once the hub is ready
	redirect := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if redirecting.Load() && r.URL.Path == "/mcp" {
				http.Redirect(w, r, other.URL+"/mcp?key=secret", http.StatusTemporaryRedirect)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	e := cliHub(t, hubConfig{wrap: redirect, tweak: func(o *hub.Options) { o.Token = token }},
		"auth = \"token\"\ntoken_env = \"MCPHUB_TOKEN\"", "ordered", orderedServer())
	redirecting.Store(true)
	t.Setenv("MCPHUB_TOKEN", token)
	var out, errOut bytes.Buffer
	code := cliRun(e, &out, &errOut, "tools", "ls")
	want := ", a redirect to " + other.URL + "; mcphub never redirects, so something else answers there"
	if code != 1 || !strings.Contains(errOut.String(), want) || strings.Contains(errOut.String(), "secret") {
		t.Errorf("a redirect: exit %d, stderr %q; want exit 1 and %q, without the target's path", code, errOut.String(), want)
	}
	mu.Lock()
	for _, h := range seen {
		if strings.Contains(h, token) {
			t.Errorf("the token was sent to the redirect's target")
		}
	}
	mu.Unlock()

}

// TestToolsServerNotConnected: a server's own endpoint is refused with the
// server's state and last error when it is not connected, after waiting
// for one that is starting; the merged view notes what it lacks.
func TestToolsServerNotConnected(t *testing.T) {
	u := startUpstream(t, "ordered", upstreamOpts{server: orderedServer()})
	servers := remoteServer("ordered", u.url, "") + remoteServer("bad", "http://"+closedAddr(t)+"/mcp", "")
	h := startInproc(t, servers, hubConfig{noWait: true})
	var bad *api.ServerStatus
	if !poll(15*time.Second, func() bool {
		st := h.h.Status()
		ok, b := findServer(&st, "ordered"), findServer(&st, "bad")
		bad = b
		return ok != nil && ok.State == api.StateConnected && b != nil && b.State != api.StateStarting && b.State != api.StateConnected
	}) {
		t.Fatalf("ordered did not connect, or bad did not fail: %+v", h.h.Status().Servers)
	}
	waitListed(t, h, "", "ordered")
	e := cliHubOver(t, h, "", servers)
	var out, errOut bytes.Buffer
	code := cliRun(e, &out, &errOut, "tools", "ls", "bad")
	if code != 1 || !strings.HasPrefix(errOut.String(), "mcphub: server bad is ") ||
		!strings.HasSuffix(errOut.String(), "; see mcphub status or mcphub logs bad\n") || out.Len() != 0 {
		t.Errorf("tools ls bad (%s): exit %d, stdout %q, stderr %q; want exit 1 and the server's state", bad.State, code, out.String(), errOut.String())
	}
	for _, kind := range []string{"tools", "prompts", "resources"} {
		out.Reset()
		errOut.Reset()
		code = cliRun(e, &out, &errOut, kind, "ls")
		if code != 0 || !strings.Contains(errOut.String(), "note: server bad is ") || !strings.Contains(errOut.String(), "so its "+kind+" are missing") {
			t.Errorf("%s ls: exit %d, stderr %q; want a note that bad's %s are missing", kind, code, errOut.String(), kind)
		}
	}
	if !strings.Contains(out.String(), "0 resources") {
		t.Errorf("resources ls: stdout %q", out.String())
	}

	// A server the hub is still starting is waited for.
	var asked atomic.Int32
	st := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		s := api.ServerStatus{Name: "slow", State: api.StateStarting}
		if asked.Add(1) >= 3 {
			s.State, s.LastError = api.StateFailed, "connect: the server said no\n  at line 2"
		}
		json.NewEncoder(w).Encode(api.Status{Version: "test", Servers: []api.ServerStatus{s}})
	}))
	defer st.Close()
	e = goldenNewEnv(t)
	e.writeRegistry(t, fmt.Sprintf("[hub]\nlisten = %q\n", strings.TrimPrefix(st.URL, "http://")))
	out.Reset()
	errOut.Reset()
	code = cliRun(e, &out, &errOut, "tools", "ls", "slow")
	want := "mcphub: server slow is failed: connect: the server said no at line 2; see mcphub status or mcphub logs slow\n"
	if code != 1 || errOut.String() != want || asked.Load() < 3 {
		t.Errorf("a starting server that fails: exit %d after %d status requests, stderr %q; want %q", code, asked.Load(), errOut.String(), want)
	}
}

// resultsServer has tools whose results lack text: structured content
// only, an error without content, and an embedded text resource.
func resultsServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "results", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	schema := json.RawMessage(`{"type":"object"}`)
	s.AddTool(&mcp.Tool{Name: "structured", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"zeta":"last","alpha":"first","n":1.50}`)}, nil
	})
	s.AddTool(&mcp.Tool{Name: "silent", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true}, nil
	})
	s.AddTool(&mcp.Tool{Name: "embedded", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "notes://today", MIMEType: "text/plain", Text: "the embedded text"}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "notes://logo", MIMEType: "image/png", Blob: []byte{1, 2, 3}}},
		}}, nil
	})
	return s
}

// TestToolsResults: a result without text still prints something: its
// structured content as the hub sent it, an error's sentence, an embedded
// resource's text.
func TestToolsResults(t *testing.T) {
	e := cliHub(t, hubConfig{}, "", "results", resultsServer())
	for _, tc := range []struct {
		tool           string
		code           int
		stdout, stderr string
	}{
		{"results__structured", 0, "{\n  \"zeta\": \"last\",\n  \"alpha\": \"first\",\n  \"n\": 1.50\n}\n", ""},
		{"results__silent", 1, "", "mcphub: results__silent reported an error without a message\n"},
		{"results__embedded", 0, "the embedded text\n[notes://logo image/png, 3 bytes]\n", ""},
	} {
		var out, errOut bytes.Buffer
		code := cliRun(e, &out, &errOut, "tools", "call", tc.tool)
		if code != tc.code || out.String() != tc.stdout || errOut.String() != tc.stderr {
			t.Errorf("tools call %s: exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr %q",
				tc.tool, code, out.String(), errOut.String(), tc.code, tc.stdout, tc.stderr)
		}
	}
}

// TestToolsCallInterruptHungHub: Ctrl-C with a hub that no longer answers
// exits within the cancellation's budget, says the hub did not confirm the
// cancellation, and with --json prints it as the error object.
func TestToolsCallInterruptHungHub(t *testing.T) {
	self, err := os.FindProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	orig := cliCancelNotifyWait
	cliCancelNotifyWait = 300 * time.Millisecond
	t.Cleanup(func() { cliCancelNotifyWait = orig })
	steps := newStepServer()
	var hung atomic.Bool
	unhang := make(chan struct{})
	hang := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if hung.Load() {
				select {
				case <-unhang:
				case <-r.Context().Done():
				}
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	e := cliHub(t, hubConfig{wrap: hang}, "", "steps", steps.srv)
	t.Cleanup(func() {
		close(unhang)
		close(steps.release)
	})
	stdout, stderr := &logBuffer{}, &logBuffer{}
	done := runAsync(e, stdout, stderr, "tools", "call", "steps__hold", "--json")
	select {
	case <-steps.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not reach the server")
	}
	hung.Store(true)
	if err := self.Signal(os.Interrupt); err != nil {
		hung.Store(false)
		t.Skipf("cannot interrupt this process: %v", err)
	}
	start := time.Now()
	code := waitExit(t, done, 20*time.Second)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the interrupted command took %s to exit with the hub hung; want about %s", took, cliCancelNotifyWait)
	}
	const why = "interrupted; the hub did not confirm the cancellation"
	if code != 130 || stderr.String() != "mcphub: "+why+"\n" {
		t.Errorf("exit %d, stderr %q; want 130 and %q", code, stderr.String(), why)
	}
	var answer struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(stdout.String()), &answer); err != nil || answer.Error != why {
		t.Errorf("--json stdout %q; want {\"error\": %q}", stdout.String(), why)
	}
}
