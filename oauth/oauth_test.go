package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"

	"github.com/mcphub/mcphub/internal/oauthtest"
	"github.com/mcphub/mcphub/internal/testkit"
)

// The tests of OAuth sign-in run against oauthtest's fake authorization
// server and a fake MCP server that wants its tokens, both on loopback.

// fakeResource is an MCP server that answers every request it accepts
// with an empty result, behind oauthtest's Bearer check.
type fakeResource struct {
	*oauthtest.Resource

	mu     sync.Mutex
	handle func(w http.ResponseWriter, r *http.Request, m *rpcRequest) bool // answers a request itself when it returns true
}

// rpcRequest is what fakeResource reads of a JSON-RPC request.
type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name string `json:"name"`
	} `json:"params"`
}

func newFakeResource(t *testing.T, as *oauthtest.AuthServer) *fakeResource {
	res := &fakeResource{}
	res.Resource = oauthtest.NewResource(t, as, "/mcp", http.HandlerFunc(res.serve))
	return res
}

// serve answers a request the resource accepted.
func (res *fakeResource) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var m rpcRequest
	json.Unmarshal(body, &m)
	res.mu.Lock()
	handle := res.handle
	res.mu.Unlock()
	if handle != nil && handle(w, r, &m) {
		return
	}
	oauthtest.WriteJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{}})
}

// setForbid makes f decide the scope each request lacks ("" for none).
func (res *fakeResource) setForbid(f func(m *rpcRequest) string) {
	if f == nil {
		res.SetForbid(nil)
		return
	}
	res.SetForbid(func(body []byte) string {
		var m rpcRequest
		json.Unmarshal(body, &m)
		return f(&m)
	})
}

func (res *fakeResource) setHandle(f func(w http.ResponseWriter, r *http.Request, m *rpcRequest) bool) {
	res.mu.Lock()
	res.handle = f
	res.mu.Unlock()
}

