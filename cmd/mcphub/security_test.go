package main

// Security tests against a real `mcphub serve` process: no stdio child
// outlives the hub, whatever signal ends it; a child sees only PATH, HOME
// and its registry env; registry secrets, header values, URL query secrets
// and the bearer token never reach a log or a command's output; and the HTTP
// server's slowloris and header-size limits hold. The orphan test, which
// sends Unix signals, is in security_unix_test.go. The children are the
// harness's fake (childServer).

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/api"
)

// The secrets of TestSecuritySecretsNeverLogged and TestSecurityAuthToken:
// distinctive, so that a leak cannot hide behind a common word.
const (
	secEnvSecret   = "s3cr3t-ENV-7f3a9c1e5b"
	secQuerySecret = "s3cr3t-QUERY-c0ffee42"
	secToken       = "s3cr3t-TOKEN-9d8e7f6a5b4c"
)

// secQueryValue finds every value written after key= in a URL query.
var secQueryValue = regexp.MustCompile(`key=([^&"\s\\,):]*)`)

// secSettled accepts a status in which each named server is in a settled
// state its check accepts.
func secSettled(want map[string]func(api.ServerStatus) bool) func(*api.Status) error {
	return func(st *api.Status) error {
		for name, ok := range want {
			if s := findServer(st, name); s == nil || !ok(*s) {
				return fmt.Errorf("server %s has not settled", name)
			}
		}
		return nil
	}
}

// secConnected accepts a stdio server that is connected, with its PID.
func secConnected(s api.ServerStatus) bool { return s.State == api.StateConnected && s.PID > 0 }

// secCommands runs each mcphub command against the hub with extra env and
// records its output (stdout, then stderr) under "mcphub ARGS"; every one
// must exit 0.
func secCommands(t *testing.T, h *procHub, env []string, outputs map[string]string, cmds ...[]string) {
	t.Helper()
	for _, args := range cmds {
		code, out, errOut := h.cli(t, env, args...)
		name := "mcphub " + strings.Join(args, " ")
		outputs[name] = out + errOut
		if code != 0 {
			t.Errorf("%s: exit %d\n%s%s", name, code, out, errOut)
		}
	}
}

// secNoLeaks fails the test for every output that holds a secret.
func secNoLeaks(t *testing.T, outputs map[string]string, secrets ...string) {
	t.Helper()
	for what, out := range outputs {
		for _, s := range secrets {
			if i := strings.Index(out, s); i >= 0 {
				from, to := max(0, i-150), min(len(out), i+len(s)+50)
				t.Errorf("%s leaks a secret: %q at …%s…", what, s, out[from:to])
			}
		}
	}
}

// TestSecuritySecretsNeverLogged runs a hub whose stdio server gets a
// secret in its env and whose remote server has a secret header and a
// secret query value and cannot be reached, with debug logs in JSON and in
// text, and runs every command that shows servers or errors: list, list
// --json, status, status --json, sessions, validate, and probe of the same
// dead URL with the same secrets. No secret may appear anywhere; the query
// value shows as ***.
func TestSecuritySecretsNeverLogged(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			secSecrets(t, format)
		})
	}
}

func secSecrets(t *testing.T, format string) {
	remoteURL := "http://" + freeAddr(t) + "/mcp?key=" + secQuerySecret // nothing listens there
	h := newProcHub(t)
	h.write(t, h.registry("",
		childServer(t, "local", childOpts{dir: t.TempDir(), env: []string{"API_KEY", "${SECRET_VALUE}"}}),
		remoteServer("remote", remoteURL, "connect_timeout = \"2s\"\n"+
			"headers = { Authorization = \"Bearer ${SECRET_VALUE}\", X-Api-Key = \"${SECRET_VALUE}\" }")))
	env := []string{"SECRET_VALUE=" + secEnvSecret}
	r := h.start(env, "--log-format", format, "--log-level", "debug")
	h.waitStatus(t, r, 30*time.Second, "the servers settle", secSettled(map[string]func(api.ServerStatus) bool{
		"local":  secConnected,
		"remote": func(s api.ServerStatus) bool { return s.State != api.StateStarting && s.LastError != "" },
	}))
	// A session and a call, so request logging at debug level runs too.
	s, _ := newRawClient(t, h.base()).initialize("/mcp")
	if status, m := s.call(2, "tools/call", map[string]any{"name": "local__echo", "arguments": map[string]any{"text": "hi"}}); status != 200 || m.Error != nil {
		t.Errorf("local__echo: HTTP %d %s", status, m.Encode())
	}

	outputs := map[string]string{}
	secCommands(t, h, env, outputs, []string{"list"}, []string{"list", "--json"}, []string{"status"}, []string{"status", "--json"},
		[]string{"sessions"}, []string{"validate"})
	for label, args := range map[string][]string{
		"mcphub probe --url URL --header Authorization=SECRET":       {"probe", "--url", remoteURL, "--header", "Authorization=Bearer " + secEnvSecret, "--timeout", "3s"},
		"mcphub probe -v --json --url URL --header X-Api-Key=SECRET": {"probe", "-v", "--json", "--url", remoteURL, "--header", "X-Api-Key=" + secEnvSecret, "--timeout", "3s"},
	} {
		code, out, errOut := h.cli(t, nil, args...)
		if code == 0 {
			t.Errorf("%s of a dead URL exited 0:\n%s%s", label, out, errOut)
		}
		outputs[label] = out + errOut
	}
	r.stop()
	serveLog := "mcphub serve --log-format " + format
	outputs[serveLog] = r.out.String()

	secNoLeaks(t, outputs, secEnvSecret, secQuerySecret)
	for what, out := range outputs {
		for _, m := range secQueryValue.FindAllStringSubmatch(out, -1) {
			if m[1] != "***" && m[1] != "%2A%2A%2A" {
				t.Errorf("%s shows a URL query value %q; want ***", what, m[1])
			}
		}
	}
	for _, what := range []string{"mcphub list", "mcphub list --json"} {
		if !strings.Contains(outputs[what], "key=***") {
			t.Errorf("%s does not show the remote URL with its query value as ***:\n%s", what, outputs[what])
		}
	}
	if !strings.Contains(outputs["mcphub list --json"], `"API_KEY"`) {
		t.Errorf("mcphub list --json does not name the env key API_KEY (only its value is secret):\n%s", outputs["mcphub list --json"])
	}
	if !strings.Contains(outputs[serveLog], "remote") {
		t.Errorf("the serve log never mentions the failing remote server")
	}
}

