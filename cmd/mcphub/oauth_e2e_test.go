package main

// End-to-end tests of the sign-in to remote servers behind OAuth: mcphub
// login and logout, probe's sign-in, and a hub that uses, refreshes and
// loses the tokens login kept. The authorization server and the MCP server
// are the fake of oauth_fake_test.go; the browser is this test binary. No
// token, refresh token, code or verifier may show in any command's output
// or in the hub's log.

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/hub"
	"github.com/mcphub/mcphub/internal/keychain"
	"github.com/mcphub/mcphub/oauth"
)

// oauthEnv is one test's registry (server tracker, the fake), data
// directory, browser and, once started, hub.
type oauthEnv struct {
	t       *testing.T
	fake    *oauthFake
	servers string
	config  string
	dataDir string
	outputs []string   // what every command printed, for the secret check
	hubLog  *logBuffer // nil until startHub
}

// newOAuthEnv sets the test up with tokens that expire in expiresIn
// seconds. The OS keychain is never touched: MCPHUB_KEYCHAIN=file. At
// cleanup, after the hub stopped, every output and the hub's log are
// searched for the fake's secrets.
func newOAuthEnv(t *testing.T, expiresIn int) *oauthEnv {
	t.Helper()
	t.Setenv(keychain.EnvBackend, "file")
	useBrowser(t)
	e := &oauthEnv{t: t, fake: newOAuthFake(t)}
	e.fake.setExpiresIn(expiresIn)
	dir := t.TempDir()
	e.servers = remoteServer("tracker", e.fake.url, "")
	e.config, e.dataDir = filepath.Join(dir, "hub.toml"), filepath.Join(dir, "data")
	e.writeConfig(freeAddr(t)) // no hub answers there until startHub
	t.Cleanup(func() {
		for i, out := range e.outputs {
			e.fake.noSecrets(t, fmt.Sprintf("output %d", i), out)
		}
		if e.hubLog != nil {
			e.fake.noSecrets(t, "the hub's log", e.hubLog.String())
		}
	})
	return e
}

// writeConfig writes the registry the commands read, with the hub at listen.
func (e *oauthEnv) writeConfig(listen string) {
	e.t.Helper()
	text := fmt.Sprintf("[hub]\nlisten = %q\n\n%s", listen, e.servers)
	if err := os.WriteFile(e.config, []byte(text), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// cli runs mcphub in this process on the test's registry and data
// directory.
func (e *oauthEnv) cli(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(append([]string{"--config", e.config, "--data-dir", e.dataDir}, args...), &out, &errOut)
	e.outputs = append(e.outputs, out.String(), errOut.String())
	return code, out.String(), errOut.String()
}

// login runs mcphub login tracker, which must succeed, and returns its
// stdout.
func (e *oauthEnv) login() string {
	e.t.Helper()
	code, out, errOut := e.cli("login", "tracker", "--timeout", "60s")
	if code != 0 {
		e.t.Fatalf("mcphub login tracker exited %d:\n%s%s", code, out, errOut)
	}
	return out
}

// grant is what the store holds for tracker, read as the hub reads it.
func (e *oauthEnv) grant() *oauth.Grant {
	e.t.Helper()
	g, err := oauth.LoadGrant(keychain.Open("mcphub", e.dataDir), e.fake.url)
	if err != nil {
		e.t.Fatalf("LoadGrant: %v", err)
	}
	return g
}

// startHub starts a hub in this process wired as serve wires one: the
// remote upstreams sign in with the grants of the data directory's store
// and never open a browser. The registry then names its address, for the
// commands. It waits for tracker to connect.
func (e *oauthEnv) startHub() *inprocHub {
	e.t.Helper()
	e.hubLog = &logBuffer{}
	tokens := keychain.Open("mcphub", e.dataDir)
	f := startInproc(e.t, e.servers, hubConfig{tweak: func(o *hub.Options) {
		log := slog.New(slog.NewTextHandler(e.hubLog, &slog.HandlerOptions{Level: slog.LevelDebug}))
		o.Logger, o.NewUpstream = log, newStoredUpstream(log, nil, tokens, nil)
	}})
	e.t.Cleanup(func() {
		if e.t.Failed() || os.Getenv("E2E_LOG") != "" {
			e.t.Logf("hub log:\n%s", e.hubLog)
		}
	})
	e.writeConfig(strings.TrimPrefix(f.url, "http://"))
	return f
}

// status is tracker's entry of mcphub status --json.
func (e *oauthEnv) status() (api.ServerStatus, error) {
	st, err := statusCLI(e.t, e.config, e.dataDir, "tracker")
	e.outputs = append(e.outputs, st.LastError)
	return st, err
}

func mustContain(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s does not say %q:\n%s", what, w, text)
		}
	}
}