// storedGrant is the grant s holds for serverURL.
func storedGrant(t *testing.T, s TokenStore, serverURL string) *Grant {
	t.Helper()
	g, err := LoadGrant(s, serverURL)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// testConn is a connection in miniature: an Authorizer, and the HTTP
// client its transport carries, which posts JSON-RPC requests to the MCP
// server's URL.
type testConn struct {
	a      *Authorizer
	hc     *http.Client
	url    string
	cancel context.CancelFunc
	once   sync.Once
}

// newOAuthConn prepares a connection to res with oc; start it with
// startOAuth, after setting any test hook.
func newOAuthConn(t *testing.T, res *fakeResource, oc *Config) (*testConn, *testkit.SyncBuffer) {
	t.Helper()
	logs := &testkit.SyncBuffer{}
	c := newTestConn(t, Options{URL: res.URL, Config: *oc,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	return c, logs
}

// newTestConn is a connection with o, closed when the test ends.
func newTestConn(t *testing.T, o Options) *testConn {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	o.Context = ctx
	a, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	c := &testConn{a: a, hc: &http.Client{Transport: a.Transport()}, url: o.URL, cancel: cancel}
	t.Cleanup(c.Close)
	return c
}

// Close ends the connection as client.Conn does: its life first, then
// the Authorizer.
func (c *testConn) Close() {
	c.once.Do(func() {
		c.cancel()
		c.a.Close()
	})
}

// startOAuth starts c as client.Conn.Start does: the stored grant is
// loaded, then the first request (initialize) goes out, signing in when
// the server asks.
func startOAuth(t *testing.T, c *testConn) {
	t.Helper()
	if err := c.a.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if _, err := call(t, c, "initialize", ""); err != nil {
		t.Fatalf("initialize: %v", err)
	}
}

// statusError is a request the server refused, as the Authorizer left it.
type statusError struct{ status int }

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d", e.status) }

// call posts one JSON-RPC request and returns the answer's body; a
// refusal is a *statusError.
func call(t *testing.T, c *testConn, method string, params string) (json.RawMessage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if params == "" {
		params = "{}"
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, &statusError{resp.StatusCode}
	}
	return b, err
}

// signIn signs in to res once, with a connection that is closed after.
func signIn(t *testing.T, res *fakeResource, store TokenStore) *Grant {
	t.Helper()
	var fetches atomic.Int32
	c, _ := newOAuthConn(t, res, &Config{Store: store, Fetch: oauthtest.Headless(&fetches), RedirectURL: oauthtest.RedirectURL})
	startOAuth(t, c)
	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Fatalf("tools/list after sign-in: %v", err)
	}
	c.Close()
	g, err := LoadGrant(store, res.URL)
	if err != nil || !g.hasToken() {
		t.Fatalf("no grant stored after sign-in: %+v, %v", g, err)
	}
	return g
}

// fakeTimers stands in for the refresher's timers: each one is announced
// with its duration, and fires when the test says.
type fakeTimers struct{ ch chan fakeTimer }

type fakeTimer struct {
	d    time.Duration
	fire chan time.Time
}

func useFakeTimers(c *testConn) *fakeTimers {
	ft := &fakeTimers{ch: make(chan fakeTimer, 16)}
	c.a.newTimer = func(d time.Duration) (<-chan time.Time, func() bool) {
		fire := make(chan time.Time, 1)
		ft.ch <- fakeTimer{d: d, fire: fire}
		return fire, func() bool { return true }
	}
	return ft
}

func (ft *fakeTimers) next(t *testing.T) fakeTimer {
	t.Helper()
	select {
	case tm := <-ft.ch:
		return tm
	case <-time.After(10 * time.Second):
		t.Fatal("the refresher set no timer")
		return fakeTimer{}
	}
}

func TestCanonicalResource(t *testing.T) {
	for in, want := range map[string]string{
		"HTTPS://Example.COM/mcp/":               "https://example.com/mcp",
		"https://example.com:443/mcp?key=s3cr#x": "https://example.com/mcp",
		"http://user:pw@127.0.0.1:8080/a/b/":     "http://127.0.0.1:8080/a/b",
		"https://example.com/":                   "https://example.com",
		"http://[::1]:80/mcp":                    "http://[::1]/mcp",
	} {
		if got := CanonicalResource(in); got != want {
			t.Errorf("CanonicalResource(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOAuthSignInThenStoredGrant signs in through a headless fetcher, then
// checks that the grant is stored whole and that a second connection uses
// it without signing in.
func TestOAuthSignInThenStoredGrant(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "a")
	res := newFakeResource(t, as)
	store := oauthtest.NewMemStore()
	var fetches atomic.Int32
	var changes atomic.Int32
	oc := &Config{Store: store, Fetch: oauthtest.Headless(&fetches), RedirectURL: oauthtest.RedirectURL, OnChange: func() { changes.Add(1) }}
	c, logs := newOAuthConn(t, res, oc)
	startOAuth(t, c)
	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("signed in %d times, want 1", n)
	}
	g := storedGrant(t, store, res.URL)
	if g == nil {
		t.Fatal("no grant stored")
	}
	if g.Issuer != as.Issuer() || g.ClientID != "client-a-1" || g.ClientSecret != "client-secret-a-1" || g.AuthStyle != oauth2.AuthStyleInHeader ||
		!g.Dynamic || g.RedirectURL != oauthtest.RedirectURL || g.TokenURL != as.Issuer()+"/token" || !g.hasToken() || g.Token.RefreshToken == "" {
		t.Errorf("stored grant = %+v", g)
	}
	if !slices.Contains(g.Scopes, "mcp:read") {
		t.Errorf("granted scopes %v lack mcp:read", g.Scopes)
	}
	if changes.Load() == 0 {
		t.Error("OnChange was not told of the new grant")
	}
	if res.LastBearer() != "Bearer "+g.Token.AccessToken {
		t.Errorf("the last request carried %q", res.LastBearer())
	}
	c.Close()
	testkit.NoSecrets(t, "the logs", logs.String(), g.Token.AccessToken, g.Token.RefreshToken, g.ClientSecret, "auth-code-a")

	// A new connection, which cannot sign in, uses the stored grant.
	c2, _ := newOAuthConn(t, res, &Config{Store: store})
	startOAuth(t, c2)
	if _, err := call(t, c2, "tools/call", `{"name":"x"}`); err != nil {
		t.Fatalf("tools/call on the stored grant: %v", err)
	}
	if registers, authorizes, _ := as.Counts(); registers != 1 || authorizes != 1 {
		t.Errorf("registered %d and authorized %d times, want once each", registers, authorizes)
	}
	if !res.SawBearer(g.Token.AccessToken) {
		t.Error("the stored token was not used")
	}
}

// TestOAuthBackgroundRefresh checks that the refresher renews the token at
// about 80% of its life, that the next requests carry the new token and
// that the rotated refresh token is stored.
func TestOAuthBackgroundRefresh(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "a")
	res := newFakeResource(t, as)
	store := oauthtest.NewMemStore()
	first := signIn(t, res, store)

	changed := make(chan struct{}, 16)
	c, logs := newOAuthConn(t, res, &Config{Store: store, OnChange: func() { changed <- struct{}{} }})
	timers := useFakeTimers(c)
	startOAuth(t, c)
	tm := timers.next(t)
	if life := time.Hour; tm.d > life*4/5 || tm.d < life*4/5-life/20-time.Minute {
		t.Errorf("first refresh due in %v, want about 80%% of %v", tm.d, life)
	}
	tm.fire <- time.Now()
	second := testkit.Recv(t, as.Refreshed, "a refresh")
	testkit.Recv(t, changed, "the refreshed grant to be stored")
	timers.next(t) // the refresher waits for the next one

	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Fatalf("tools/list after the refresh: %v", err)
	}
	if got := res.LastBearer(); got != "Bearer "+second {
		t.Errorf("after the refresh a request carried %q, want the new token", got)
	}
	g := storedGrant(t, store, res.URL)
	if g.Token.AccessToken != second || g.Token.RefreshToken == first.Token.RefreshToken || g.Token.RefreshToken == "" {
		t.Errorf("stored token after the refresh: access %q refresh %q (first refresh %q)", g.Token.AccessToken, g.Token.RefreshToken, first.Token.RefreshToken)
	}
	if g.ClientID != first.ClientID || g.Issuer != first.Issuer {
		t.Errorf("the refresh changed the registration: %+v", g)
	}
	testkit.NoSecrets(t, "the logs", logs.String(), first.Token.AccessToken, first.Token.RefreshToken, second, g.Token.RefreshToken, g.ClientSecret)
}

// TestOAuthExpiredTokenRefreshedBeforeUse checks that a stored token past
// its expiry is refreshed before the request goes out.
func TestOAuthExpiredTokenRefreshedBeforeUse(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "a")
	res := newFakeResource(t, as)
	store := oauthtest.NewMemStore()
	g := signIn(t, res, store)
	g.Token.Expiry = time.Now().Add(-time.Minute)
	data, _ := json.Marshal(g)
	store.Save(CanonicalResource(res.URL), data)
	as.Revoke() // the old token would be refused
	mark := res.Mark()

	c, _ := newOAuthConn(t, res, &Config{Store: store})
	startOAuth(t, c)
	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if _, _, refreshes := as.Counts(); refreshes != 1 {
		t.Errorf("%d refreshes, want 1", refreshes)
	}
	if res.SawBearerSince(mark, g.Token.AccessToken) {
		t.Error("the expired token was sent")
	}
}

// TestOAuthRefreshRejected checks that a refresh refused with
// invalid_grant drops the token (not the registration), tells
// OnRefreshFailed, and that the next request goes without a token and
// gets the server's 401 (the connection reports that sign-in is needed),
// with no secret in any error.
func TestOAuthRefreshRejected(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "a")
	res := newFakeResource(t, as)
	store := oauthtest.NewMemStore()
	g := signIn(t, res, store)
	as.SetRefreshErr("invalid_grant")

	failed := make(chan error, 1)
	c, logs := newOAuthConn(t, res, &Config{Store: store, OnRefreshFailed: func(err error) { failed <- err }})
	timers := useFakeTimers(c)
	startOAuth(t, c)
	timers.next(t).fire <- time.Now()
	err := testkit.Recv(t, failed, "OnRefreshFailed")
	if !strings.Contains(err.Error(), "invalid_grant") {
		t.Errorf("OnRefreshFailed(%v) does not say why", err)
	}
	secrets := []string{g.Token.AccessToken, g.Token.RefreshToken, g.ClientSecret}
	testkit.NoSecrets(t, "the refresh error", err.Error(), secrets...)

	stored := storedGrant(t, store, res.URL)
	if stored == nil || stored.Token != nil || stored.ClientID != g.ClientID || stored.ClientSecret != g.ClientSecret {
		t.Errorf("stored grant after invalid_grant = %+v, want the registration without a token", stored)
	}
	_, err = call(t, c, "tools/list", "")
	var ae *SignInError
	if se := (*statusError)(nil); !errors.As(err, &se) || se.status != http.StatusUnauthorized || errors.As(err, &ae) {
		t.Fatalf("tools/list after the token was dropped: %v, want the server's 401 as it came", err)
	}
	testkit.NoSecrets(t, "the error", err.Error(), secrets...)
	testkit.NoSecrets(t, "the logs", logs.String(), secrets...)
}

