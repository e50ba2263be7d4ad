package main

// Security tests against a real `mcphub serve` process (the binary durBinary
// builds): no stdio child outlives the hub, whatever signal ends it; a child
// sees only PATH, HOME and its registry env; registry secrets, header values,
// URL query secrets and the bearer token never reach a log or a command's
// output; and the HTTP server's slowloris and header-size limits hold. The
// orphan test, which sends Unix signals, is in security_unix_test.go.
//
// The children are this test binary, re-executed in a mode chosen by
// MCPHUB_SEC_CHILD (see secChildMain): a Go SDK stdio server that records
// why it stopped, optionally with a grandchild that ignores stdin and
// SIGTERM, or the soak tests' server. Every helper here starts with "sec".

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/hub"
)

// secChildEnv, when set, makes the test binary one of the child programs
// these tests need instead of running tests; secChildMain says which.
const secChildEnv = "MCPHUB_SEC_CHILD"

// The secrets of TestSecuritySecretsNeverLogged and TestSecurityAuthToken:
// distinctive, so that a leak cannot hide behind a common word.
const (
	secEnvSecret   = "s3cr3t-ENV-7f3a9c1e5b"
	secQuerySecret = "s3cr3t-QUERY-c0ffee42"
	secToken       = "s3cr3t-TOKEN-9d8e7f6a5b4c"
)

func init() {
	if mode := os.Getenv(secChildEnv); mode != "" {
		os.Exit(secChildMain(mode))
	}
}

// secChildMain runs a child program:
//
//	fake     the e2e fake server over stdio (MCPHUB_SEC_NAME); when stdin
//	         reaches EOF and the server returns, it writes NAME.exit in
//	         MCPHUB_SEC_DIR, which proves it stopped on EOF, not on a signal.
//	         With MCPHUB_SEC_SPAWN=1 it first starts a grandchild (sleeper)
//	         in its own process group and writes the grandchild's PID to
//	         NAME.grandchild.
//	sleeper  a process that never reads stdin and ignores SIGTERM, SIGINT
//	         and SIGHUP: only SIGKILL ends it.
//	soak     the soak tests' server over stdio.
func secChildMain(mode string) int {
	name, dir := os.Getenv("MCPHUB_SEC_NAME"), os.Getenv("MCPHUB_SEC_DIR")
	switch mode {
	case "fake":
		if os.Getenv("MCPHUB_SEC_SPAWN") == "1" {
			exe, _ := os.Executable()
			gc := exec.Command(exe)
			gc.Env = []string{secChildEnv + "=sleeper", "GORACE=atexit_sleep_ms=0"}
			if err := gc.Start(); err != nil {
				fmt.Fprintln(os.Stderr, "start grandchild:", err)
				return 1
			}
			os.WriteFile(filepath.Join(dir, name+".grandchild"), []byte(strconv.Itoa(gc.Process.Pid)), 0o600)
		}
		err := newFake(name, true).srv.Run(context.Background(), &mcp.StdioTransport{})
		os.WriteFile(filepath.Join(dir, name+".exit"), fmt.Appendf(nil, "server returned: %v", err), 0o600)
		return 0
	case "sleeper":
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		for {
			time.Sleep(time.Hour)
		}
	case "soak":
		if err := soakServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "soak server:", err)
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown", secChildEnv, mode)
	return 2
}

// secStdio is the registry table of a stdio child of this binary.
func secStdio(t *testing.T, name, mode, dir string, extraEnv ...string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := fmt.Sprintf("%s = %q, MCPHUB_SEC_NAME = %q, MCPHUB_SEC_DIR = %q, GORACE = \"atexit_sleep_ms=0\"", secChildEnv, mode, name, dir)
	for i := 0; i+1 < len(extraEnv); i += 2 {
		env += fmt.Sprintf(", %s = %q", extraEnv[i], extraEnv[i+1])
	}
	return fmt.Sprintf("[servers.%s]\ncommand = %q\nenv = { %s }\n\n", name, exe, env)
}

// secServe runs `mcphub serve` with extra environment and flags. Cleanup
// stops it by its PID.
func secServe(t *testing.T, d *durHubDir, env []string, flags ...string) *durServe {
	t.Helper()
	r := &durServe{exited: make(chan struct{})}
	r.cmd = exec.Command(d.bin, append([]string{"serve", "--config", d.cfg, "--data-dir", d.data}, flags...)...)
	r.cmd.Dir = d.home
	r.cmd.Env = append(durEnv(d.home), env...)
	r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.werr = r.cmd.Wait()
		close(r.exited)
	}()
	d.runs = append(d.runs, r)
	t.Cleanup(r.stop)
	return r
}