func TestLoginThenHubUsesTokens(t *testing.T) {
	e := newOAuthEnv(t, 3600)
	out := e.login()
	mustContain(t, "mcphub login's output", out, "signed in to tracker", "2 tools", "file: ", "no hub running")
	after := e.fake.counts()
	if after.registers != 1 || after.authorizes != 1 || after.exchanges != 1 {
		t.Fatalf("login: %+v; want one registration, one authorization, one code exchange", after)
	}
	path := filepath.Join(e.dataDir, keychain.FileName)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("the tokens are not in %s: %v", path, err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", path, fi.Mode().Perm())
	}
	g := e.grant()
	if g == nil || g.Token == nil || g.Token.AccessToken == "" || g.Token.RefreshToken == "" || g.ClientID == "" {
		t.Fatalf("stored grant after login: %+v", g)
	}

	f := e.startHub()
	s := f.connect("/mcp", nil)
	s.waitTools(t, []string{"tracker__echo"}, nil) // the catalog is published a moment after the server connects
	s.mustEcho(t, "tracker__echo", "hello through the hub")
	if tok := lastToken(e.fake.served(), "tools/call", "echo"); tok != g.Token.AccessToken {
		t.Errorf("the hub's call carried another token than the one login stored")
	}
	if c := e.fake.counts(); c != after {
		t.Errorf("counts after the hub's call: %+v; want them as login left them, %+v (no new sign-in, no refusal)", c, after)
	}
	if st, err := e.status(); err != nil || st.State != api.StateConnected {
		t.Errorf("mcphub status: %+v, %v; want tracker connected", st, err)
	}
}

// TestHubRefreshesBeforeExpiry holds a call open on the hub while the
// token is refreshed under it. Two lifetimes: 22 s, which the background
// refresher renews ahead of expiry (at half its life here, since a token
// within 10 s of expiry counts as expired), with no refresh until then;
// and 4 s, within that margin from the start, which is refreshed before
// every request.
func TestHubRefreshesBeforeExpiry(t *testing.T) {
	t.Run("refresher", func(t *testing.T) { refreshAcrossCall(t, 22, true) })
	t.Run("short-lived", func(t *testing.T) { refreshAcrossCall(t, 4, false) })
}