// TestOAuthRefreshRetriesWithBackoff checks that a refresh that fails for
// a reason that may pass is retried after 1 s, then 2 s, and succeeds
// without dropping anything.
func TestOAuthRefreshRetriesWithBackoff(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "a")
	res := newFakeResource(t, as)
	store := oauthtest.NewMemStore()
	signIn(t, res, store)
	as.SetUnavailable(2)
	failed := make(chan error, 1)
	c, _ := newOAuthConn(t, res, &Config{Store: store, OnRefreshFailed: func(err error) { failed <- err }})
	timers := useFakeTimers(c)
	startOAuth(t, c)
	timers.next(t).fire <- time.Now()
	for _, want := range []time.Duration{time.Second, 2 * time.Second} {
		tm := timers.next(t)
		if tm.d != want {
			t.Errorf("retry due in %v, want %v", tm.d, want)
		}
		tm.fire <- time.Now()
	}
	fresh := testkit.Recv(t, as.Refreshed, "the refresh that succeeds")
	if tm := timers.next(t); tm.d < 40*time.Minute {
		t.Errorf("after a successful refresh the next is due in %v", tm.d)
	}
	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if res.LastBearer() != "Bearer "+fresh {
		t.Errorf("a request carried %q, want the refreshed token", res.LastBearer())
	}
	select {
	case err := <-failed:
		t.Errorf("OnRefreshFailed(%v) for a failure that passed", err)
	default:
	}
}

// TestOAuthSignInAgainReusesRegistration checks that a new sign-in with
// the same authorization server reuses the stored client registration.
func TestOAuthSignInAgainReusesRegistration(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "a")
	res := newFakeResource(t, as)
	store := oauthtest.NewMemStore()
	first := signIn(t, res, store)
	as.Revoke()
	g := signIn(t, res, store)
	registers, authorizes, _ := as.Counts()
	if registers != 1 || authorizes != 2 {
		t.Errorf("registered %d times and authorized %d, want 1 and 2", registers, authorizes)
	}
	if g.ClientID != first.ClientID || g.Token.AccessToken == first.Token.AccessToken {
		t.Errorf("second grant %+v", g)
	}
}

// TestOAuthAuthorizationServerMigration checks that when the server
// points at another authorization server, the stored registration is not
// presented to it: a new one is made, and the grant replaced.
func TestOAuthAuthorizationServerMigration(t *testing.T) {
	as1 := oauthtest.NewAuthServer(t, "one")
	as2 := oauthtest.NewAuthServer(t, "two")
	res := newFakeResource(t, as1)
	store := oauthtest.NewMemStore()
	first := signIn(t, res, store)
	res.SetAS(as2)
	g := signIn(t, res, store)
	if g.Issuer != as2.Issuer() || g.ClientID != "client-two-1" {
		t.Errorf("grant after the move = issuer %q client %q, want %q client-two-1", g.Issuer, g.ClientID, as2.Issuer())
	}
	if r1, a1, _ := as1.Counts(); r1 != 1 || a1 != 1 {
		t.Errorf("the first server saw %d registrations and %d authorizations after the move", r1-1, a1-1)
	}
	if r2, _, _ := as2.Counts(); r2 != 1 {
		t.Errorf("the second server saw %d registrations, want 1", r2)
	}
	_, leaked := as2.ClientSecret(first.ClientID)
	if leaked {
		t.Error("the first server's client was presented to the second")
	}
}

// TestOAuthConcurrentRefusalsSignInOnce revokes the token, then sends ten
// calls at once: all are refused together, one sign-in answers them all.
func TestOAuthConcurrentRefusalsSignInOnce(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "a")
	res := newFakeResource(t, as)
	store := oauthtest.NewMemStore()
	var fetches atomic.Int32
	c, _ := newOAuthConn(t, res, &Config{Store: store, Fetch: oauthtest.Headless(&fetches), RedirectURL: oauthtest.RedirectURL})
	startOAuth(t, c)
	as.Revoke()
	res.HoldRefusals(10)
	errs := make(chan error, 10)
	for i := range 10 {
		go func() {
			_, err := call(t, c, "tools/call", fmt.Sprintf(`{"name":"t%d"}`, i))
			errs <- err
		}()
	}
	for range 10 {
		if err := testkit.Recv(t, errs, "a call"); err != nil {
			t.Errorf("call: %v", err)
		}
	}
	if n := fetches.Load(); n != 2 {
		t.Errorf("signed in %d times, want 2 (the first and one for the ten refusals)", n)
	}
	if _, authorizes, _ := as.Counts(); authorizes != 2 {
		t.Errorf("%d authorization requests, want 2", authorizes)
	}
}

// TestOAuthStepUpCapped checks that a 403 insufficient_scope leads to a
// sign-in asking for the new scope and the old ones, and that the same
// refusal gets at most three sign-ins.
func TestOAuthStepUpCapped(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "a")
	res := newFakeResource(t, as)
	res.setForbid(func(m *rpcRequest) string {
		if m.Method == "tools/call" && m.Params.Name == "write" {
			return "mcp:write"
		}
		return ""
	})
	var fetches atomic.Int32
	c, _ := newOAuthConn(t, res, &Config{Store: oauthtest.NewMemStore(), Fetch: oauthtest.Headless(&fetches), RedirectURL: oauthtest.RedirectURL})
	startOAuth(t, c)
	for i := range 5 {
		_, err := call(t, c, "tools/call", `{"name":"write"}`)
		var he *statusError
		if !errors.As(err, &he) || he.status != http.StatusForbidden {
			t.Fatalf("call %d: %v, want HTTP 403", i, err)
		}
	}
	if n := fetches.Load(); n != 1+maxAuthorize {
		t.Errorf("signed in %d times, want %d (the first and %d step-ups)", n, 1+maxAuthorize, maxAuthorize)
	}
	scopes := as.Scopes()
	last := strings.Fields(scopes[len(scopes)-1])
	if !slices.Contains(last, "mcp:write") || !slices.Contains(last, "mcp:read") {
		t.Errorf("the step-up asked for %v, want mcp:write with mcp:read", last)
	}
	// A 403 without insufficient_scope is final.
	res.setForbid(nil)
	if _, err := call(t, c, "tools/call", `{"name":"other"}`); err != nil {
		t.Errorf("a call that needs no more scope: %v", err)
	}
}