// secCLI runs one mcphub command against the hub directory and returns its
// exit code and combined output.
func secCLI(t *testing.T, d *durHubDir, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.bin, append(args, "--config", d.cfg, "--data-dir", d.data)...)
	cmd.Dir = d.home
	cmd.Env = append(durEnv(d.home), env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	t.Fatalf("mcphub %s: %v", strings.Join(args, " "), err)
	return -1, ""
}

// secStatus fetches /readyz with a bearer token ("" for none).
func secStatus(addr, token string) (*hub.Status, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	var st hub.Status
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, fmt.Errorf("HTTP %d: %s", resp.StatusCode, body)
	}
	return &st, resp.StatusCode, json.Unmarshal(body, &st)
}

// secWaitSettled polls /readyz until every named server is in a settled
// state and returns the status.
func secWaitSettled(t *testing.T, r *durServe, addr, token string, want map[string]func(hub.ServerStatus) bool) *hub.Status {
	t.Helper()
	var last string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if !r.running() {
			t.Fatalf("mcphub serve exited: %v", r.werr)
		}
		st, _, err := secStatus(addr, token)
		if err != nil {
			last = err.Error()
		} else {
			ok := true
			for _, s := range st.Servers {
				if cond := want[s.Name]; cond != nil && !cond(s) {
					ok = false
					last = fmt.Sprintf("%s is %s (%s)", s.Name, s.State, s.LastError)
				}
			}
			if ok {
				return st
			}
		}
		time.Sleep(durPollEvery)
	}
	t.Fatalf("servers did not settle within 30 s: %s", last)
	return nil
}

func secConnected(s hub.ServerStatus) bool { return s.State == hub.StateConnected && s.PID > 0 }

