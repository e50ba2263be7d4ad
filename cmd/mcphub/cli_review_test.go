package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcphub/mcphub/hub"
	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/internal/filelock"
	"github.com/mcphub/mcphub/registry"
	"github.com/mcphub/mcphub/stdioface"
)

const reviewToken = "review-secret-token-0123456789"

// spyHub answers as a hub would and records the Authorization header of
// every request it gets.
type spyHub struct {
	addr string

	mu    sync.Mutex
	paths []string
	auths []string // the Authorization header of each request, "" when absent
}

// startSpyHub serves answer for every request, after recording it.
func startSpyHub(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, addr string)) *spyHub {
	t.Helper()
	s := &spyHub{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.paths = append(s.paths, r.URL.Path)
		s.auths = append(s.auths, r.Header.Get("Authorization"))
		s.mu.Unlock()
		answer(w, r, s.addr)
	}))
	s.addr = srv.Listener.Addr().String()
	srv.Start()
	t.Cleanup(srv.Close)
	return s
}

// requests returns the paths asked and the requests that carried an
// Authorization header.
func (s *spyHub) requests() (paths []string, withAuth int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.auths {
		if a != "" {
			withAuth++
		}
	}
	return append([]string(nil), s.paths...), withAuth
}

// statusAnswer answers /readyz with a hub's status, and anything else with
// the hub's 404.
func statusAnswer(code int) func(w http.ResponseWriter, r *http.Request, addr string) {
	return func(w http.ResponseWriter, r *http.Request, addr string) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/readyz" {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"no such endpoint"}}`)
			return
		}
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(goldenHubStatus(addr))
	}
}