// TestOAuthForbiddenIsFinal checks that a 403 without insufficient_scope
// never leads to a sign-in.
func TestOAuthForbiddenIsFinal(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "a")
	res := newFakeResource(t, as)
	var fetches atomic.Int32
	c, _ := newOAuthConn(t, res, &Config{Fetch: oauthtest.Headless(&fetches), RedirectURL: oauthtest.RedirectURL})
	startOAuth(t, c)
	res.setHandle(func(w http.ResponseWriter, r *http.Request, m *rpcRequest) bool {
		if m.Params.Name != "deny" {
			return false
		}
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		http.Error(w, "no", http.StatusForbidden)
		return true
	})
	_, err := call(t, c, "tools/call", `{"name":"deny"}`)
	var he *statusError
	if !errors.As(err, &he) || he.status != http.StatusForbidden || errors.As(err, new(*SignInError)) {
		t.Errorf("call: %v, want a plain HTTP 403", err)
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("signed in %d times, want 1", n)
	}
}

// TestOAuthBearerStaysOnOrigin checks that the token never follows a
// redirect to another origin.
func TestOAuthBearerStaysOnOrigin(t *testing.T) {
	var mu sync.Mutex
	var elsewhere []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere = append(elsewhere, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		var m rpcRequest
		if json.NewDecoder(r.Body).Decode(&m) == nil && m.Method != "" {
			oauthtest.WriteJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"content": []any{}}})
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(other.Close)
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(elsewhere)
	}

	{
		as := oauthtest.NewAuthServer(t, "a")
		res := newFakeResource(t, as)
		store := oauthtest.NewMemStore()
		g := signIn(t, res, store)
		res.setHandle(func(w http.ResponseWriter, r *http.Request, m *rpcRequest) bool {
			if m.Params.Name != "away" {
				return false
			}
			http.Redirect(w, r, other.URL+"/elsewhere", http.StatusTemporaryRedirect)
			return true
		})
		c, _ := newOAuthConn(t, res, &Config{Store: store})
		startOAuth(t, c)
		if _, err := call(t, c, "tools/call", `{"name":"away"}`); err != nil {
			t.Fatalf("tools/call: %v", err)
		}
		got := seen()
		if len(got) != 1 || got[0] != "POST /elsewhere " {
			t.Errorf("the other origin saw %q, want one POST without Authorization", got)
		}
		testkit.NoSecrets(t, "the other origin's requests", strings.Join(got, "\n"), g.Token.AccessToken)
	}
}

// TestOAuthAdoptsGrantStoredElsewhere checks that a connection that cannot
// sign in picks up, on a refusal, the grant another process stored since.
func TestOAuthAdoptsGrantStoredElsewhere(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "a")
	res := newFakeResource(t, as)
	store := oauthtest.NewMemStore()
	first := signIn(t, res, store)
	c, _ := newOAuthConn(t, res, &Config{Store: store})
	startOAuth(t, c)
	as.Revoke()
	g := signIn(t, res, store)
	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Fatalf("tools/list after another sign-in: %v", err)
	}
	if res.LastBearer() != "Bearer "+g.Token.AccessToken || g.Token.AccessToken == first.Token.AccessToken {
		t.Error("the grant stored by the other sign-in was not used")
	}
}

// evilAS is an authorization server the resource switches to. With poison
// set its metadata claims that issuer; without, it has none, and go-sdk
// falls back to its /register, /authorize and /token.
type evilAS struct {
	srv     *httptest.Server
	iss     string
	mu      sync.Mutex
	poison  string
	secrets []string // client secrets its token endpoint was sent
	regs    int
	issued  bool // its token endpoint issued evil-access
}

func newEvilAS(t *testing.T) *evilAS {
	e := &evilAS{}
	e.srv = httptest.NewServer(e)
	e.iss = e.srv.URL
	t.Cleanup(e.srv.Close)
	return e
}

// Issuer and Valid make it an authorization server the resource can name.
func (e *evilAS) Issuer() string { return e.iss }

func (e *evilAS) Valid(tok string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.issued && tok == "evil-access"
}

func (e *evilAS) setPoison(iss string) {
	e.mu.Lock()
	e.poison = iss
	e.mu.Unlock()
}

func (e *evilAS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	poison := e.poison
	e.mu.Unlock()
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration":
		if poison == "" {
			http.NotFound(w, r)
			return
		}
		oauthtest.WriteJSON(w, http.StatusOK, map[string]any{
			"issuer": poison, "authorization_endpoint": e.iss + "/authorize", "token_endpoint": e.iss + "/token",
			"registration_endpoint": e.iss + "/register", "code_challenge_methods_supported": []string{"S256"},
		})
	case "/register":
		e.mu.Lock()
		e.regs++
		e.mu.Unlock()
		oauthtest.WriteJSON(w, http.StatusCreated, map[string]any{"client_id": "evil-client", "token_endpoint_auth_method": "none"})
	case "/authorize":
		q := r.URL.Query()
		http.Redirect(w, r, q.Get("redirect_uri")+"?"+url.Values{"code": {"evil-code"}, "state": {q.Get("state")}}.Encode(), http.StatusFound)
	case "/token":
		r.ParseForm()
		_, pw, _ := r.BasicAuth()
		e.mu.Lock()
		e.secrets = append(e.secrets, pw, r.PostForm.Get("client_secret"))
		e.issued = true
		e.mu.Unlock()
		oauthtest.WriteJSON(w, http.StatusOK, map[string]any{"access_token": "evil-access", "token_type": "Bearer", "expires_in": 3600})
	default:
		http.NotFound(w, r)
	}
}

