package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/bridge"
)

// healthWithin is how soon `mcphub status` must show that a remote server
// went down, and that it came back.
const healthWithin = 5 * time.Second

// upstreamOn is a fake MCP server served over Streamable HTTP.
type upstreamOn struct {
	// stop closes its connections and its listener, as a server that goes
	// away does, and waits for its handlers; it is also run at cleanup.
	stop func()
	// hang makes every request that arrives from now on wait, its
	// connection left open, until stop: a server that stopped answering
	// without closing anything.
	hang func()
}

// serveUpstreamOn serves a fresh fake MCP server over Streamable HTTP on
// ln.
func serveUpstreamOn(t *testing.T, name string, ln net.Listener) upstreamOn {
	t.Helper()
	f := newFake(name, false)
	f.stop = make(chan struct{})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return f.srv },
		&mcp.StreamableHTTPOptions{Logger: slog.New(slog.DiscardHandler)})
	var hanging atomic.Bool
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hanging.Load() {
			<-f.stop
			return
		}
		handler.ServeHTTP(w, r)
	}))
	ts.Listener.Close()
	ts.Listener = ln
	ts.Start()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		close(f.stop)
		ts.CloseClientConnections()
		ts.Close()
	}
	t.Cleanup(stop)
	return upstreamOn{stop: stop, hang: func() { hanging.Store(true) }}
}

// listenAgain listens on addr once more, for an upstream that comes back
// where it was. Another process may have taken the port while it was free:
// the listen is retried briefly, and the test skipped if it stays taken.
func listenAgain(t *testing.T, addr string) net.Listener {
	t.Helper()
	var ln net.Listener
	var err error
	if !poll(2*time.Second, func() bool {
		ln, err = net.Listen("tcp", addr)
		return err == nil
	}) {
		t.Skipf("cannot serve the upstream again on %s, taken meanwhile by something else: %v", addr, err)
	}
	return ln
}

// connectedRemote serves an upstream on a free port and starts a hub with
// it as server "remote", connected; it returns the upstream, its address
// and what the CLI needs to reach the hub.
func connectedRemote(t *testing.T) (up upstreamOn, addr, config, dataDir string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = ln.Addr().String()
	up = serveUpstreamOn(t, "remote", ln)
	servers := remoteServer("remote", "http://"+addr+"/mcp", "")
	f := startInproc(t, servers, hubConfig{})
	// Registered after the hub's cleanup, so it runs before it: requests
	// left hanging are let go before the hub closes its connection.
	t.Cleanup(up.stop)
	config, dataDir = cliRegistry(t, f, servers)
	if s, err := statusCLI(t, config, dataDir, "remote"); err != nil || s.State != api.StateConnected {
		t.Fatalf("before the upstream stops: %+v, %v; want connected", s, err)
	}
	return up, addr, config, dataDir
}

// statusCLI runs `mcphub status --json` in this process against the hub
// its registry names, and returns one server's entry.
func statusCLI(t *testing.T, config, dataDir, server string) (api.ServerStatus, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run([]string{"--config", config, "--data-dir", dataDir, "status", "--json"}, &out, &errOut); code != 0 {
		return api.ServerStatus{}, fmt.Errorf("mcphub status --json exited %d: %s%s", code, out.String(), errOut.String())
	}
	var st api.Status
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		return api.ServerStatus{}, fmt.Errorf("mcphub status --json: %v: %s", err, out.String())
	}
	s := findServer(&st, server)
	if s == nil {
		return api.ServerStatus{}, fmt.Errorf("mcphub status --json does not list %s: %s", server, out.String())
	}
	return *s, nil
}

// cliRegistry writes the registry the CLI reads to reach an in-process
// hub: its listen address and the same servers.
func cliRegistry(t *testing.T, f *inprocHub, servers string) (config, dataDir string) {
	t.Helper()
	dir := t.TempDir()
	config = filepath.Join(dir, "hub.toml")
	text := fmt.Sprintf("[hub]\nlisten = %q\n\n%s", strings.TrimPrefix(f.url, "http://"), servers)
	if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return config, filepath.Join(dir, "data")
}

// awaitState polls `mcphub status --json` until the server's state
// satisfies ok, and returns how long that took from since and the entry.
func awaitState(t *testing.T, config, dataDir, server string, since time.Time, what string, ok func(api.ServerStatus) bool) (time.Duration, api.ServerStatus) {
	t.Helper()
	var last api.ServerStatus
	var lastErr error
	if !poll(healthWithin, func() bool {
		last, lastErr = statusCLI(t, config, dataDir, server)
		return lastErr == nil && ok(last)
	}) {
		t.Fatalf("%s: not within %s; last status %+v, err %v", what, healthWithin, last, lastErr)
	}
	return time.Since(since), last
}

// TestHealthRemoteDownAndBack stops a connected Streamable HTTP upstream
// (listener and connections closed) and checks that `mcphub status` shows
// it not connected within 5 s; then serves an upstream again on the same
// port and checks that status shows it connected within 5 s.
func TestHealthRemoteDownAndBack(t *testing.T) {
	up, addr, config, dataDir := connectedRemote(t)
	downAt := time.Now()
	up.stop()
	down, s := awaitState(t, config, dataDir, "remote", downAt, "the stopped upstream to show", func(s api.ServerStatus) bool {
		return s.State != api.StateConnected
	})
	t.Logf("down after %d ms: %s (%s)", down.Milliseconds(), s.State, s.LastError)
	if s.LastError == "" {
		t.Errorf("the stopped upstream shows %s without a reason", s.State)
	}

	ln := listenAgain(t, addr)
	upAt := time.Now()
	serveUpstreamOn(t, "remote", ln)
	back, s := awaitState(t, config, dataDir, "remote", upAt, "the upstream served again to show", func(s api.ServerStatus) bool {
		return s.State == api.StateConnected
	})
	t.Logf("up after %d ms (restarts %d)", back.Milliseconds(), s.Restarts)
	if s.Tools == 0 || s.LastError != "" {
		t.Errorf("the reconnected upstream: %+v, want its tools and no error", s)
	}
}