// reviewRegistry is a registry listening on listen with auth on, its token
// in a file, and one server.
func reviewRegistry(t *testing.T, e *goldenEnv, listen string) string {
	t.Helper()
	tokenFile := filepath.Join(e.tmp, "token")
	if err := os.WriteFile(tokenFile, []byte(reviewToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("[hub]\nlisten = %q\nauth = \"token\"\ntoken_file = %q\n\n[servers.weather]\ncommand = \"echo\"\n", listen, tokenFile)
}

// TestCLIReviewNoTokenToAnotherRegistrysHub: the live hub holding the data
// directory serves another registry; no command run on this registry sends
// it this registry's token, whether this registry listens elsewhere or at
// that hub's very address. status and list say which registry that hub
// serves. The same hub serving this registry does get the token.
func TestCLIReviewNoTokenToAnotherRegistrysHub(t *testing.T) {
	commands := [][]string{
		{"status"}, {"status", "--json"}, {"list"}, {"list", "--json"},
		{"restart", "weather"}, {"sessions"}, {"sessions", "rm", "abc"},
		{"tools", "call", "weather__echo"}, {"tools", "ls"},
	}
	for _, tc := range []struct {
		name      string
		sameAddr  bool // this registry listens at the other hub's address
		wantAsked bool // the spy is asked at all
	}{
		{name: "own address elsewhere"},
		{name: "same address", sameAddr: true, wantAsked: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := goldenNewEnv(t)
			spy := startSpyHub(t, statusAnswer(http.StatusOK))
			listen := e.closedAddr(t)
			if tc.sameAddr {
				listen = spy.addr
			}
			e.writeRegistry(t, reviewRegistry(t, e, listen))
			other := filepath.Join(e.tmp, "other.toml")
			release, err := hubclient.LockDataDir(e.dataDir, hubclient.RunInfo{PID: os.Getpid(), Listen: spy.addr, Config: other, Started: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			for _, args := range commands {
				code, out, errOut := runCLI(t, append([]string{"--config", e.config, "--data-dir", e.dataDir}, args...)...)
				if strings.Contains(out+errOut, reviewToken) {
					t.Errorf("mcphub %s shows the token", strings.Join(args, " "))
				}
				if args[0] == "status" || args[0] == "list" {
					if !strings.Contains(errOut, "serves another registry, "+other) {
						t.Errorf("mcphub %s: exit %d, stderr %q; want the note naming %s", strings.Join(args, " "), code, errOut, other)
					}
				}
				if args[0] == "status" && len(args) == 1 {
					want := "no mcphub is running at " + listen
					if tc.sameAddr {
						want = "mcphub " + mcphubVersion() + " at http://" + spy.addr
					}
					if !strings.Contains(out, want) {
						t.Errorf("status: exit %d, stdout %q; want %q", code, out, want)
					}
				}
			}
			paths, withAuth := spy.requests()
			if withAuth != 0 {
				t.Errorf("the hub serving %s got this registry's token on %d of %d requests (%v)", other, withAuth, len(paths), paths)
			}
			if tc.wantAsked != (len(paths) > 0) {
				t.Errorf("the spy was asked %v; want asked: %v", paths, tc.wantAsked)
			}
		})
	}

	// The control: the same hub recorded as serving this registry (through
	// a symlink, even) is asked with the token.
	e := goldenNewEnv(t)
	spy := startSpyHub(t, statusAnswer(http.StatusOK))
	e.writeRegistry(t, reviewRegistry(t, e, e.closedAddr(t)))
	link := filepath.Join(e.tmp, "link.toml")
	if err := os.Symlink(e.config, link); err != nil {
		t.Fatal(err)
	}
	release, err := hubclient.LockDataDir(e.dataDir, hubclient.RunInfo{PID: os.Getpid(), Listen: spy.addr, Config: link, Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	code, out, errOut := runCLI(t, "--config", e.config, "--data-dir", e.dataDir, "status")
	if paths, withAuth := spy.requests(); code != 0 || withAuth == 0 || strings.Contains(errOut, "another registry") {
		t.Errorf("status with the hub serving this registry: exit %d, stdout %q, stderr %q, the spy asked %v with the token %d times; want the token sent, no note",
			code, out, errOut, paths, withAuth)
	}
}

// TestCLIReviewStatus503: a hub with auth on but no token to check against
// answers 503 with an error, which status reports (exit 1, the hub's
// reason) instead of an empty status; a hub not ready yet answers its status
// with 503, which status shows.
func TestCLIReviewStatus503(t *testing.T) {
	t.Setenv("MCPHUB_TOKEN", "")
	missing := filepath.Join(t.TempDir(), "no-token")
	hubKeys := fmt.Sprintf("auth = \"token\"\ntoken_file = %q", missing)
	f := startInproc(t, "", hubConfig{hubKeys: hubKeys, tweak: func(o *hub.Options) {
		o.Token = "before-the-file-went"
		o.ResolveToken = func(h registry.Hub) (string, error) { return hubclient.Token(&registry.Registry{Hub: h}) }
	}})
	reg, err := registry.Parse("", []byte("[hub]\nlisten = \"127.0.0.1:0\"\n"+hubKeys+"\n"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	f.h.Apply(reg) // the token file cannot be read: every request is refused with 503
	e := goldenNewEnv(t)
	addr := strings.TrimPrefix(f.url, "http://")
	e.writeRegistry(t, fmt.Sprintf("[hub]\nlisten = %q\n", addr))
	flags := []string{"--config", e.config, "--data-dir", e.dataDir}

	code, out, errOut := runCLI(t, append(flags, "status")...)
	if code != 1 || strings.Contains(out, "mcphub  at") || !strings.Contains(errOut, "the hub refused: mcphub's auth is on but it has no token") {
		t.Errorf("status of a hub without a token: exit %d, stdout %q, stderr %q; want exit 1 and the hub's reason", code, out, errOut)
	}
	var fail jsonError
	var o strings.Builder
	code = run(append(flags, "status", "--json"), &o, io.Discard)
	if json.Unmarshal([]byte(o.String()), &fail) != nil || code != 1 || !strings.Contains(fail.Error, "auth is on but it has no token") {
		t.Errorf("status --json of a hub without a token: exit %d, stdout %q; want {\"error\": the hub's reason}", code, o.String())
	}

	// Not ready yet: 503 with the status.
	spy := startSpyHub(t, statusAnswer(http.StatusServiceUnavailable))
	st, err := (hubclient.Target{Listen: spy.addr}).Status(context.Background())
	if err != nil || st.Version != mcphubVersion() || len(st.Servers) != 4 {
		t.Errorf("fetchStatus of a hub not ready: %+v, %v; want its status", st, err)
	}
	// 503 with a JSON object that is no status.
	other := startSpyHub(t, func(w http.ResponseWriter, _ *http.Request, _ string) {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"state":"draining"}`)
	})
	if st, err := (hubclient.Target{Listen: other.addr}).Status(context.Background()); err == nil || !strings.Contains(err.Error(), "answered HTTP 503") {
		t.Errorf("fetchStatus of a 503 that is no status: %+v, %v; want an error saying HTTP 503", st, err)
	}
}

// TestCLIReviewTokenSentences: every command that meets the hub's 401 says
// it in one sentence: whether the registry gives a token, where mcphub
// token shows it, and that a replaced token file is read again, never that
// the hub needs a restart; and never the token.
func TestCLIReviewTokenSentences(t *testing.T) {
	spy := startSpyHub(t, func(w http.ResponseWriter, _ *http.Request, _ string) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcphub"`)
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Unauthorized: send Authorization: Bearer <token> (see mcphub token)"}}`)
	})
	none := hubclient.Target{Listen: spy.addr}
	other := hubclient.Target{Listen: spy.addr, Token: reviewToken}
	for _, tc := range []struct {
		t    hubclient.Target
		want []string
	}{
		{none, []string{"wants a token, and the registry gives none", "see mcphub token"}},
		{other, []string{"wants a token, and refused the registry's", "mcphub token", "reads it again within a moment"}},
	} {
		want := tc.t.TokenRefused().Error()
		_, statusErr := tc.t.Status(context.Background())
		controlErr := tc.t.Control(context.Background(), http.MethodGet, "/control/sessions", http.StatusOK, nil)
		probeErr := stdioface.Probe(context.Background(), tc.t)
		for what, err := range map[string]error{"fetchStatus": statusErr, "controlAt": controlErr, "probeHub": probeErr} {
			if err == nil || err.Error() != want {
				t.Errorf("%s with token %v: %v; want %q", what, tc.t.Token != "", err, want)
			}
		}
		for _, w := range tc.want {
			if !strings.Contains(want, w) {
				t.Errorf("the sentence %q lacks %q", want, w)
			}
		}
		if strings.Contains(want, "restart") || strings.Contains(want, reviewToken) || strings.Contains(want, "requires a bearer token") {
			t.Errorf("the sentence %q says to restart, shows the token, or is the old one", want)
		}
	}
}

// TestCLIReviewListHubError: list tells a hub it could not ask (here one
// that refuses the token) from no hub: hub_error in --json, the reason on
// stderr in text.
func TestCLIReviewListHubError(t *testing.T) {
	spy := startSpyHub(t, func(w http.ResponseWriter, _ *http.Request, _ string) {
		w.WriteHeader(http.StatusUnauthorized)
	})
	e := goldenNewEnv(t)
	e.writeRegistry(t, reviewRegistry(t, e, spy.addr))
	var entries []hubclient.ListEntry
	code, out, errOut := jsonRun(t, e, &entries, "list", "--json")
	if code != 0 || len(entries) != 1 || entries[0].Live != nil || !strings.Contains(entries[0].HubError, "refused the registry's") || !strings.Contains(entries[0].HubError, spy.addr) {
		t.Errorf("list --json of a hub that refuses the token: exit %d, %s; want hub_error saying so", code, out)
	}
	if !strings.Contains(errOut, "refused the registry's") {
		t.Errorf("list --json: stderr %q; want the reason", errOut)
	}
	code, out, errOut = runCLI(t, "--config", e.config, "--data-dir", e.dataDir, "list")
	if code != 0 || !strings.Contains(errOut, "could not ask the hub at "+spy.addr) || !strings.Contains(errOut, "refused the registry's") || strings.Contains(out, "no hub running") {
		t.Errorf("list: exit %d, stdout %q, stderr %q; want the reason on stderr, and no \"no hub\"", code, out, errOut)
	}
	if strings.Contains(out+errOut, reviewToken) {
		t.Errorf("list shows the token")
	}

	// No hub at all: no hub_error.
	e.writeRegistry(t, reviewRegistry(t, e, e.closedAddr(t)))
	entries = nil
	if code, out, _ := jsonRun(t, e, &entries, "list", "--json"); code != 0 || len(entries) != 1 || entries[0].HubError != "" || strings.Contains(out, "hub_error") {
		t.Errorf("list --json without a hub: exit %d, %s; want no hub_error", code, out)
	}
}

// TestCLIReviewLockWaitsForCheck: a hub starting while liveRunInfo holds the
// lock for its instant waits it out instead of refusing the directory; a
// lock held longer than hubclient.LockWait is another hub's.
func TestCLIReviewLockWaitsForCheck(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, hubclient.RunFileName), []byte(`{"pid":1,"listen":"127.0.0.1:1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	check, err := os.Open(filepath.Join(dir, hubclient.RunFileName))
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()
	if err := filelock.TryLock(check); err != nil {
		t.Fatal(err)
	}
	// A check that lets go well within the wait, whenever lockDataDir
	// comes to it.
	unlocked := make(chan struct{})
	time.AfterFunc(hubclient.LockWait/5, func() {
		filelock.Unlock(check)
		close(unlocked)
	})
	release, err := hubclient.LockDataDir(dir, hubclient.RunInfo{PID: 4242, Listen: "127.0.0.1:7777"})
	<-unlocked
	if err != nil {
		t.Fatalf("lockDataDir while a check held the lock for an instant: %v; want it taken", err)
	}
	release()

	if err := filelock.TryLock(check); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = hubclient.LockDataDir(dir, hubclient.RunInfo{PID: 4243, Listen: "127.0.0.1:7778"})
	if !errors.Is(err, hubclient.ErrDataDirBusy) || time.Since(start) < hubclient.LockWait {
		t.Errorf("lockDataDir while the lock is held: %v after %s; want hubclient.ErrDataDirBusy after waiting %s", err, time.Since(start), hubclient.LockWait)
	}
}

// TestCLIReviewStdioTokenRotates: a face keeps relaying when the hub's token
// changes under it (the token file replaced, applied by the hub at once):
// it reads the registry's token again and reconnects with it, resuming the
// session, instead of getting 401 until its client restarts it.
func TestCLIReviewStdioTokenRotates(t *testing.T) {
	t.Setenv("MCPHUB_TOKEN", "")
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("stdio-token-one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	servers := childServer(t, "a", childOpts{})
	hubKeys := fmt.Sprintf("auth = \"token\"\ntoken_file = %q", tokenFile)
	f := startInproc(t, servers, hubConfig{hubKeys: hubKeys, store: fullStore, tweak: func(o *hub.Options) {
		o.Token = "stdio-token-one"
		o.ResolveToken = func(h registry.Hub) (string, error) { return hubclient.Token(&registry.Registry{Hub: h}) }
	}})
	addr := strings.TrimPrefix(f.url, "http://")
	config := filepath.Join(dir, "hub.toml")
	if err := os.WriteFile(config, fmt.Appendf(nil, "[hub]\nlisten = %q\n%s\n", addr, hubKeys), 0o600); err != nil {
		t.Fatal(err)
	}
	finder, err := stdioface.NewFinder(stdioface.Config{ConfigPath: config, DataDir: filepath.Join(dir, "data")})
	if err != nil {
		t.Fatal(err)
	}
	first, err := finder.Find(context.Background())
	if err != nil || first.Token != "stdio-token-one" {
		t.Fatalf("find = %v (token %v); want the hub, with the file's token", err, first.Token == "stdio-token-one")
	}
	face := startInprocFace(t, f.url, "/mcp", nil, func(c *stdioface.Options) {
		c.Find, c.Hub = finder.Find, first
	})
	face.initialize()
	if got := face.tool("a__echo", map[string]any{"text": "one"}); got != "a:one" {
		t.Fatalf("a__echo = %q, want a:one", got)
	}
	sessions := f.h.Sessions()

	// The token file is replaced, and the hub applies it: every request
	// needs the new token from now on, and its streams are cut.
	if err := os.WriteFile(tokenFile, []byte("stdio-token-two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Parse("", []byte("[hub]\nlisten = \"127.0.0.1:0\"\n"+hubKeys+"\n\n"+servers), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	f.h.Apply(reg)
	if st, err := readyzOf(f.url, "stdio-token-one"); err == nil {
		t.Fatalf("the hub still takes the old token: %s", describe(st))
	}
	if got := face.tool("a__echo", map[string]any{"text": "two"}); got != "a:two" {
		t.Fatalf("a__echo after the token changed = %q, want a:two", got)
	}
	if after := f.h.Sessions(); len(sessions) != 1 || len(after) != 1 || after[0].ID != sessions[0].ID {
		t.Errorf("sessions before %+v, after %+v; want the one session resumed", sessions, after)
	}
	if strings.Contains(face.logs.String(), "stdio-token-") {
		t.Errorf("the face's log shows a token")
	}
}

// TestCLIReviewStdioTokenRefusedCall: a call refused with 401 because the
// token changed while the face's streams stayed open goes again, on a
// connection with the registry's token in force now; a 401 to the token in
// force is the client's answer.
func TestCLIReviewStdioTokenRefusedCall(t *testing.T) {
	t.Setenv("MCPHUB_TOKEN", "")
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("call-token-one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	want := "call-token-one"
	refused := 0
	f := startInproc(t, childServer(t, "a", childOpts{}), hubConfig{store: fullStore, wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			ok := r.Header.Get("Authorization") == "Bearer "+want
			if !ok {
				refused++
			}
			mu.Unlock()
			if !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="mcphub"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}})
	config := filepath.Join(dir, "hub.toml")
	if err := os.WriteFile(config, fmt.Appendf(nil, "[hub]\nlisten = %q\nauth = \"token\"\ntoken_file = %q\n", strings.TrimPrefix(f.url, "http://"), tokenFile), 0o600); err != nil {
		t.Fatal(err)
	}
	finder, err := stdioface.NewFinder(stdioface.Config{ConfigPath: config, DataDir: filepath.Join(dir, "data")})
	if err != nil {
		t.Fatal(err)
	}
	first, err := finder.Find(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	face := startInprocFace(t, f.url, "/mcp", nil, func(c *stdioface.Options) {
		c.Find, c.Hub = finder.Find, first
	})
	face.initialize()
	if got := face.tool("a__echo", map[string]any{"text": "one"}); got != "a:one" {
		t.Fatalf("a__echo = %q, want a:one", got)
	}
	sessions := f.h.Sessions()

	if err := os.WriteFile(tokenFile, []byte("call-token-two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	want = "call-token-two"
	mu.Unlock()
	if got := face.tool("a__echo", map[string]any{"text": "two"}); got != "a:two" {
		t.Fatalf("a__echo after the token changed = %q, want a:two", got)
	}
	mu.Lock()
	n := refused
	mu.Unlock()
	if n == 0 {
		t.Errorf("no request was refused: the call did not meet the old token's 401")
	}
	if after := f.h.Sessions(); len(sessions) != 1 || len(after) != 1 || after[0].ID != sessions[0].ID {
		t.Errorf("sessions before %+v, after %+v; want the one session resumed", sessions, after)
	}

	// A token the hub does not take, in the registry too: the call fails
	// with the hub's refusal.
	mu.Lock()
	want = "call-token-three"
	mu.Unlock()
	m := face.request("tools/call", map[string]any{"name": "a__echo", "arguments": map[string]any{"text": "three"}})
	if m.Error == nil {
		t.Errorf("a call the hub refuses answered %s; want an error", m.Encode())
	}
}