// TestOAuthPoisonedMetadataNeverGetsTheSecret points the server at an
// authorization server whose metadata claims the first one's issuer, then
// at the same one without metadata: the stored registration and its
// secret are presented to neither; the second sign-in registers with it.
func TestOAuthPoisonedMetadataNeverGetsTheSecret(t *testing.T) {
	good := oauthtest.NewAuthServer(t, "good")
	res := newFakeResource(t, good)
	store := oauthtest.NewMemStore()
	g := signIn(t, res, store)
	if !g.Dynamic || g.ClientSecret == "" || g.Issuer != good.Issuer() {
		t.Fatalf("setup: stored grant %+v", g)
	}
	var fetches atomic.Int32
	c, _ := newOAuthConn(t, res, &Config{Store: store, Fetch: oauthtest.Headless(&fetches), RedirectURL: oauthtest.RedirectURL})
	startOAuth(t, c)

	evil := newEvilAS(t)
	evil.setPoison(good.Issuer())
	res.SetAS(evil)
	if _, err := call(t, c, "tools/list", ""); err == nil {
		t.Error("signed in with metadata that claims another issuer")
	}
	evil.setPoison("")
	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Errorf("sign-in with the fallback endpoints: %v", err)
	}
	evil.mu.Lock()
	defer evil.mu.Unlock()
	if slices.Contains(evil.secrets, g.ClientSecret) {
		t.Fatalf("the client secret registered with %s was sent to %s", good.Issuer(), evil.iss)
	}
	if evil.regs != 1 {
		t.Errorf("%d registrations with the new server, want 1", evil.regs)
	}
	if cur, _ := c.a.current(); cur.ClientID != "evil-client" || cur.Issuer != "" || cur.Dynamic && reusable(c, cur) {
		t.Errorf("grant after the fallback sign-in = %+v, want evil-client without issuer, not to be presented again", cur)
	}
}

func reusable(c *testConn, g *Grant) bool {
	c.a.mu.Lock()
	defer c.a.mu.Unlock()
	return c.a.reusableLocked() == g
}

// flakyStore fails Save while fail is set.
type flakyStore struct {
	*oauthtest.MemStore
	fail atomic.Bool
}

func (s *flakyStore) Save(key string, data []byte) error {
	if s.fail.Load() {
		return errors.New("keychain locked")
	}
	return s.MemStore.Save(key, data)
}

// TestOAuthSaveFailureKeepsNewerGrant checks that once a Save failed, a
// refusal does not bring back the older stored grant (whose refresh token
// was rotated away) but signs in.
func TestOAuthSaveFailureKeepsNewerGrant(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "as")
	res := newFakeResource(t, as)
	store := &flakyStore{MemStore: oauthtest.NewMemStore()}
	var fetches atomic.Int32
	c, _ := newOAuthConn(t, res, &Config{Store: store, Fetch: oauthtest.Headless(&fetches), RedirectURL: oauthtest.RedirectURL})
	startOAuth(t, c)
	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Fatal(err)
	}
	g1, _ := c.a.current()
	store.fail.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.a.refresh(ctx, g1.Token); err != nil {
		t.Fatal(err)
	}
	g2, _ := c.a.current()
	if g2.Token.RefreshToken == g1.Token.RefreshToken {
		t.Fatal("setup: not refreshed")
	}
	as.Revoke()
	before := fetches.Load()
	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Errorf("tools/list after the revocation: %v", err)
	}
	if g3, _ := c.a.current(); g3.Token.RefreshToken == g1.Token.RefreshToken || fetches.Load() != before+1 {
		t.Errorf("went back to the stale stored grant, or did not sign in (%d sign-ins)", fetches.Load()-before)
	}
}

// TestOAuthRefreshSendsResource checks that a refresh names the resource
// the token was granted for (RFC 8707), authenticating the client as it
// registered.
func TestOAuthRefreshSendsResource(t *testing.T) {
	var mu sync.Mutex
	var form url.Values
	var basic bool
	as := oauthtest.NewAuthServer(t, "as")
	inner := as.Server.Config.Handler
	as.Server.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			if q, _ := url.ParseQuery(string(b)); q.Get("grant_type") == "refresh_token" {
				mu.Lock()
				form = q
				_, _, basic = r.BasicAuth()
				mu.Unlock()
			}
		}
		inner.ServeHTTP(w, r)
	})
	res := newFakeResource(t, as)
	var fetches atomic.Int32
	c, _ := newOAuthConn(t, res, &Config{Fetch: oauthtest.Headless(&fetches), RedirectURL: oauthtest.RedirectURL})
	startOAuth(t, c)
	g, _ := c.a.current()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.a.refresh(ctx, g.Token); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if form == nil {
		t.Fatal("no refresh seen")
	}
	if form.Get("resource") != res.URL || !basic || form.Get("client_secret") != "" {
		t.Errorf("refresh request: resource %q (want %q), basic %v, secret in the form %v", form.Get("resource"), res.URL, basic, form.Get("client_secret") != "")
	}
	if ng, _ := c.a.current(); ng.Token.AccessToken == g.Token.AccessToken || ng.Token.Expiry.IsZero() || ng.Resource != res.URL {
		t.Errorf("grant after the refresh: %+v", ng)
	}
}