// TestSecurityAuthToken: with [hub] auth = "token" every request without
// the token, or with a wrong one, is refused with 401 and a Bearer
// challenge; mcphub status and list send the token and work; the token
// reaches no log, no command output and no stdio child.
func TestSecurityAuthToken(t *testing.T) {
	t.Parallel()
	h := newProcHub(t)
	h.write(t, h.registry(`auth = "token"`, childServer(t, "local", childOpts{dir: t.TempDir()})))
	h.token = secToken
	env := []string{"MCPHUB_TOKEN=" + secToken}
	r := h.start(env, "--log-format", "json", "--log-level", "debug")
	st := h.waitStatus(t, r, 30*time.Second, "local connects", secSettled(map[string]func(api.ServerStatus) bool{"local": secConnected}))

	c := newRawClient(t, h.base())
	wrong := secToken[:len(secToken)-1]
	req := func(method, path, body, auth string) rawReq {
		return rawReq{method: method, path: path, body: body, auth: auth, accept: acceptBoth}
	}
	for _, tc := range []httpCase{
		{name: "readyz without a token", req: req("GET", "/readyz", "", ""), status: 401},
		{name: "readyz with a wrong token", req: req("GET", "/readyz", "", "Bearer "+wrong), status: 401},
		{name: "readyz with the token as Basic", req: req("GET", "/readyz", "", "Basic "+secToken), status: 401},
		{name: "readyz with the token and no scheme", req: req("GET", "/readyz", "", secToken), status: 401},
		{name: "initialize without a token", req: req("POST", "/mcp", initBody, ""), status: 401},
		{name: "initialize with a wrong token", req: req("POST", "/mcp", initBody, "Bearer wrong"), status: 401},
		{name: "sessions without a token", req: req("GET", "/control/sessions", "", ""), status: 401},
		{name: "restart without a token", req: req("POST", "/control/restart?server=local", "", ""), status: 401},
		{name: "initialize with the token", req: req("POST", "/mcp", initBody, "Bearer "+secToken), status: 200},
		{name: "readyz with the token", req: req("GET", "/readyz", "", "Bearer "+secToken), status: 200},
	} {
		resp, body := c.expect(t, tc)
		if tc.status == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: WWW-Authenticate = %q, want a Bearer challenge", tc.name, resp.Header.Get("WWW-Authenticate"))
		}
		secNoLeaks(t, map[string]string{tc.name + ": the response": string(body)}, wrong)
	}

	outputs := map[string]string{}
	secCommands(t, h, env, outputs, []string{"status"}, []string{"status", "--json"}, []string{"list"}, []string{"list", "--json"}, []string{"sessions"})
	if !strings.Contains(outputs["mcphub status"], "local") || !strings.Contains(outputs["mcphub status"], api.StateConnected) {
		t.Errorf("mcphub status with the token does not show local connected:\n%s", outputs["mcphub status"])
	}
	if !strings.Contains(outputs["mcphub list"], api.StateConnected) {
		t.Errorf("mcphub list with the token does not show the live state:\n%s", outputs["mcphub list"])
	}
	// Without the token, status must say it was refused, not print an
	// empty status as if the hub had answered.
	code, out, errOut := h.cli(t, nil, "status")
	outputs["mcphub status (no token)"] = out + errOut
	if code == 0 || !regexp.MustCompile(`(?i)401|unauthori[sz]ed|token`).MatchString(out+errOut) {
		t.Errorf("mcphub status without the token: exit %d, output %q; want a failure that says the hub wants the token", code, out+errOut)
	}
	if runtime.GOOS != "linux" {
		t.Log("not checked: whether the stdio child got MCPHUB_TOKEN (a child's environment is read from /proc, which only Linux has)")
	} else if env := procEnviron(t, findServer(st, "local").PID); env["MCPHUB_TOKEN"] != "" {
		t.Errorf("the stdio child got MCPHUB_TOKEN from mcphub's environment")
	}
	r.stop()
	outputs["mcphub serve"] = r.out.String()
	if !strings.Contains(outputs["mcphub serve"], "refused a request") {
		t.Errorf("the serve log has no line for the refused requests")
	}
	secNoLeaks(t, outputs, wrong)
}