// TestHealthRemoteLongOutage keeps a stopped upstream away until the hub
// has tried it four times (about 3.5 s after the loss, the next wait being
// some 4 s): it shows restarting, not crash-loop, and once it is served
// again status shows it connected within 5 s of its return, found by the
// probes that run while the hub waits out its backoff.
func TestHealthRemoteLongOutage(t *testing.T) {
	up, addr, config, dataDir := connectedRemote(t)
	downAt := time.Now()
	up.stop()
	var s api.ServerStatus
	var err error
	if !poll(15*time.Second, func() bool {
		s, err = statusCLI(t, config, dataDir, "remote")
		return err == nil && s.Restarts >= 4
	}) {
		t.Fatalf("the hub did not retry the stopped upstream four times within 15 s: %+v, %v", s, err)
	}
	if s.State != api.StateRestarting {
		t.Errorf("after %d restarts the stopped upstream shows %s, want %s", s.Restarts, s.State, api.StateRestarting)
	}

	ln := listenAgain(t, addr)
	upAt := time.Now()
	t.Logf("served again after an outage of %d ms", upAt.Sub(downAt).Milliseconds())
	serveUpstreamOn(t, "remote", ln)
	back, s := awaitState(t, config, dataDir, "remote", upAt, "the upstream back after a long outage to show", func(s api.ServerStatus) bool {
		return s.State == api.StateConnected
	})
	t.Logf("up %d ms after its return (restarts %d)", back.Milliseconds(), s.Restarts)
	if s.Tools == 0 || s.LastError != "" {
		t.Errorf("the reconnected upstream: %+v, want its tools and no error", s)
	}
}

// TestHealthRemoteHangs makes a connected upstream stop answering without
// closing anything: its notification stream stays open and silent, and
// every new request waits forever. Only the idle ping can tell; status
// must show it not connected within 5 s.
func TestHealthRemoteHangs(t *testing.T) {
	up, _, config, dataDir := connectedRemote(t)
	hungAt := time.Now()
	up.hang()
	down, s := awaitState(t, config, dataDir, "remote", hungAt, "the hung upstream to show", func(s api.ServerStatus) bool {
		return s.State != api.StateConnected
	})
	t.Logf("down after %d ms: %s (%s)", down.Milliseconds(), s.State, s.LastError)
	if !strings.Contains(s.LastError, "no answer to a ping") {
		t.Errorf("the hung upstream shows %s with last error %q, want it to name the unanswered ping", s.State, s.LastError)
	}
}

// TestHealthNeedsLoginStatus serves an upstream that answers every request
// with 401 and a Bearer challenge, and checks that status shows it
// needs-login with the sentence that names `mcphub login` and what works
// without it (a token in hub.toml, `mcphub restart`), quoting neither the
// body nor the challenge.
func TestHealthNeedsLoginStatus(t *testing.T) {
	var requests atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("WWW-Authenticate", `Bearer realm="realm-secret", resource_metadata="http://`+r.Host+`/.well-known/oauth-protected-resource"`)
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":"invalid_token","hint":"body-secret"}`)
	}))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	servers := remoteServer("linear", ts.URL+"/mcp", "")
	f := startInproc(t, servers, hubConfig{noWait: true})
	config, dataDir := cliRegistry(t, f, servers)
	_, s := awaitState(t, config, dataDir, "linear", time.Now(), "needs-login to show", func(s api.ServerStatus) bool {
		return s.State == api.StateNeedsLogin
	})
	const want = `server "linear" needs you to sign in (it answered 401 with a Bearer challenge): run mcphub login linear; ` +
		`or put a valid token in its headers in hub.toml (or the variable they name) and run mcphub restart linear`
	if s.LastError != want {
		t.Errorf("last error = %q, want %q", s.LastError, want)
	}
	// One refused initialize, and nothing more: that no retry follows is
	// TestNeedsLoginAtConnect's (bridge) to show, on a fake clock.
	if n := requests.Load(); n != 1 || s.Restarts != 0 {
		t.Errorf("the upstream got %d requests and the status shows %d restarts; want 1 and 0", n, s.Restarts)
	}
	var out, errOut bytes.Buffer
	run([]string{"--config", config, "--data-dir", dataDir, "status"}, &out, &errOut)
	for _, secret := range []string{"realm-secret", "body-secret", "invalid_token", "oauth-protected-resource"} {
		if strings.Contains(out.String()+errOut.String(), secret) {
			t.Errorf("mcphub status shows %q:\n%s%s", secret, out.String(), errOut.String())
		}
	}
}

// TestHealthStatesMatchBridge checks that every state a bridge.Server
// reports is the hub's state of the same name: plugs.go passes them on as
// they are.
func TestHealthStatesMatchBridge(t *testing.T) {
	pairs := [][2]string{
		{bridge.StateStarting, api.StateStarting},
		{bridge.StateConnected, api.StateConnected},
		{bridge.StateRestarting, api.StateRestarting},
		{bridge.StateCrashLoop, api.StateCrashLoop},
		{bridge.StateFailed, api.StateFailed},
		{bridge.StateNeedsLogin, api.StateNeedsLogin},
	}
	for _, p := range pairs {
		if p[0] != p[1] {
			t.Errorf("bridge state %q is %q in the hub", p[0], p[1])
		}
	}
}