// TestOAuthAttemptsCapHoldsForVaryingChallenges checks that a challenge
// whose free text changes on every answer still gets three sign-ins.
func TestOAuthAttemptsCapHoldsForVaryingChallenges(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "as")
	var n atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			oauthtest.WriteJSON(w, http.StatusOK, map[string]any{"resource": srv.URL + "/mcp", "authorization_servers": []string{as.Issuer()}})
			return
		}
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="invalid_token", error_description="request %d"`, n.Add(1)))
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	var fetches atomic.Int32
	c := newTestConn(t, Options{URL: srv.URL + "/mcp", Logger: slog.New(slog.DiscardHandler),
		Config: Config{Fetch: oauthtest.Headless(&fetches), RedirectURL: oauthtest.RedirectURL}})
	if err := c.a.Start(); err != nil {
		t.Fatal(err)
	}
	for range 6 {
		call(t, c, "initialize", "")
	}
	if f := fetches.Load(); f != maxAuthorize {
		t.Errorf("%d sign-ins for a server that always refuses, want %d", f, maxAuthorize)
	}
}

// TestOAuthChallengeKey checks what tells refusals apart, and that the
// counts are bounded and start over once a request succeeds.
func TestOAuthChallengeKey(t *testing.T) {
	key := func(status int, v string) string {
		resp := &http.Response{StatusCode: status, Header: http.Header{"Www-Authenticate": {v}}}
		return challengeOf(resp).key
	}
	same := [][2]string{
		{`Bearer error="invalid_token", error_description="a"`, `Bearer error="invalid_token", error_description="b", realm="x"`},
		{`Bearer scope="b a"`, `Bearer scope="a  b"`},
	}
	for _, p := range same {
		if key(401, p[0]) != key(401, p[1]) {
			t.Errorf("%q and %q are told apart", p[0], p[1])
		}
	}
	differ := [][2]string{
		{`Bearer scope="a"`, `Bearer scope="a b"`},
		{`Bearer resource_metadata="https://x/1"`, `Bearer resource_metadata="https://x/2"`},
		{`Bearer error="invalid_token"`, `Bearer error="expired"`},
	}
	for _, p := range differ {
		if key(401, p[0]) == key(401, p[1]) {
			t.Errorf("%q and %q are not told apart", p[0], p[1])
		}
	}

	as := oauthtest.NewAuthServer(t, "as")
	res := newFakeResource(t, as)
	c, _ := newOAuthConn(t, res, &Config{})
	a := c.a
	a.mu.Lock()
	for i := range 3 * maxAttemptKeys {
		a.countAttemptLocked(fmt.Sprint("k", i))
	}
	if len(a.attempts) > maxAttemptKeys {
		t.Errorf("%d challenges counted, want at most %d", len(a.attempts), maxAttemptKeys)
	}
	var counted int
	for a.countAttemptLocked("same") {
		counted++
	}
	a.mu.Unlock()
	if counted != maxAuthorize {
		t.Errorf("one challenge got %d sign-ins, want %d", counted, maxAuthorize)
	}
	a.noteStatus(http.StatusAccepted)
	if a.attemptsFor("same") != 0 {
		t.Error("a success did not give the challenges their sign-ins back")
	}
}

// TestConfiguredScopes checks that configured scopes replace the
// challenge's on a first sign-in, and that a step-up asks for them and
// for the scope its challenge names.
func TestOAuthConfiguredScopes(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "a")
	res := newFakeResource(t, as)
	res.setForbid(func(m *rpcRequest) string {
		if m.Method == "tools/call" && m.Params.Name == "admin" {
			return "mcp:admin"
		}
		return ""
	})
	var fetches atomic.Int32
	c, _ := newOAuthConn(t, res, &Config{Fetch: oauthtest.Headless(&fetches), RedirectURL: oauthtest.RedirectURL, Scopes: []string{"mcp:write", "custom:x"}})
	startOAuth(t, c)
	// The fake server refuses the tool whatever the token grants.
	if _, err := call(t, c, "tools/call", `{"name":"admin"}`); !strings.Contains(fmt.Sprint(err), "403") {
		t.Fatalf("tools/call after the step-up: %v, want HTTP 403", err)
	}
	asked := as.Scopes()
	if len(asked) != 2 {
		t.Fatalf("%d authorization requests, want 2", len(asked))
	}
	first, step := strings.Fields(asked[0]), strings.Fields(asked[1])
	if !slices.Contains(first, "mcp:write") || !slices.Contains(first, "custom:x") || slices.Contains(first, "mcp:read") {
		t.Errorf("the first sign-in asked for %v, want the configured scopes instead of mcp:read", first)
	}
	for _, s := range []string{"mcp:write", "custom:x", "mcp:admin"} {
		if !slices.Contains(step, s) {
			t.Errorf("the step-up asked for %v, without %s", step, s)
		}
	}
}

// TestOAuthRegistrationReuse checks that a public registration is
// presented again (authenticating as "none": client_id in the body, never
// a Basic header with an empty secret), and one whose secret has expired
// is not.
func TestOAuthRegistrationReuse(t *testing.T) {
	for name, setup := range map[string]func(as *oauthtest.AuthServer){
		"public":         func(as *oauthtest.AuthServer) { as.Public = true },
		"expired secret": func(as *oauthtest.AuthServer) { as.SecretExpiresAt = time.Now().Add(30 * time.Second).Unix() },
	} {
		t.Run(name, func(t *testing.T) {
			as := oauthtest.NewAuthServer(t, "a")
			setup(as)
			res := newFakeResource(t, as)
			store := oauthtest.NewMemStore()
			first := signIn(t, res, store)
			// The registration refreshes as it authenticates (none for
			// a public client).
			saved := make(chan struct{}, 4)
			c, _ := newOAuthConn(t, res, &Config{Store: store, OnChange: func() { saved <- struct{}{} }})
			startOAuth(t, c)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cur, _ := c.a.current()
			if err := c.a.refresh(ctx, cur.Token); err != nil {
				t.Fatalf("refresh: %v", err)
			}
			testkit.Recv(t, saved, "the refreshed grant to be stored")
			if g := storedGrant(t, store, res.URL); g.Token.AccessToken == first.Token.AccessToken {
				t.Fatal("not refreshed")
			}
			c.Close()
			as.Revoke()
			second := signIn(t, res, store)
			registers, _, _ := as.Counts()
			emptyBasic := as.EmptyBasic()
			switch {
			case name == "public" && (registers != 1 || second.ClientID != first.ClientID):
				t.Errorf("registered %d times, want the public client reused", registers)
			case name == "public" && emptyBasic != 0:
				t.Errorf("%d token requests sent Basic with an empty secret", emptyBasic)
			case name != "public" && (registers != 2 || second.ClientID == first.ClientID):
				t.Errorf("registered %d times, want 2", registers)
			}
		})
	}
}

// TestOAuthRefusedRegistrationForgotten checks that a stored registration
// the token endpoint refuses is not presented again, and that one whose
// sign-in was abandoned in the browser is.
func TestOAuthRefusedRegistrationForgotten(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		as := oauthtest.NewAuthServer(t, "a")
		res := newFakeResource(t, as)
		store := oauthtest.NewMemStore()
		first := signIn(t, res, store)
		var fetches atomic.Int32
		c, _ := newOAuthConn(t, res, &Config{Store: store, Fetch: oauthtest.Headless(&fetches), RedirectURL: oauthtest.RedirectURL})
		startOAuth(t, c)
		as.Revoke()
		as.ForgetClient(first.ClientID)
		_, err := call(t, c, "tools/list", "")
		var ae *SignInError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), "invalid_client") {
			t.Fatalf("tools/list with a refused registration: %v", err)
		}
		if _, err := call(t, c, "tools/list", ""); err != nil {
			t.Fatalf("tools/list after registering anew: %v", err)
		}
		if registers, _, _ := as.Counts(); registers != 2 || fetches.Load() != 2 {
			t.Errorf("registered %d times with %d sign-ins, want 2 and 2", registers, fetches.Load())
		}
	})
	t.Run("abandoned", func(t *testing.T) {
		as := oauthtest.NewAuthServer(t, "a")
		res := newFakeResource(t, as)
		store := oauthtest.NewMemStore()
		signIn(t, res, store)
		var fetches atomic.Int32
		inner := oauthtest.Headless(&fetches)
		fetch := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			if fetches.Add(1) == 1 {
				return nil, errors.New("the browser was closed")
			}
			return inner(ctx, args)
		}
		c, _ := newOAuthConn(t, res, &Config{Store: store, Fetch: fetch, RedirectURL: oauthtest.RedirectURL})
		startOAuth(t, c)
		as.Revoke()
		if _, err := call(t, c, "tools/list", ""); err == nil {
			t.Fatal("an abandoned sign-in succeeded")
		}
		if _, err := call(t, c, "tools/list", ""); err != nil {
			t.Fatalf("tools/list after signing in: %v", err)
		}
		if registers, _, _ := as.Counts(); registers != 1 {
			t.Errorf("registered %d times, want 1", registers)
		}
	})
}

// TestOAuthTransientRefreshFailureSendsValidToken checks that a token
// within the refresh margin whose refresh fails for a reason that may pass
// is still sent.
func TestOAuthTransientRefreshFailureSendsValidToken(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "a")
	res := newFakeResource(t, as)
	store := oauthtest.NewMemStore()
	g := signIn(t, res, store)
	as.SetUnavailable(1000)
	c, _ := newOAuthConn(t, res, &Config{Store: store})
	useFakeTimers(c)
	c.a.now = func() time.Time { return g.Token.Expiry.Add(-refreshMargin / 2) }
	startOAuth(t, c)
	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if _, _, refreshes := as.Counts(); refreshes == 0 || res.LastBearer() != "Bearer "+g.Token.AccessToken {
		t.Errorf("%d refreshes; the request carried %q, want the current token", refreshes, res.LastBearer())
	}
}

// gateStore holds Save while block is set, until release is closed.
type gateStore struct {
	*oauthtest.MemStore
	block   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (s *gateStore) Save(key string, data []byte) error {
	if s.block.Load() {
		s.entered <- struct{}{}
		<-s.release
	}
	return s.MemStore.Save(key, data)
}

// TestOAuthSlowStoreBlocksNothing checks that a Save that does not return
// (a keychain asking the user) holds up neither requests nor Close.
func TestOAuthSlowStoreBlocksNothing(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "a")
	res := newFakeResource(t, as)
	store := &gateStore{MemStore: oauthtest.NewMemStore(), entered: make(chan struct{}, 1), release: make(chan struct{})}
	t.Cleanup(func() { close(store.release) })
	signIn(t, res, store.MemStore)
	c, _ := newOAuthConn(t, res, &Config{Store: store})
	timers := useFakeTimers(c)
	startOAuth(t, c)
	store.block.Store(true)
	timers.next(t).fire <- time.Now()
	fresh := testkit.Recv(t, as.Refreshed, "a refresh")
	testkit.Recv(t, store.entered, "the refreshed grant to be saved")
	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Fatalf("tools/list while the store is busy: %v", err)
	}
	if res.LastBearer() != "Bearer "+fresh {
		t.Errorf("the request carried %q, want the refreshed token", res.LastBearer())
	}
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	testkit.Recv(t, closed, "Close while the store is busy")
}

// TestOAuthDialGuard checks which addresses the requests to authorization
// servers may reach, by where the MCP server is.
func TestOAuthDialGuard(t *testing.T) {
	ctx := context.Background()
	for server, cases := range map[string]map[string]bool{
		"127.0.0.1": {"127.0.0.1:80": true, "[::1]:80": true, "10.1.2.3:80": false, "169.254.169.254:80": false,
			"[::]:80": false, "0.0.0.0:80": false, "224.0.0.1:80": false, "93.184.215.14:443": true, "100.64.0.1:80": false},
		"localhost":  {"127.0.0.1:80": true, "192.168.1.1:80": false},
		"10.0.0.5":   {"127.0.0.1:80": false, "10.1.2.3:80": true, "[fd00::1]:443": true, "169.254.169.254:80": false},
		"192.0.2.10": {"127.0.0.1:80": false, "10.1.2.3:80": false, "[2606:4700::1]:443": true},
	} {
		g := &dialGuard{server: server}
		for addr, want := range cases {
			if err := g.control(ctx, "tcp", addr, nil); (err == nil) != want {
				t.Errorf("server %s: dialling %s: %v, want allowed %v", server, addr, err, want)
			}
		}
	}

	// A server on a public address: its authorization server may not be
	// on loopback, unless reached through the configured proxy.
	as := oauthtest.NewAuthServer(t, "a")
	c := newTestConn(t, Options{URL: "http://192.0.2.10/mcp", Logger: slog.New(slog.DiscardHandler)})
	_, err := c.a.hc.Get(as.Issuer() + "/.well-known/oauth-authorization-server")
	if err == nil || !strings.Contains(err.Error(), "not a public address") {
		t.Errorf("reaching a loopback authorization server for a public server: %v", err)
	}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		oauthtest.WriteJSON(w, http.StatusOK, map[string]string{"via": "proxy", "for": r.URL.String()})
	}))
	t.Cleanup(proxy.Close)
	pu, _ := url.Parse(proxy.URL)
	c2 := newTestConn(t, Options{URL: "http://192.0.2.10/mcp", Logger: slog.New(slog.DiscardHandler),
		Base: &http.Transport{Proxy: http.ProxyURL(pu)}})
	resp, err := c2.a.hc.Get("http://192.0.2.10/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	resp.Body.Close()
}

// TestOAuthRegistrationErrorHidesSecret makes the registration answer
// unreadable while it quotes a client secret, and checks that the secret
// reaches neither the error nor the logs.
func TestOAuthRegistrationErrorHidesSecret(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "a")
	as.OnRegister = func(w http.ResponseWriter) bool {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"client_id": 42, "client_secret" : "reg-secret-xyz\"q", "x": 1}`)
		return true
	}
	res := newFakeResource(t, as)
	var fetches atomic.Int32
	c, logs := newOAuthConn(t, res, &Config{Fetch: oauthtest.Headless(&fetches), RedirectURL: oauthtest.RedirectURL})
	if err := c.a.Start(); err != nil {
		t.Fatal(err)
	}
	_, err := call(t, c, "initialize", "")
	if err == nil || !strings.Contains(err.Error(), "register") {
		t.Fatalf("initialize: %v, want the registration's failure", err)
	}
	testkit.NoSecrets(t, "the error", err.Error(), "reg-secret-xyz", `q", "x"`)
	testkit.NoSecrets(t, "the logs", logs.String(), "reg-secret-xyz")
}