// refreshAcrossCall signs in with tokens that last expiresIn seconds,
// starts a hub, holds a slow call open until a refresh happened, and checks
// that the call, the session and the stored grant survived it. With quiet,
// no refresh may happen before the slow call starts.
func refreshAcrossCall(t *testing.T, expiresIn int, quiet bool) {
	e := newOAuthEnv(t, expiresIn)
	e.login()
	g0 := e.grant()
	rt0 := g0.Token.RefreshToken
	mark, before := len(e.fake.served()), e.fake.counts()

	f := e.startHub()
	s := f.connect("/mcp", nil)
	s.waitTools(t, []string{"tracker__echo"}, nil) // the catalog is published a moment after the server connects
	type result struct {
		text string
		err  error
	}
	done := make(chan result, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go func() {
		text, err := s.callText(ctx, "tracker__slow", map[string]any{})
		done <- result{text, err}
	}()
	select {
	case <-e.fake.slowStarted:
	case r := <-done:
		t.Fatalf("the slow call returned before it was released: %q, %v", r.text, r.err)
	case <-time.After(20 * time.Second):
		t.Fatal("the slow call did not reach the server within 20s")
	}
	slowTok := lastToken(e.fake.served(), "tools/call", "slow")
	refreshes := e.fake.counts().refreshes
	if quiet && refreshes != before.refreshes {
		t.Errorf("%d refreshes before the slow call started; want none while the token is far from expiry", refreshes-before.refreshes)
	}
	eventually(t, time.Duration(max(expiresIn, 15))*time.Second, "a refresh while the slow call is open", func() error {
		select {
		case r := <-done:
			t.Fatalf("the slow call returned before it was released: %q, %v", r.text, r.err)
		default:
		}
		if n := e.fake.counts().refreshes; n <= refreshes {
			return fmt.Errorf("%d refreshes, as when the call started", n)
		}
		return nil
	})
	if quiet && !time.Now().Before(g0.Token.Expiry) {
		t.Errorf("the first refresh came after login's token expired at %s", g0.Token.Expiry.Format(time.TimeOnly))
	}
	// The authorization server counts a refresh as it answers; the hub
	// then takes the new token in and stores it. A stored new refresh
	// token shows the hub has it, so the next call must carry it.
	eventually(t, 10*time.Second, "the hub stores the refreshed grant", func() error {
		if g := e.grant(); g == nil || g.Token == nil || g.Token.RefreshToken == rt0 {
			return fmt.Errorf("the store still holds login's refresh token")
		}
		return nil
	})
	e.fake.releaseSlow()
	select {
	case r := <-done:
		if r.err != nil || r.text != "slow done" {
			t.Fatalf("the slow call held across the refresh: %q, %v; want \"slow done\"", r.text, r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the slow call did not return within 20s of its release")
	}

	s.mustEcho(t, "tracker__echo", "after the refresh")
	reqs := e.fake.served()[mark:]
	if tok := lastToken(reqs, "tools/call", "echo"); tok == "" || tok == slowTok {
		t.Errorf("the call after the refresh carried the token the slow call had, not a new one")
	}
	if n := countReqs(reqs, "initialize", ""); n != 1 {
		t.Errorf("the hub initialized %d sessions with the server; want 1 (a refresh must not reconnect)", n)
	}
	if c := e.fake.counts(); c.refused != before.refused || c.authorizes != before.authorizes {
		t.Errorf("counts: %+v, before the hub %+v; want no refused request (no expired token sent) and no new sign-in", c, before)
	}
	eventually(t, 10*time.Second, "the store holds the rotated refresh token", func() error {
		g := e.grant()
		if g == nil || g.Token == nil {
			return fmt.Errorf("no token stored: %+v", g)
		}
		if g.Token.RefreshToken == rt0 {
			return fmt.Errorf("the store still holds login's refresh token")
		}
		if live, _ := e.fake.liveRefreshToken(g.Token.RefreshToken); !live {
			return fmt.Errorf("the stored refresh token was rotated out")
		}
		return nil
	})
}

func TestHubNeedsLoginWhenRefreshFails(t *testing.T) {
	e := newOAuthEnv(t, 4)
	e.login()
	f := e.startHub()
	s := f.connect("/mcp", nil)
	s.waitTools(t, []string{"tracker__echo"}, nil) // the catalog is published a moment after the server connects
	s.mustEcho(t, "tracker__echo", "before")

	e.fake.setRefreshErr("invalid_grant")
	var st api.ServerStatus
	eventually(t, 20*time.Second, "tracker shows needs-login", func() error {
		var err error
		if st, err = e.status(); err != nil {
			return err
		}
		if st.State != api.StateNeedsLogin {
			return fmt.Errorf("tracker is %s (%s)", st.State, st.LastError)
		}
		return nil
	})
	mustContain(t, "tracker's last error", st.LastError, "mcphub login tracker")
	if g := e.grant(); g == nil || g.Token != nil || g.ClientID == "" {
		t.Errorf("stored grant after the refused refresh: %+v; want the registration kept and the token dropped", g)
	}

	_, err := s.call("tracker__echo", map[string]any{"text": "while signed out"})
	if err == nil {
		t.Fatal("a call to tracker succeeded while it needs login")
	}
	e.outputs = append(e.outputs, err.Error())
	mustContain(t, "the failed call's error", err.Error(), "mcphub login tracker")

	code, _, errOut := e.cli("tools", "ls")
	mustContain(t, fmt.Sprintf("mcphub tools ls (exit %d)", code), errOut, "server tracker needs you to sign in: run mcphub login tracker")

	// Signing in again, with the hub running, brings tracker back.
	e.fake.setRefreshErr("")
	e.fake.setExpiresIn(3600)
	mustContain(t, "mcphub login's output with a hub running", e.login(), "signed in to tracker", "reconnecting tracker")
	eventually(t, 20*time.Second, "tracker connected after login", func() error {
		st, err := e.status()
		if err == nil && st.State != api.StateConnected {
			err = fmt.Errorf("tracker is %s (%s)", st.State, st.LastError)
		}
		return err
	})
	s.mustEcho(t, "tracker__echo", "signed in again")
}

func TestLogout(t *testing.T) {
	e := newOAuthEnv(t, 3600)
	e.login()
	if g := e.grant(); g == nil || g.Token == nil {
		t.Fatalf("stored grant after login: %+v", g)
	}
	code, out, errOut := e.cli("logout", "tracker")
	if code != 0 {
		t.Fatalf("mcphub logout tracker exited %d:\n%s%s", code, out, errOut)
	}
	mustContain(t, "mcphub logout's output", out, "signed out of tracker", "no hub running")
	if g := e.grant(); g != nil {
		t.Errorf("stored grant after logout: %+v; want none", g)
	}
}

func TestProbeSignIn(t *testing.T) {
	e := newOAuthEnv(t, 3600)
	code, out, errOut := e.cli("probe", "--url", e.fake.url, "--call", "echo", "--args", `{"text":"probed"}`)
	if code != 0 {
		t.Fatalf("mcphub probe exited %d:\n%s%s", code, out, errOut)
	}
	mustContain(t, "mcphub probe's output", out, "echo", "slow", "tracker:probed")
	if c := e.fake.counts(); c.authorizes != 1 || c.exchanges != 1 {
		t.Errorf("probe: %+v; want one authorization and one code exchange", c)
	}
	if _, err := os.Stat(filepath.Join(e.dataDir, keychain.FileName)); !os.IsNotExist(err) {
		t.Errorf("probe without --save left %s in the data directory (%v)", keychain.FileName, err)
	}
	if g := e.grant(); g != nil {
		t.Errorf("probe without --save stored a grant: %+v", g)
	}

	code, out, errOut = e.cli("probe", "--url", e.fake.url, "--save", "tracker", "--call", "echo", "--args", `{"text":"saved"}`)
	if code != 0 {
		t.Fatalf("mcphub probe --save tracker exited %d:\n%s%s", code, out, errOut)
	}
	mustContain(t, "mcphub probe --save's output", out, "tracker:saved")
	g := e.grant()
	if g == nil || g.Token == nil || g.Token.AccessToken == "" {
		t.Fatalf("probe --save tracker stored %+v; want a grant with a token", g)
	}
	if live, last := e.fake.liveRefreshToken(g.Token.RefreshToken); !live || !last {
		t.Errorf("probe --save stored a refresh token the server no longer takes, or not its last one (live %v, last %v)", live, last)
	}
}

// TestFailedLoginKeepsTheOldToken: a login the user refuses, or whose
// code the authorization server does not take, fails (exit 1) and leaves
// the token stored before as it was.
func TestFailedLoginKeepsTheOldToken(t *testing.T) {
	for _, mode := range []string{"deny", "badcode"} {
		t.Run(mode, func(t *testing.T) {
			e := newOAuthEnv(t, 3600)
			e.login()
			before := e.grant()
			t.Setenv(browserModeEnv, mode)
			code, out, errOut := e.cli("login", "tracker", "--timeout", "20s")
			if code == 0 || strings.Contains(out, "signed in to tracker") {
				t.Errorf("a failed login exited %d:\n%s%s", code, out, errOut)
			}
			if g := e.grant(); g == nil || g.Token == nil || g.Token.AccessToken != before.Token.AccessToken {
				t.Errorf("the token stored before is gone: %+v", g)
			}
		})
	}
}