// secEnviron reads a process's initial environment.
func secEnviron(t *testing.T, pid int) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatalf("read the environment of %d: %v", pid, err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

// secLeaks returns a description of every secret found in out.
func secLeaks(out string, secrets ...string) []string {
	var leaks []string
	for _, s := range secrets {
		if i := strings.Index(out, s); i >= 0 {
			from, to := max(0, i-150), min(len(out), i+len(s)+50)
			leaks = append(leaks, fmt.Sprintf("%q at …%s…", s, out[from:to]))
		}
	}
	return leaks
}

// secQueryValue finds every value written after key= in a URL query.
var secQueryValue = regexp.MustCompile(`key=([^&"\s\\,):]*)`)

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
	dead := durFreePort(t) // nothing listens there
	remoteURL := "http://" + dead + "/mcp?key=" + secQuerySecret
	servers := secStdio(t, "local", "fake", t.TempDir(), "API_KEY", "${SECRET_VALUE}") +
		fmt.Sprintf("[servers.remote]\nurl = %q\ntransport = \"streamable-http\"\nconnect_timeout = \"2s\"\n"+
			"headers = { Authorization = \"Bearer ${SECRET_VALUE}\", X-Api-Key = \"${SECRET_VALUE}\" }\n\n", remoteURL)
	d := durNewHubDirWith(t, "", servers)
	env := []string{"SECRET_VALUE=" + secEnvSecret}
	r := secServe(t, d, env, "--log-format", format, "--log-level", "debug")
	secWaitSettled(t, r, d.addr, "", map[string]func(hub.ServerStatus) bool{
		"local":  secConnected,
		"remote": func(s hub.ServerStatus) bool { return s.State != hub.StateStarting && s.LastError != "" },
	})
	// A session and a call, so request logging at debug level runs too.
	c := durNewClient(t, "http://"+d.addr+"/mcp")
	c.initialize()
	if status, m := c.call(2, "tools/call", map[string]any{"name": "local__echo", "arguments": map[string]any{"text": "hi"}}); status != 200 || m.Error != nil {
		t.Errorf("local__echo: HTTP %d %s", status, m.Encode())
	}

	outputs := map[string]string{}
	for _, args := range [][]string{{"list"}, {"list", "--json"}, {"status"}, {"status", "--json"}, {"sessions"}, {"validate"}} {
		code, out := secCLI(t, d, env, args...)
		if code != 0 {
			t.Errorf("mcphub %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
		outputs["mcphub "+strings.Join(args, " ")] = out
	}
	for label, args := range map[string][]string{
		"mcphub probe --url URL --header Authorization=SECRET":       {"probe", "--url", remoteURL, "--header", "Authorization=Bearer " + secEnvSecret, "--timeout", "3s"},
		"mcphub probe -v --json --url URL --header X-Api-Key=SECRET": {"probe", "-v", "--json", "--url", remoteURL, "--header", "X-Api-Key=" + secEnvSecret, "--timeout", "3s"},
	} {
		code, out := secCLI(t, d, nil, args...)
		if code == 0 {
			t.Errorf("%s of a dead URL exited 0:\n%s", label, out)
		}
		outputs[label] = out
	}
	r.stop()
	outputs["mcphub serve --log-format "+format] = r.out.String()

	for what, out := range outputs {
		for _, leak := range secLeaks(out, secEnvSecret, secQuerySecret) {
			t.Errorf("%s leaks a secret: %s", what, leak)
		}
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
	if !strings.Contains(outputs["mcphub serve --log-format "+format], "remote") {
		t.Errorf("the serve log never mentions the failing remote server")
	}
}

// TestSecurityAuthToken: with [hub] auth = "token" every request without
// the token, or with a wrong one, is refused with 401 and a Bearer
// challenge; mcphub status and list send the token and work; the token
// reaches no log, no command output and no stdio child.
func TestSecurityAuthToken(t *testing.T) {
	t.Parallel()
	d := durNewHubDirWith(t, "auth = \"token\"", secStdio(t, "local", "fake", t.TempDir()))
	env := []string{"MCPHUB_TOKEN=" + secToken}
	r := secServe(t, d, env, "--log-format", "json", "--log-level", "debug")
	st := secWaitSettled(t, r, d.addr, secToken, map[string]func(hub.ServerStatus) bool{"local": secConnected})

	base := "http://" + d.addr
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`
	for _, tc := range []struct {
		name, method, path, body, auth string
		status                         int
	}{
		{"readyz without a token", http.MethodGet, "/readyz", "", "", 401},
		{"readyz with a wrong token", http.MethodGet, "/readyz", "", "Bearer " + secToken[:len(secToken)-1], 401},
		{"readyz with the token as Basic", http.MethodGet, "/readyz", "", "Basic " + secToken, 401},
		{"readyz with the token and no scheme", http.MethodGet, "/readyz", "", secToken, 401},
		{"initialize without a token", http.MethodPost, "/mcp", init, "", 401},
		{"initialize with a wrong token", http.MethodPost, "/mcp", init, "Bearer wrong", 401},
		{"sessions without a token", http.MethodGet, "/control/sessions", "", "", 401},
		{"restart without a token", http.MethodPost, "/control/restart?server=local", "", "", 401},
		{"initialize with the token", http.MethodPost, "/mcp", init, "Bearer " + secToken, 200},
		{"readyz with the token", http.MethodGet, "/readyz", "", "Bearer " + secToken, 200},
	} {
		req, _ := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: HTTP %d %s, want %d", tc.name, resp.StatusCode, body, tc.status)
		}
		if tc.status == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: WWW-Authenticate = %q, want a Bearer challenge", tc.name, resp.Header.Get("WWW-Authenticate"))
		}
		for _, leak := range secLeaks(string(body), secToken[:len(secToken)-1]) {
			t.Errorf("%s: the response leaks the token: %s", tc.name, leak)
		}
	}

	outputs := map[string]string{}
	for _, args := range [][]string{{"status"}, {"status", "--json"}, {"list"}, {"list", "--json"}, {"sessions"}} {
		code, out := secCLI(t, d, env, args...)
		outputs["mcphub "+strings.Join(args, " ")] = out
		if code != 0 {
			t.Errorf("mcphub %s with $MCPHUB_TOKEN: exit %d\n%s", strings.Join(args, " "), code, out)
		}
	}
	if !strings.Contains(outputs["mcphub status"], "local") || !strings.Contains(outputs["mcphub status"], hub.StateConnected) {
		t.Errorf("mcphub status with the token does not show local connected:\n%s", outputs["mcphub status"])
	}
	if !strings.Contains(outputs["mcphub list"], hub.StateConnected) {
		t.Errorf("mcphub list with the token does not show the live state:\n%s", outputs["mcphub list"])
	}
	// Without the token, status must say it was refused, not print an
	// empty status as if the hub had answered.
	code, out := secCLI(t, d, nil, "status")
	outputs["mcphub status (no token)"] = out
	if code == 0 || !regexp.MustCompile(`(?i)401|unauthori[sz]ed|token`).MatchString(out) {
		t.Errorf("mcphub status without the token: exit %d, output %q; want a failure that says the hub wants the token", code, out)
	}
	if runtime.GOOS != "linux" {
		t.Log("not checked: whether the stdio child got MCPHUB_TOKEN (a child's environment is read from /proc, which only Linux has)")
	} else if env := secEnviron(t, st.Servers[0].PID); env["MCPHUB_TOKEN"] != "" {
		t.Errorf("the stdio child got MCPHUB_TOKEN from mcphub's environment")
	}
	r.stop()
	outputs["mcphub serve"] = r.out.String()
	if !strings.Contains(outputs["mcphub serve"], "without a valid token") {
		t.Errorf("the serve log has no line for the refused requests")
	}
	for what, out := range outputs {
		for _, leak := range secLeaks(out, secToken[:len(secToken)-1]) {
			t.Errorf("%s leaks the token: %s", what, leak)
		}
	}
}

// secServeHealthy starts a hub with no servers and waits for its
// /healthz; it returns the hub's directory and base URL.
func secServeHealthy(t *testing.T) (*durHubDir, string) {
	t.Helper()
	d := durNewHubDirWith(t, "", "")
	r := secServe(t, d, nil)
	base := "http://" + d.addr
	if !poll(20*time.Second, func() bool {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	}) {
		t.Fatalf("the hub did not answer /healthz within 20 s:\n%s", r.out.String())
	}
	return d, base
}

// TestSecurityHeaderLimits checks the HTTP server settings of serve.go on a
// real process: headers over MaxHeaderBytes (64 KiB, plus the 4 KiB that
// net/http allows on top) get 431 while 60 KiB pass;
// and, unless -short, a client that trickles its header is cut off at
// ReadHeaderTimeout (10 s) while other clients are served.
func TestSecurityHeaderLimits(t *testing.T) {
	t.Parallel()
	d, base := secServeHealthy(t)

	for _, tc := range []struct {
		size   int
		status int
	}{{60 << 10, 200}, {72 << 10, 431}, {1 << 20, 431}} {
		req, _ := http.NewRequest(http.MethodGet, base+"/healthz", nil)
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

	if testing.Short() {
		t.Skip("the slow-header check takes ReadHeaderTimeout (10 s)")
	}
	conn, err := net.Dial("tcp", d.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: "+d.addr+"\r\n"); err != nil {
		t.Fatal(err)
	}
	// One header line every 500 ms: each byte arrives in time, the header
	// as a whole never does.
	stop := make(chan struct{})
	defer close(stop)
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
	// Meanwhile other clients are served at once.
	t0 := time.Now()
	resp, err := http.Get(base + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("/healthz during a slow header: %v", err)
	} else {
		resp.Body.Close()
		if d := time.Since(t0); d > 2*time.Second {
			t.Errorf("/healthz during a slow header took %s", d)
		}
	}
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	buf := make([]byte, 512)
	n, rerr := conn.Read(buf)
	took := time.Since(start)
	var ne net.Error
	switch {
	case errors.As(rerr, &ne) && ne.Timeout():
		t.Fatalf("the hub kept a connection with an unfinished header for %s", took.Round(time.Millisecond))
	case took < 9*time.Second || took > 11500*time.Millisecond:
		t.Errorf("the hub closed the slow connection after %s (read %q, %v); want about ReadHeaderTimeout, 10 s", took.Round(time.Millisecond), buf[:n], rerr)
	default:
		t.Logf("the slow connection was closed after %s (read %q, %v)", took.Round(time.Millisecond), buf[:n], rerr)
	}
}

// TestSecuritySlowBody checks on a real process that a request whose body
// stops arriving is answered 408 once its allowance (10 s for a small body)
// is spent, and does not hold the hub: other clients are served meanwhile.
func TestSecuritySlowBody(t *testing.T) {
	if testing.Short() {
		t.Skip("the slow-body check takes 10 s")
	}
	t.Parallel()
	d, base := secServeHealthy(t)
	conn, err := net.Dial("tcp", d.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"", d.addr)
	if resp, err := http.Get(base + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Errorf("/healthz during a stalled body: %v", err)
	} else {
		resp.Body.Close()
	}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("no answer to a stalled body after %s: %v", took.Round(time.Millisecond), err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "too slowly") {
		t.Errorf("a stalled body: HTTP %d %s, want 408", resp.StatusCode, body)
	}
	if took < 9*time.Second || took > 12500*time.Millisecond {
		t.Errorf("a stalled body was answered after %s; want about 10 s", took.Round(time.Millisecond))
	}
}