// TestOAuthCloseWaitsForSave checks that Close waits for a save in
// progress (a refresh just before the hub stops must not lose the rotated
// refresh token), when the store answers.
func TestOAuthCloseWaitsForSave(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "a")
	res := newFakeResource(t, as)
	store := &gateStore{MemStore: oauthtest.NewMemStore(), entered: make(chan struct{}, 1), release: make(chan struct{})}
	signIn(t, res, store.MemStore)
	c, _ := newOAuthConn(t, res, &Config{Store: store})
	timers := useFakeTimers(c)
	startOAuth(t, c)
	store.block.Store(true)
	timers.next(t).fire <- time.Now()
	testkit.Recv(t, as.Refreshed, "a refresh")
	testkit.Recv(t, store.entered, "the refreshed grant to be saved")
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	// Close may not return while the save is in progress; a Close that
	// did not wait is back within this window.
	select {
	case <-closed:
		t.Fatal("Close returned before the grant was stored")
	case <-time.After(300 * time.Millisecond):
	}
	close(store.release)
	testkit.Recv(t, closed, "Close")
	g := storedGrant(t, store, res.URL)
	if cur, _ := c.a.current(); g == nil || g.Token == nil || g.Token.RefreshToken != cur.Token.RefreshToken {
		t.Errorf("after Close the store holds %+v, want the refreshed grant", g)
	}
}