// TestSecurityHeaderLimits checks the HTTP server settings of serve.go on a
// real process: headers over MaxHeaderBytes (64 KiB, plus the 4 KiB that
// net/http allows on top) get 431 while 60 KiB pass.
func TestSecurityHeaderLimits(t *testing.T) {
	t.Parallel()
	h := newProcHub(t)
	h.write(t, h.registry(""))
	h.startReady(20*time.Second, nil)
	for _, tc := range []struct {
		size   int
		status int
	}{{60 << 10, 200}, {72 << 10, 431}, {1 << 20, 431}} {
		req, _ := http.NewRequest(http.MethodGet, h.base()+"/healthz", nil)
		req.Header.Set("X-Big", strings.Repeat("a", tc.size))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("a %d KiB header: %v, want HTTP %d", tc.size>>10, err, tc.status)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("a %d KiB header: HTTP %d, want %d", tc.size>>10, resp.StatusCode, tc.status)
		}
	}
}

// TestSecuritySlowClients checks on a real process that a client whose
// request stops arriving is cut off once its allowance is spent, and does
// not hold the hub: other clients are served at once meanwhile. A header
// that trickles in is cut at ReadHeaderTimeout (10 s); a body that stalls is
// answered 408 once its allowance (10 s for a small body) is spent.
func TestSecuritySlowClients(t *testing.T) {
	if testing.Short() {
		t.Skip("each slow client takes 10 s")
	}
	t.Parallel()
	for _, tc := range []struct {
		name    string
		request string // what the client sends before it stalls (%s: the host)
		// trickle sends one header line every 500 ms after the request:
		// each byte arrives in time, the header as a whole never does.
		trickle bool
		within  time.Duration // how long the client waits for the hub
		lo, hi  time.Duration // when the hub must have cut it off
		// answer reads what the hub does and says what it was.
		answer func(t *testing.T, conn net.Conn) string
	}{{
		name: "header", request: "GET /healthz HTTP/1.1\r\nHost: %s\r\n", trickle: true,
		within: 20 * time.Second, lo: 9 * time.Second, hi: 11500 * time.Millisecond,
		answer: func(t *testing.T, conn net.Conn) string {
			buf := make([]byte, 512)
			n, err := conn.Read(buf)
			if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the hub kept a connection with an unfinished header")
			}
			return fmt.Sprintf("read %q, %v", buf[:n], err)
		},
	}, {
		name: "body", request: "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"",
		within: 30 * time.Second, lo: 9 * time.Second, hi: 12500 * time.Millisecond,
		answer: func(t *testing.T, conn net.Conn) string {
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer to a stalled body: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "too slowly") {
				t.Errorf("a stalled body: HTTP %d %s, want 408", resp.StatusCode, body)
			}
			return fmt.Sprintf("HTTP %d", resp.StatusCode)
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newProcHub(t)
			h.write(t, h.registry(""))
			h.startReady(20*time.Second, nil)
			conn, err := net.Dial("tcp", h.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			start := time.Now()
			if _, err := fmt.Fprintf(conn, tc.request, h.addr); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			defer close(stop)
			if tc.trickle {
				go func() {
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						case <-time.After(500 * time.Millisecond):
						}
						if _, err := fmt.Fprintf(conn, "X-Slow-%d: a\r\n", i); err != nil {
							return
						}
					}
				}()
			}
			t0 := time.Now()
			if resp, err := http.Get(h.base() + "/healthz"); err != nil || resp.StatusCode != 200 {
				t.Errorf("/healthz during a slow %s: %v", tc.name, err)
			} else {
				resp.Body.Close()
				if d := time.Since(t0); d > 2*time.Second {
					t.Errorf("/healthz during a slow %s took %s", tc.name, d)
				}
			}
			conn.SetReadDeadline(time.Now().Add(tc.within))
			what := tc.answer(t, conn)
			if took := time.Since(start); took < tc.lo || took > tc.hi {
				t.Errorf("the hub cut off the slow %s after %s (%s); want between %s and %s", tc.name, took.Round(time.Millisecond), what, tc.lo, tc.hi)
			} else {
				t.Logf("the slow %s was cut off after %s (%s)", tc.name, took.Round(time.Millisecond), what)
			}
		})
	}
}
