//go:build unix

package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/internal/keychain"
	"github.com/mcphub/mcphub/store"
	"github.com/mcphub/mcphub/store/pgtest"
	"github.com/mcphub/mcphub/team"
)

// withBearer is an http.Client that sends Authorization: Bearer value.
func withBearer(value string) *http.Client {
	return &http.Client{Transport: bearer{token: value, next: http.DefaultTransport}}
}

const teamAccessServers = `
[profiles.eng]
servers = ["up"]
prefixed = true

[profiles.ops]
servers = ["other"]
prefixed = true
`

// API keys on a team hub: a key made with keys create works on every
// replica, reaches only its profile (its tools on /mcp, another profile
// refused 403, a tool outside it refused by name), and, revoked through
// one replica's store, is refused by every replica at its next request.
func TestTeamHubKeys(t *testing.T) {
	up := startUpstream(t, "up", upstreamOpts{})
	other := startUpstream(t, "other", upstreamOpts{})
	const token = "team-hub-token-0123456789"
	th := startTeamWith(t, 3, "", token,
		remoteServer("up", up.url, `connect_timeout = "10s"`)+remoteServer("other", other.url, `connect_timeout = "10s"`)+teamAccessServers)
	ph := th.reps[0]

	code, stdout, stderr := ph.cli(t, nil, "keys", "create", "ci", "--profile", "eng", "--expires", "90d", "--store", ph.storeURL)
	key := strings.TrimSpace(stdout)
	if code != 0 || !strings.HasPrefix(key, "mcphub_") || strings.Count(stdout, "\n") != 1 || !strings.Contains(stderr, "only time it is shown") {
		t.Fatalf("keys create: exit %d, stdout %q, stderr %q; want the key alone on stdout", code, stdout, stderr)
	}
	if code, _, stderr := ph.cli(t, nil, "keys", "create", "ci", "--store", ph.storeURL); code == 0 || !strings.Contains(stderr, "already called ci") {
		t.Errorf("a second live key called ci: exit %d, %q", code, stderr)
	}
	if code, _, stderr := ph.cli(t, nil, "keys", "create", "x", "--profile", "nope", "--store", ph.storeURL); code == 0 || !strings.Contains(stderr, "no [profiles.nope] table") {
		t.Errorf("a key for an unknown profile: exit %d, %q", code, stderr)
	}

	// On /mcp the key gets its one profile's tools, the token every tool.
	all := connectSDK(t, th.lb.URL+"/mcp", sdkOpts{hc: withBearer(token)})
	allTools, err := all.tools()
	if err != nil {
		t.Fatal(err)
	}
	s := connectSDK(t, th.lb.URL+"/mcp", sdkOpts{hc: withBearer(key)})
	got, err := s.tools()
	if err != nil {
		t.Fatal(err)
	}
	eng := connectSDK(t, th.lb.URL+"/profiles/eng/mcp", sdkOpts{hc: withBearer(token)})
	want, err := eng.tools()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || !slices.Equal(got, want) || len(allTools) <= len(got) {
		t.Fatalf("the key's tools on /mcp: %v; want profile eng's %v (the token sees %d)", got, want, len(allTools))
	}
	for _, name := range got {
		if !strings.HasPrefix(name, "up__") {
			t.Errorf("the key sees %s, not a tool of profile eng", name)
		}
	}
	// Every call of the session, on whichever replica it lands, is the
	// key's: allowed in its profile, refused by name outside it.
	for range 3 {
		s.mustEcho(t, "up__echo", "hi")
	}
	if _, err := s.call("other__echo", map[string]any{"text": "no"}); err == nil || !strings.Contains(err.Error(), "profile eng") {
		t.Errorf("a tool outside the key's profile: %v; want a refusal naming the profile", err)
	}

	c := newRawClient(t, th.lb.URL)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + sessionVersion + `","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	c.expect(t, httpCase{name: "another profile", req: rawReq{method: "POST", path: "/profiles/ops/mcp", auth: "Bearer " + key, accept: acceptBoth, body: init},
		status: http.StatusForbidden, contains: "may not use profile ops"})
	c.expect(t, httpCase{name: "another server's endpoint", req: rawReq{method: "POST", path: "/other/mcp", auth: "Bearer " + key, accept: acceptBoth, body: init},
		status: http.StatusForbidden, contains: "may not use /other/mcp"})
	// A session is its opener's: another key that reaches the same
	// endpoint cannot use it, on whichever replica its request lands.
	code, stdout, _ = ph.cli(t, nil, "keys", "create", "admin", "--store", ph.storeURL)
	admin := strings.TrimSpace(stdout)
	if code != 0 {
		t.Fatalf("keys create admin: exit %d", code)
	}
	resp, _ := c.do(rawReq{method: "POST", path: "/mcp", auth: "Bearer " + token, accept: acceptBoth, body: init})
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize with the token: HTTP %d without a session", resp.StatusCode)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	for range 3 {
		c.expect(t, httpCase{name: "the opener's session", req: rawReq{method: "POST", path: "/mcp", sid: sid, auth: "Bearer " + token, accept: acceptBoth, body: list},
			status: http.StatusOK})
		c.expect(t, httpCase{name: "another caller's session", req: rawReq{method: "POST", path: "/mcp", sid: sid, auth: "Bearer " + admin, accept: acceptBoth, body: list},
			status: http.StatusNotFound})
	}

	// The control API is the token's alone; readiness tells a key the
	// verdict only.
	for _, path := range []string{"/control/sessions", "/control/catalog"} {
		c.expect(t, httpCase{name: "a key on " + path, req: rawReq{method: "GET", path: path, auth: "Bearer " + admin}, status: http.StatusForbidden, contains: "takes the hub's token only"})
	}
	if _, body := c.expect(t, httpCase{name: "readyz for a key", req: rawReq{method: "GET", path: "/readyz", auth: "Bearer " + key}, status: http.StatusOK}); strings.TrimSpace(string(body)) != `{"status":"ok"}` {
		t.Errorf("readyz for a key: %s; want the verdict alone", body)
	}

	// keys ls shows it, with its last use, and never the key.
	code, stdout, _ = ph.cli(t, nil, "keys", "ls", "--json", "--store", ph.storeURL)
	var listed []keyJSON
	if err := json.Unmarshal([]byte(stdout), &listed); code != 0 || err != nil || len(listed) != 2 || listed[1].Name != "ci" || listed[1].LastUsed == "" ||
		listed[1].State != "live" || !slices.Equal(listed[1].Profiles, []string{"eng"}) || listed[1].Expires == "" || strings.Contains(stdout, key) {
		t.Fatalf("keys ls --json: exit %d, %s (%v)", code, stdout, err)
	}

	// Revoked through one replica's store: every replica refuses it at
	// once, and the session it opened is of no use any more.
	if code, stdout, stderr := th.reps[1].cli(t, nil, "keys", "revoke", "ci", "--store", ph.storeURL); code != 0 || !strings.Contains(stdout, "Revoked API key ci") {
		t.Fatalf("keys revoke: exit %d, %q %q", code, stdout, stderr)
	}
	for i, rep := range th.reps {
		rc := newRawClient(t, rep.base())
		rc.expect(t, httpCase{name: "revoked key on r" + string(rune('0'+i)), req: rawReq{method: "POST", path: "/mcp", auth: "Bearer " + key, accept: acceptBoth, body: init},
			status: http.StatusUnauthorized, contains: "API key ci was revoked"})
	}
	if _, err := s.call("up__echo", map[string]any{"text": "after"}); err == nil {
		t.Error("the revoked key's session still calls tools")
	}
	if code, _, _ := ph.cli(t, nil, "keys", "revoke", "ci", "--store", ph.storeURL); code != 1 {
		t.Errorf("revoking a key that is no longer live: exit %d, want 1", code)
	}
	// A new key that takes the revoked one's name is another caller: the
	// old key's sessions are not its.
	code, stdout, _ = ph.cli(t, nil, "keys", "create", "ci", "--profile", "eng", "--store", ph.storeURL)
	again := strings.TrimSpace(stdout)
	if code != 0 {
		t.Fatalf("keys create ci again: exit %d", code)
	}
	for range 3 {
		c.expect(t, httpCase{name: "the revoked key's session under its name's new key", req: rawReq{method: "POST", path: "/mcp", sid: s.ID(), auth: "Bearer " + again, accept: acceptBoth, body: list},
			status: http.StatusNotFound})
	}
	logs := ""
	for _, r := range th.runs {
		logs += r.out.String()
	}
	if strings.Contains(logs, key) || strings.Contains(logs, token) {
		t.Error("a key or the token reached a replica's log")
	}
	if !strings.Contains(logs, "refused a request") || !strings.Contains(logs, "key:ci") {
		t.Error("the refusals are not in the replicas' logs with who was refused")
	}
}

// A key's rate limit holds across a team hub's replicas, as one bucket in
// the store: 3 replicas, one key at 10/s, tool calls as fast as possible on
// each replica, both in a session each replica holds and as stateless
// 2026-07-28 calls, until 60 are served. After the first second (the
// bucket's burst), the calls served come at 9 to 11 per second in all;
// every other call is refused: 429 with Retry-After outside a session,
// the JSON-RPC limit error inside one.
func TestTeamHubRateLimit(t *testing.T) {
	up := startUpstream(t, "up", upstreamOpts{})
	const token = "team-hub-token-rate-0123456789"
	th := startTeamWith(t, 3, "", token, remoteServer("up", up.url, `connect_timeout = "10s"`))
	code, stdout, stderr := th.reps[0].cli(t, nil, "keys", "create", "bot", "--rate", "10/s", "--store", th.reps[0].storeURL)
	key := strings.TrimSpace(stdout)
	if code != 0 {
		t.Fatalf("keys create: exit %d, %s", code, stderr)
	}
	sessions := make([]*sdkSession, len(th.reps))
	for i, rep := range th.reps {
		sessions[i] = connectSDK(t, rep.base()+"/mcp", sdkOpts{hc: withBearer(key)})
	}

	const want = 60
	var (
		mu                           sync.Mutex
		served                       []time.Time
		attempts, inSession, limited atomic.Int64
		wg                           sync.WaitGroup
	)
	enough := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(served) >= want
	}
	serve := func() {
		mu.Lock()
		served = append(served, time.Now())
		mu.Unlock()
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bot","version":"0"}}`
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"x"},` + meta + `}}`
	hc := &http.Client{}
	for i, rep := range th.reps {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for !enough() {
				attempts.Add(1)
				_, err := sessions[i].call("up__echo", map[string]any{"text": "x"})
				switch {
				case err == nil:
					serve()
				case strings.Contains(err.Error(), "may make 10/s requests"):
					inSession.Add(1)
				default:
					t.Errorf("a call in r%d's session: %v", i, err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for !enough() {
				attempts.Add(1)
				req, _ := http.NewRequest(http.MethodPost, rep.base()+"/mcp", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json")
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("MCP-Protocol-Version", "2026-07-28")
				req.Header.Set("Mcp-Method", "tools/call")
				req.Header.Set("Mcp-Name", "up__echo")
				resp, err := hc.Do(req)
				if err != nil {
					t.Errorf("a stateless call on r%d: %v", i, err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch {
				case resp.StatusCode == http.StatusOK && strings.Contains(string(b), `"result"`):
					serve()
				case resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "" && strings.Contains(string(b), "-32029"):
					limited.Add(1)
				default:
					t.Errorf("a stateless call on r%d: HTTP %d %s", i, resp.StatusCode, b)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	slices.SortFunc(served, func(a, b time.Time) int { return a.Compare(b) })
	// The first ten take the bucket's burst (and what the sessions'
	// initialize left of it); the rate is what comes after.
	const skip = 10
	window := served[len(served)-1].Sub(served[skip])
	rate := float64(len(served)-1-skip) / window.Seconds()
	t.Logf("%d calls attempted over %s: %d served, %d refused in sessions, %d refused with 429; %.2f calls/s after the burst",
		attempts.Load(), served[len(served)-1].Sub(served[0]).Round(time.Millisecond), len(served), inSession.Load(), limited.Load(), rate)
	if rate < 9 || rate > 11 {
		t.Errorf("%.2f calls/s served across 3 replicas for a key at 10/s; want 9 to 11", rate)
	}
	if attempts.Load() < 200 || inSession.Load() == 0 || limited.Load() == 0 {
		t.Errorf("%d attempts, %d refused in sessions, %d with 429; want at least 200 and refusals of both kinds", attempts.Load(), inSession.Load(), limited.Load())
	}
}

// A team hub shares one OAuth grant for a remote server among its replicas:
// mcphub login, pointed at the team's store with the secret key, keeps the
// grant in PostgreSQL sealed under that key (never in the clear); both
// replicas use it, and while the tokens expire every 2 s and the refresh
// token rotates, one replica at a time refreshes while the other calls:
// no call fails and no refresh token is sent twice. mcphub logout reaches
// every replica (none writes the grant back), a new login too; mcphub
// store rekey seals the grant under a new key.
func TestTeamHubSharedGrant(t *testing.T) {
	t.Setenv(keychain.EnvBackend, "file")
	useBrowser(t)
	fake := newOAuthFake(t)
	fake.setExpiresIn(2)
	u := pgtest.URL(t)
	newKey := func() string {
		raw := make([]byte, 32)
		rand.Read(raw)
		return base64.StdEncoding.EncodeToString(raw)
	}
	key := newKey()
	t.Setenv(storeEnv, u)
	t.Setenv(secretKeyEnv, key)

	dir := t.TempDir()
	cfg := filepath.Join(dir, "hub.toml")
	servers := remoteServer("tracker", fake.url, `connect_timeout = "10s"`)
	if err := os.WriteFile(cfg, []byte("[hub]\nlisten = \""+freeAddr(t)+"\"\n\n"+servers), 0o600); err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(append([]string{"--config", cfg, "--data-dir", filepath.Join(dir, "data")}, args...), &out, &errOut)
		fake.noSecrets(t, "mcphub "+args[0]+"'s output", out.String()+errOut.String())
		return code, out.String(), errOut.String()
	}
	if code, out, errOut := cli("login", "tracker", "--timeout", "60s"); code != 0 || !strings.Contains(out, "team store") {
		t.Fatalf("mcphub login: exit %d\n%s%s", code, out, errOut)
	}
	db, err := store.OpenURL(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	names, _ := db.GrantKeys()
	if len(names) != 1 {
		t.Fatalf("grants in the team's store: %v, want tracker's", names)
	}
	sealed, _ := db.Grant(names[0])
	fake.noSecrets(t, "the stored grant", string(sealed))

	th := startTeamOn(t, u, 2, "", "", servers, secretKeyEnv+"="+key)
	var sessions []*sdkSession
	for _, rep := range th.reps {
		sessions = append(sessions, connectSDK(t, rep.base()+"/mcp", sdkOpts{}))
	}
	good := func() int { c := fake.counts(); return c.refreshes - c.badRefreshes }
	start, calls := good(), 0
	for good()-start < 4 {
		for i, s := range sessions {
			calls++
			if got, err := s.call("tracker__echo", map[string]any{"text": "hi"}); err != nil || got != "tracker:hi" {
				t.Fatalf("call %d through replica %d while the replicas refresh: %q, %v", calls, i, got, err)
			}
		}
	}
	c := fake.counts()
	t.Logf("%d calls through 2 replicas over %d refreshes; %d refresh tokens sent twice; %d requests refused for want of a live token",
		calls, good()-start, c.badRefreshes, c.refused)
	if c.badRefreshes != 0 {
		t.Errorf("%d refreshes sent a refresh token already used; want one replica at a time", c.badRefreshes)
	}

	// mcphub logout reaches every replica: both need a sign-in, and no
	// replica writes the grant back.
	state := func(want string) {
		t.Helper()
		for i, rep := range th.reps {
			rep.waitStatus(t, th.runs[i], 30*time.Second, "tracker is "+want, func(st *api.Status) error {
				if s := findServer(st, "tracker"); s == nil || s.State != want {
					return fmt.Errorf("tracker is %+v", s)
				}
				return nil
			})
		}
	}
	if code, out, errOut := cli("logout", "tracker"); code != 0 || !strings.Contains(out, "every replica") {
		t.Fatalf("mcphub logout: exit %d\n%s%s", code, out, errOut)
	}
	state("needs-login")
	if _, err := db.Grant(names[0]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the grant after logout: %v; want it gone", err)
	}
	// And a new login reaches every replica too.
	if code, out, errOut := cli("login", "tracker", "--timeout", "60s"); code != 0 || !strings.Contains(out, "every replica") {
		t.Fatalf("mcphub login again: exit %d\n%s%s", code, out, errOut)
	}
	state("connected")
	for i, s := range sessions {
		if got, err := s.call("tracker__echo", map[string]any{"text": "again"}); err != nil || got != "tracker:again" {
			t.Errorf("a call through replica %d after the new login: %q, %v", i, got, err)
		}
	}
	logs := th.runs[0].out.String() + th.runs[1].out.String()
	fake.noSecrets(t, "the replicas' logs", logs)

	// Rotation, as mcphub store rekey --help tells it (the replicas are
	// stopped here; on a running team each step is a rolling restart):
	// the new key first, the old after it, then rekey, then the new alone.
	for _, r := range th.runs {
		r.stop()
	}
	fresh := newKey()
	t.Setenv(secretKeyEnv, fresh+","+key)
	code, out, errOut := cli("store", "rekey", "--json")
	var res team.RekeyResult
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Grants != 1 || res.Resealed != 1 {
		t.Fatalf("store rekey: exit %d, %s%s", code, out, errOut)
	}
	t.Setenv(secretKeyEnv, fresh)
	keys, _ := team.SecretKeys()
	resealed, _ := db.Grant(names[0])
	if _, err := keys.Open(resealed, names[0]); err != nil {
		t.Errorf("the grant after rekey does not open under the new key alone: %v", err)
	}
	if code, out, _ := cli("store", "rekey"); code != 0 || !strings.Contains(out, "0 sealed again") {
		t.Errorf("a second rekey: exit %d, %s", code, out)
	}
}

// A key's cap on calls at once holds across a team hub's replicas: with
// --concurrent-calls 2, two calls in progress on two replicas leave none
// for a third replica; once they end, the third goes through.
func TestTeamHubConcurrentCallsAcrossReplicas(t *testing.T) {
	up := startUpstream(t, "up", upstreamOpts{server: soakServer()})
	const token = "team-hub-token-calls-0123456789"
	th := startTeamWith(t, 3, "", token, remoteServer("up", up.url, `connect_timeout = "10s"`))
	code, stdout, stderr := th.reps[0].cli(t, nil, "keys", "create", "agent", "--concurrent-calls", "2", "--store", th.reps[0].storeURL)
	key := strings.TrimSpace(stdout)
	if code != 0 {
		t.Fatalf("keys create: exit %d, %s", code, stderr)
	}
	var sessions []*sdkSession
	for _, rep := range th.reps {
		sessions = append(sessions, connectSDK(t, rep.base()+"/mcp", sdkOpts{hc: withBearer(key)}))
	}
	admin := connectSDK(t, th.reps[0].base()+"/mcp", sdkOpts{hc: withBearer(token)})
	blocked := make(chan error, 2)
	for _, s := range sessions[:2] {
		go func() {
			_, err := s.call("up__block", map[string]any{})
			blocked <- err
		}()
	}
	eventually(t, 10*time.Second, "two calls in progress at the upstream", func() error {
		if n := admin.mustCall(t, "up__inflight", map[string]any{}); n != "2" {
			return fmt.Errorf("%s in progress", n)
		}
		return nil
	})
	if _, err := sessions[2].call("up__echo", map[string]any{"text": "third"}); err == nil || !strings.Contains(err.Error(), "may have 2 tool calls in progress at once") {
		t.Fatalf("a third call, on a third replica: %v; want the limit error", err)
	}
	admin.mustCall(t, "up__release", map[string]any{})
	for range 2 {
		if err := <-blocked; err != nil {
			t.Fatalf("a blocked call: %v", err)
		}
	}
	sessions[2].mustEcho(t, "up__echo", "third")
}