// lockingStore is a MemStore shared by several connections, as replicas
// share a team hub's database, with the lock of each grant.
type lockingStore struct {
	*oauthtest.MemStore
	locks sync.Map // key → chan struct{} holding one token while held
	held  atomic.Int32
}

func (s *lockingStore) LockGrant(ctx context.Context, key string) (func(), error) {
	v, _ := s.locks.LoadOrStore(key, make(chan struct{}, 1))
	sem := v.(chan struct{})
	select {
	case sem <- struct{}{}:
		s.held.Add(1)
		return sync.OnceFunc(func() { <-sem }), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestOAuthSharedGrantRefreshedOnce checks that connections sharing a store
// that locks grants (a team hub's replicas) refresh a grant once between
// them: both refreshers fire together, one refreshes (the refresh token
// rotates), the other waits for the lock and takes the stored token.
// Without the lock both would send the same refresh token, and the
// authorization server would refuse one of them.
func TestOAuthSharedGrantRefreshedOnce(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "a")
	res := newFakeResource(t, as)
	store := &lockingStore{MemStore: oauthtest.NewMemStore()}
	signIn(t, res, store.MemStore)
	failed := make(chan error, 2)
	var conns []*testConn
	var timers []*fakeTimers
	for range 2 {
		c, _ := newOAuthConn(t, res, &Config{Store: store, OnRefreshFailed: func(err error) { failed <- err }})
		timers = append(timers, useFakeTimers(c))
		startOAuth(t, c)
		conns = append(conns, c)
	}
	_, _, before := as.Counts()
	first := []fakeTimer{timers[0].next(t), timers[1].next(t)}
	first[0].fire <- time.Now()
	first[1].fire <- time.Now()
	timers[0].next(t) // each refresher is armed again once its refresh is over
	timers[1].next(t)
	if _, _, after := as.Counts(); after-before != 1 {
		t.Errorf("%d refreshes reached the authorization server for one shared grant, want 1", after-before)
	}
	fresh := testkit.Recv(t, as.Refreshed, "the refreshed token")
	for i, c := range conns {
		if _, err := call(t, c, "tools/list", ""); err != nil {
			t.Fatalf("connection %d after the refresh: %v", i, err)
		}
		if res.LastBearer() != "Bearer "+fresh {
			t.Errorf("connection %d does not use the refreshed token", i)
		}
	}
	select {
	case err := <-failed:
		t.Errorf("a refresh failed: %v", err)
	default:
	}
	if store.held.Load() < 2 {
		t.Errorf("the grant's lock was taken %d times, want by both refreshes", store.held.Load())
	}
}

// failingLoads is a lockingStore whose reads fail while fail is set.
type failingLoads struct {
	*lockingStore
	fail atomic.Bool
}

func (s *failingLoads) Load(key string) ([]byte, error) {
	if s.fail.Load() {
		return nil, errors.New("the store is down")
	}
	return s.lockingStore.Load(key)
}

// TestOAuthSharedGrantSignedOutOrUnreadable checks what a refresh under a
// shared store's lock makes of the stored grant: one that cannot be read
// leaves the token alone and sends no refresh (another process may have
// rotated the refresh token); one that is gone (signed out elsewhere) is
// dropped here too, not written back.
func TestOAuthSharedGrantSignedOutOrUnreadable(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "a")
	res := newFakeResource(t, as)
	store := &failingLoads{lockingStore: &lockingStore{MemStore: oauthtest.NewMemStore()}}
	g := signIn(t, res, store.MemStore)
	c, _ := newOAuthConn(t, res, &Config{Store: store})
	timers := useFakeTimers(c)
	startOAuth(t, c)
	_, _, before := as.Counts()

	store.fail.Store(true)
	timers.next(t).fire <- time.Now()
	retry := timers.next(t) // armed again, to retry: the refresh is over
	if _, _, after := as.Counts(); after != before {
		t.Errorf("%d refreshes sent while the shared grant could not be read, want none", after-before)
	}
	store.fail.Store(false)
	if _, err := call(t, c, "tools/list", ""); err != nil || res.LastBearer() != "Bearer "+g.Token.AccessToken {
		t.Fatalf("after a refresh put off: %v; want the token as it was", err)
	}

	if err := store.Delete(CanonicalResource(res.URL)); err != nil {
		t.Fatal(err)
	}
	retry.fire <- time.Now()
	eventuallyOAuth(t, "the connection drops the grant signed out elsewhere", func() bool {
		cur, _ := c.a.current()
		return cur == nil
	})
	if _, _, after := as.Counts(); after != before {
		t.Errorf("a refresh was sent for a grant signed out elsewhere")
	}
	if data, _ := store.MemStore.Load(CanonicalResource(res.URL)); data != nil {
		t.Errorf("the grant signed out elsewhere was written back: %s", data)
	}
}

// eventuallyOAuth waits, up to 10 s, for cond.
func eventuallyOAuth(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
