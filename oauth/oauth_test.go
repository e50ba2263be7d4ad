package oauth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
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
)

// The tests of OAuth sign-in run against a fake authorization server
// (metadata, registration, authorization, token endpoints) and a fake MCP
// server that wants its tokens, both on loopback.

const testRedirect = "http://127.0.0.1:9/callback"

// fakeAS is a scripted OAuth 2.1 authorization server.
type fakeAS struct {
	t    *testing.T
	name string
	srv  *httptest.Server
	iss  string

	mu         sync.Mutex
	n          int
	clients    map[string]string // client id → secret
	redirects  map[string]string // client id → registered redirect
	codes      map[string]fakeCode
	access     map[string]bool // access tokens the resource accepts
	refresh    map[string]bool // refresh tokens the token endpoint accepts
	expiresIn  int
	refreshErr string // when set, a refresh is refused with this error code
	unavail    int    // refreshes answered 503 before one succeeds
	exchangeFn func(w http.ResponseWriter, code string) bool
	registerFn func(w http.ResponseWriter) bool // answers a registration when it returns true
	public     bool                             // registers public clients (no secret)
	emptyBasic int                              // token requests with Basic and an empty secret
	secretExp  int64                            // client_secret_expires_at of registrations
	registers  int
	authorizes int
	refreshes  int
	scopes     []string // scope asked by each authorization request
	refreshed  chan string
}

type fakeCode struct {
	client, challenge, redirect, resource, scope string
}

func newFakeAS(t *testing.T, name string) *fakeAS {
	as := &fakeAS{t: t, name: name, clients: map[string]string{}, redirects: map[string]string{}, codes: map[string]fakeCode{},
		access: map[string]bool{}, refresh: map[string]bool{}, expiresIn: 3600, refreshed: make(chan string, 16)}
	as.srv = httptest.NewServer(as)
	as.iss = as.srv.URL
	t.Cleanup(as.srv.Close)
	return as
}

func (as *fakeAS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		as.t.Errorf("the authorization server got a Bearer token: %s %s", r.Method, r.URL.Path)
	}
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer": as.iss, "authorization_endpoint": as.iss + "/authorize", "token_endpoint": as.iss + "/token",
			"registration_endpoint": as.iss + "/register", "code_challenge_methods_supported": []string{"S256"},
			"token_endpoint_auth_methods_supported":          []string{"client_secret_basic"},
			"authorization_response_iss_parameter_supported": true,
			"scopes_supported":                               []string{"mcp:read", "mcp:write", "offline_access"},
		})
	case "/register":
		var meta struct {
			RedirectURIs []string `json:"redirect_uris"`
			GrantTypes   []string `json:"grant_types"`
		}
		json.NewDecoder(r.Body).Decode(&meta)
		if len(meta.RedirectURIs) != 1 || !slices.Contains(meta.GrantTypes, "refresh_token") {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
			return
		}
		as.mu.Lock()
		defer as.mu.Unlock()
		as.registers++
		if as.registerFn != nil && as.registerFn(w) {
			return
		}
		as.n++
		id := fmt.Sprintf("client-%s-%d", as.name, as.n)
		secret := fmt.Sprintf("client-secret-%s-%d", as.name, as.n)
		body := map[string]any{"client_id": id, "client_secret": secret, "client_secret_expires_at": as.secretExp,
			"token_endpoint_auth_method": "client_secret_basic", "redirect_uris": meta.RedirectURIs}
		if as.public {
			secret = ""
			delete(body, "client_secret")
			body["token_endpoint_auth_method"] = "none"
		}
		as.clients[id] = secret
		as.redirects[id] = meta.RedirectURIs[0]
		writeJSON(w, http.StatusCreated, body)
	case "/authorize":
		q := r.URL.Query()
		as.mu.Lock()
		as.authorizes++
		as.scopes = append(as.scopes, q.Get("scope"))
		known := as.redirects[q.Get("client_id")] == q.Get("redirect_uri")
		as.n++
		code := fmt.Sprintf("auth-code-%s-%d", as.name, as.n)
		as.codes[code] = fakeCode{client: q.Get("client_id"), challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"),
			resource: q.Get("resource"), scope: q.Get("scope")}
		as.mu.Unlock()
		if !known || q.Get("code_challenge_method") != "S256" || q.Get("resource") == "" {
			http.Error(w, "bad authorization request", http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, q.Get("redirect_uri")+"?"+url.Values{"code": {code}, "state": {q.Get("state")}, "iss": {as.iss}}.Encode(), http.StatusFound)
	case "/token":
		as.token(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (as *fakeAS) token(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	if ok && secret == "" {
		as.emptyBasic++
	}
	if known, found := as.clients[id]; !found || known != secret {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		code := r.PostForm.Get("code")
		if as.exchangeFn != nil && as.exchangeFn(w, code) {
			return
		}
		c, found := as.codes[code]
		delete(as.codes, code)
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !found || c.client != id || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge ||
			r.PostForm.Get("resource") != c.resource || r.PostForm.Get("redirect_uri") != c.redirect {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		as.issueLocked(w, c.scope)
	case "refresh_token":
		rt := r.PostForm.Get("refresh_token")
		as.refreshes++
		if as.unavail > 0 {
			as.unavail--
			http.Error(w, "try later", http.StatusServiceUnavailable)
			return
		}
		if as.refreshErr != "" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": as.refreshErr,
				"error_description": "refresh token " + rt + " is no longer good"})
			return
		}
		if !as.refresh[rt] {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		delete(as.refresh, rt) // rotation
		at := as.issueLocked(w, "")
		as.refreshed <- at
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
	}
}

// issueLocked answers a token request with a new access and refresh token.
func (as *fakeAS) issueLocked(w http.ResponseWriter, scope string) string {
	as.n++
	at := fmt.Sprintf("access-token-%s-%d", as.name, as.n)
	rt := fmt.Sprintf("refresh-token-%s-%d", as.name, as.n)
	as.access[at] = true
	as.refresh[rt] = true
	body := map[string]any{"access_token": at, "refresh_token": rt, "token_type": "Bearer", "expires_in": as.expiresIn}
	if scope != "" {
		body["scope"] = scope
	}
	writeJSON(w, http.StatusOK, body)
	return at
}

func (as *fakeAS) valid(tok string) bool {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.access[tok]
}

// revoke makes the resource refuse every token issued so far.
func (as *fakeAS) revoke() {
	as.mu.Lock()
	clear(as.access)
	as.mu.Unlock()
}

func (as *fakeAS) counts() (registers, authorizes, refreshes int) {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.registers, as.authorizes, as.refreshes
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// fakeResource is an MCP server that answers every request it accepts
// with an empty result, behind a Bearer check against the authorization
// server it names.
type fakeResource struct {
	t    *testing.T
	srv  *httptest.Server
	url  string // the MCP endpoint
	path string // its path

	mu       sync.Mutex
	as       *fakeAS
	static   string                                                           // a token accepted besides the AS's
	forbid   func(m *rpcRequest) string                                       // a scope a request lacks, "" for none
	handle   func(w http.ResponseWriter, r *http.Request, m *rpcRequest) bool // answers a request itself when it returns true
	hold401  int                                                              // refusals held until this many arrived
	held     int
	release  chan struct{}
	bearers  []string // the Authorization of every MCP request
	refusals int
}

// rpcRequest is what fakeResource reads of a JSON-RPC request.
type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name string `json:"name"`
	} `json:"params"`
}

func newFakeResource(t *testing.T, as *fakeAS) *fakeResource {
	res := &fakeResource{t: t, as: as, release: make(chan struct{}), path: "/mcp"}
	res.srv = httptest.NewServer(res)
	res.url = res.srv.URL + res.path
	t.Cleanup(res.srv.Close)
	return res
}

func (res *fakeResource) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	res.mu.Lock()
	as := res.as
	res.mu.Unlock()
	prm := res.srv.URL + "/.well-known/oauth-protected-resource" + res.path
	if r.URL.Path == "/.well-known/oauth-protected-resource"+res.path {
		writeJSON(w, http.StatusOK, map[string]any{"resource": res.url, "authorization_servers": []string{as.iss},
			"scopes_supported": []string{"mcp:read"}})
		return
	}
	body, _ := io.ReadAll(r.Body)
	authz := r.Header.Get("Authorization")
	tok, _ := strings.CutPrefix(authz, "Bearer ")
	res.mu.Lock()
	res.bearers = append(res.bearers, authz)
	static, forbid, handle := res.static, res.forbid, res.handle
	res.mu.Unlock()
	if !(tok != "" && (as.valid(tok) || tok == static)) {
		res.mu.Lock()
		res.refusals++
		res.held++
		hold, held, release := res.hold401, res.held, res.release
		if hold > 0 && held == hold {
			close(release)
		}
		res.mu.Unlock()
		if hold > 0 {
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s", scope="mcp:read"`, prm))
		http.Error(w, `{"error":"invalid_token","echo":"`+authz+`"}`, http.StatusUnauthorized)
		return
	}
	var m rpcRequest
	json.Unmarshal(body, &m)
	if forbid != nil {
		if scope := forbid(&m); scope != "" {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="%s", resource_metadata="%s"`, scope, prm))
			http.Error(w, "insufficient scope", http.StatusForbidden)
			return
		}
	}
	if handle != nil && handle(w, r, &m) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{}})
}

func (res *fakeResource) setForbid(f func(m *rpcRequest) string) {
	res.mu.Lock()
	res.forbid = f
	res.mu.Unlock()
}

func (res *fakeResource) setHandle(f func(w http.ResponseWriter, r *http.Request, m *rpcRequest) bool) {
	res.mu.Lock()
	res.handle = f
	res.mu.Unlock()
}

func (res *fakeResource) setAS(as *fakeAS) {
	res.mu.Lock()
	res.as = as
	res.mu.Unlock()
}

// sawBearer reports whether some MCP request carried tok.
func (res *fakeResource) sawBearer(tok string) bool { return res.sawBearerSince(0, tok) }

// mark is where sawBearerSince starts looking.
func (res *fakeResource) mark() int {
	res.mu.Lock()
	defer res.mu.Unlock()
	return len(res.bearers)
}

// sawBearerSince reports whether some MCP request since mark carried tok.
func (res *fakeResource) sawBearerSince(mark int, tok string) bool {
	res.mu.Lock()
	defer res.mu.Unlock()
	return slices.Contains(res.bearers[mark:], "Bearer "+tok)
}

func (res *fakeResource) lastBearer() string {
	res.mu.Lock()
	defer res.mu.Unlock()
	return res.bearers[len(res.bearers)-1]
}

// memStore is a TokenStore in memory.
type memStore struct {
	mu    sync.Mutex
	data  map[string][]byte
	saves int
}

func newMemStore() *memStore { return &memStore{data: map[string][]byte{}} }

func (s *memStore) Load(key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.data[key]), nil
}

func (s *memStore) Save(key string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saves++
	s.data[key] = bytes.Clone(data)
	return nil
}

func (s *memStore) Delete(key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.data, key)
	return nil
}

func (s *memStore) grant(t *testing.T, serverURL string) *Grant {
	t.Helper()
	g, err := LoadGrant(s, serverURL)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// headless completes the browser step as a headless client does: the
// authorization URL is fetched without following its redirect, whose
// query holds the code, state and iss. n counts the calls.
func headless(n *atomic.Int32) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		n.Add(1)
		hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL, nil)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 3 {
			return nil, fmt.Errorf("authorization endpoint answered %d", resp.StatusCode)
		}
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil {
			return nil, err
		}
		q := loc.Query()
		return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
	}
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
func newOAuthConn(t *testing.T, res *fakeResource, oc *Config) (*testConn, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	c := newTestConn(t, Options{URL: res.url, Config: *oc,
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

// noSecrets fails the test if any of secrets appears in text.
func noSecrets(t *testing.T, where, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Errorf("%s holds the secret %q:\n%s", where, s, text)
		}
	}
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// signIn signs in to res once, with a connection that is closed after.
func signIn(t *testing.T, res *fakeResource, store TokenStore) *Grant {
	t.Helper()
	var fetches atomic.Int32
	c, _ := newOAuthConn(t, res, &Config{Store: store, Fetch: headless(&fetches), RedirectURL: testRedirect})
	startOAuth(t, c)
	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Fatalf("tools/list after sign-in: %v", err)
	}
	c.Close()
	g, err := LoadGrant(store, res.url)
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

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
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
	as := newFakeAS(t, "a")
	res := newFakeResource(t, as)
	store := newMemStore()
	var fetches atomic.Int32
	var changes atomic.Int32
	oc := &Config{Store: store, Fetch: headless(&fetches), RedirectURL: testRedirect, OnChange: func() { changes.Add(1) }}
	c, logs := newOAuthConn(t, res, oc)
	startOAuth(t, c)
	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("signed in %d times, want 1", n)
	}
	g := store.grant(t, res.url)
	if g == nil {
		t.Fatal("no grant stored")
	}
	if g.Issuer != as.iss || g.ClientID != "client-a-1" || g.ClientSecret != "client-secret-a-1" || g.AuthStyle != oauth2.AuthStyleInHeader ||
		!g.Dynamic || g.RedirectURL != testRedirect || g.TokenURL != as.iss+"/token" || !g.hasToken() || g.Token.RefreshToken == "" {
		t.Errorf("stored grant = %+v", g)
	}
	if !slices.Contains(g.Scopes, "mcp:read") {
		t.Errorf("granted scopes %v lack mcp:read", g.Scopes)
	}
	if changes.Load() == 0 {
		t.Error("OnChange was not told of the new grant")
	}
	if res.lastBearer() != "Bearer "+g.Token.AccessToken {
		t.Errorf("the last request carried %q", res.lastBearer())
	}
	c.Close()
	noSecrets(t, "the logs", logs.String(), g.Token.AccessToken, g.Token.RefreshToken, g.ClientSecret, "auth-code-a")

	// A new connection, which cannot sign in, uses the stored grant.
	c2, _ := newOAuthConn(t, res, &Config{Store: store})
	startOAuth(t, c2)
	if _, err := call(t, c2, "tools/call", `{"name":"x"}`); err != nil {
		t.Fatalf("tools/call on the stored grant: %v", err)
	}
	if registers, authorizes, _ := as.counts(); registers != 1 || authorizes != 1 {
		t.Errorf("registered %d and authorized %d times, want once each", registers, authorizes)
	}
	if !res.sawBearer(g.Token.AccessToken) {
		t.Error("the stored token was not used")
	}
}

// TestOAuthBackgroundRefresh checks that the refresher renews the token at
// about 80% of its life, that the next requests carry the new token and
// that the rotated refresh token is stored.
func TestOAuthBackgroundRefresh(t *testing.T) {
	as := newFakeAS(t, "a")
	res := newFakeResource(t, as)
	store := newMemStore()
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
	second := recv(t, as.refreshed, "a refresh")
	recv(t, changed, "the refreshed grant to be stored")
	timers.next(t) // the refresher waits for the next one

	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Fatalf("tools/list after the refresh: %v", err)
	}
	if got := res.lastBearer(); got != "Bearer "+second {
		t.Errorf("after the refresh a request carried %q, want the new token", got)
	}
	g := store.grant(t, res.url)
	if g.Token.AccessToken != second || g.Token.RefreshToken == first.Token.RefreshToken || g.Token.RefreshToken == "" {
		t.Errorf("stored token after the refresh: access %q refresh %q (first refresh %q)", g.Token.AccessToken, g.Token.RefreshToken, first.Token.RefreshToken)
	}
	if g.ClientID != first.ClientID || g.Issuer != first.Issuer {
		t.Errorf("the refresh changed the registration: %+v", g)
	}
	noSecrets(t, "the logs", logs.String(), first.Token.AccessToken, first.Token.RefreshToken, second, g.Token.RefreshToken, g.ClientSecret)
}

// TestOAuthExpiredTokenRefreshedBeforeUse checks that a stored token past
// its expiry is refreshed before the request goes out.
func TestOAuthExpiredTokenRefreshedBeforeUse(t *testing.T) {
	as := newFakeAS(t, "a")
	res := newFakeResource(t, as)
	store := newMemStore()
	g := signIn(t, res, store)
	g.Token.Expiry = time.Now().Add(-time.Minute)
	data, _ := json.Marshal(g)
	store.Save(CanonicalResource(res.url), data)
	as.revoke() // the old token would be refused
	mark := res.mark()

	c, _ := newOAuthConn(t, res, &Config{Store: store})
	startOAuth(t, c)
	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if _, _, refreshes := as.counts(); refreshes != 1 {
		t.Errorf("%d refreshes, want 1", refreshes)
	}
	if res.sawBearerSince(mark, g.Token.AccessToken) {
		t.Error("the expired token was sent")
	}
}

// TestOAuthRefreshRejected checks that a refresh refused with
// invalid_grant drops the token (not the registration), tells
// OnRefreshFailed, and that the next request goes without a token and
// gets the server's 401 (the connection reports that sign-in is needed),
// with no secret in any error.
func TestOAuthRefreshRejected(t *testing.T) {
	as := newFakeAS(t, "a")
	res := newFakeResource(t, as)
	store := newMemStore()
	g := signIn(t, res, store)
	as.mu.Lock()
	as.refreshErr = "invalid_grant"
	as.mu.Unlock()

	failed := make(chan error, 1)
	c, logs := newOAuthConn(t, res, &Config{Store: store, OnRefreshFailed: func(err error) { failed <- err }})
	timers := useFakeTimers(c)
	startOAuth(t, c)
	timers.next(t).fire <- time.Now()
	err := recv(t, failed, "OnRefreshFailed")
	if !strings.Contains(err.Error(), "invalid_grant") {
		t.Errorf("OnRefreshFailed(%v) does not say why", err)
	}
	secrets := []string{g.Token.AccessToken, g.Token.RefreshToken, g.ClientSecret}
	noSecrets(t, "the refresh error", err.Error(), secrets...)

	stored := store.grant(t, res.url)
	if stored == nil || stored.Token != nil || stored.ClientID != g.ClientID || stored.ClientSecret != g.ClientSecret {
		t.Errorf("stored grant after invalid_grant = %+v, want the registration without a token", stored)
	}
	_, err = call(t, c, "tools/list", "")
	var ae *SignInError
	if se := (*statusError)(nil); !errors.As(err, &se) || se.status != http.StatusUnauthorized || errors.As(err, &ae) {
		t.Fatalf("tools/list after the token was dropped: %v, want the server's 401 as it came", err)
	}
	noSecrets(t, "the error", err.Error(), secrets...)
	noSecrets(t, "the logs", logs.String(), secrets...)
}

// TestOAuthRefreshRetriesWithBackoff checks that a refresh that fails for
// a reason that may pass is retried after 1 s, then 2 s, and succeeds
// without dropping anything.
func TestOAuthRefreshRetriesWithBackoff(t *testing.T) {
	as := newFakeAS(t, "a")
	res := newFakeResource(t, as)
	store := newMemStore()
	signIn(t, res, store)
	as.mu.Lock()
	as.unavail = 2
	as.mu.Unlock()
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
	fresh := recv(t, as.refreshed, "the refresh that succeeds")
	if tm := timers.next(t); tm.d < 40*time.Minute {
		t.Errorf("after a successful refresh the next is due in %v", tm.d)
	}
	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if res.lastBearer() != "Bearer "+fresh {
		t.Errorf("a request carried %q, want the refreshed token", res.lastBearer())
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
	as := newFakeAS(t, "a")
	res := newFakeResource(t, as)
	store := newMemStore()
	first := signIn(t, res, store)
	as.revoke()
	g := signIn(t, res, store)
	registers, authorizes, _ := as.counts()
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
	as1 := newFakeAS(t, "one")
	as2 := newFakeAS(t, "two")
	res := newFakeResource(t, as1)
	store := newMemStore()
	first := signIn(t, res, store)
	res.setAS(as2)
	g := signIn(t, res, store)
	if g.Issuer != as2.iss || g.ClientID != "client-two-1" {
		t.Errorf("grant after the move = issuer %q client %q, want %q client-two-1", g.Issuer, g.ClientID, as2.iss)
	}
	if r1, a1, _ := as1.counts(); r1 != 1 || a1 != 1 {
		t.Errorf("the first server saw %d registrations and %d authorizations after the move", r1-1, a1-1)
	}
	if r2, _, _ := as2.counts(); r2 != 1 {
		t.Errorf("the second server saw %d registrations, want 1", r2)
	}
	as2.mu.Lock()
	_, leaked := as2.clients[first.ClientID]
	as2.mu.Unlock()
	if leaked {
		t.Error("the first server's client was presented to the second")
	}
}

// TestOAuthConcurrentRefusalsSignInOnce revokes the token, then sends ten
// calls at once: all are refused together, one sign-in answers them all.
func TestOAuthConcurrentRefusalsSignInOnce(t *testing.T) {
	as := newFakeAS(t, "a")
	res := newFakeResource(t, as)
	store := newMemStore()
	var fetches atomic.Int32
	c, _ := newOAuthConn(t, res, &Config{Store: store, Fetch: headless(&fetches), RedirectURL: testRedirect})
	startOAuth(t, c)
	as.revoke()
	res.mu.Lock()
	res.hold401, res.held = 10, 0
	res.mu.Unlock()
	errs := make(chan error, 10)
	for i := range 10 {
		go func() {
			_, err := call(t, c, "tools/call", fmt.Sprintf(`{"name":"t%d"}`, i))
			errs <- err
		}()
	}
	for range 10 {
		if err := recv(t, errs, "a call"); err != nil {
			t.Errorf("call: %v", err)
		}
	}
	if n := fetches.Load(); n != 2 {
		t.Errorf("signed in %d times, want 2 (the first and one for the ten refusals)", n)
	}
	if _, authorizes, _ := as.counts(); authorizes != 2 {
		t.Errorf("%d authorization requests, want 2", authorizes)
	}
}

// TestOAuthStepUpCapped checks that a 403 insufficient_scope leads to a
// sign-in asking for the new scope and the old ones, and that the same
// refusal gets at most three sign-ins.
func TestOAuthStepUpCapped(t *testing.T) {
	as := newFakeAS(t, "a")
	res := newFakeResource(t, as)
	res.setForbid(func(m *rpcRequest) string {
		if m.Method == "tools/call" && m.Params.Name == "write" {
			return "mcp:write"
		}
		return ""
	})
	var fetches atomic.Int32
	c, _ := newOAuthConn(t, res, &Config{Store: newMemStore(), Fetch: headless(&fetches), RedirectURL: testRedirect})
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
	as.mu.Lock()
	last := strings.Fields(as.scopes[len(as.scopes)-1])
	as.mu.Unlock()
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
	as := newFakeAS(t, "a")
	res := newFakeResource(t, as)
	var fetches atomic.Int32
	c, _ := newOAuthConn(t, res, &Config{Fetch: headless(&fetches), RedirectURL: testRedirect})
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
			writeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"content": []any{}}})
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
		as := newFakeAS(t, "a")
		res := newFakeResource(t, as)
		store := newMemStore()
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
		noSecrets(t, "the other origin's requests", strings.Join(got, "\n"), g.Token.AccessToken)
	}
}

// TestOAuthAdoptsGrantStoredElsewhere checks that a connection that cannot
// sign in picks up, on a refusal, the grant another process stored since.
func TestOAuthAdoptsGrantStoredElsewhere(t *testing.T) {
	as := newFakeAS(t, "a")
	res := newFakeResource(t, as)
	store := newMemStore()
	first := signIn(t, res, store)
	c, _ := newOAuthConn(t, res, &Config{Store: store})
	startOAuth(t, c)
	as.revoke()
	g := signIn(t, res, store)
	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Fatalf("tools/list after another sign-in: %v", err)
	}
	if res.lastBearer() != "Bearer "+g.Token.AccessToken || g.Token.AccessToken == first.Token.AccessToken {
		t.Error("the grant stored by the other sign-in was not used")
	}
}

// evilAS is an authorization server the resource switches to. With poison
// set its metadata claims that issuer; without, it has none, and go-sdk
// falls back to its /register, /authorize and /token.
type evilAS struct {
	*fakeAS
	mu      sync.Mutex
	poison  string
	secrets []string // client secrets its token endpoint was sent
	regs    int
}

func newEvilAS(t *testing.T) *evilAS {
	e := &evilAS{fakeAS: &fakeAS{t: t, name: "evil", access: map[string]bool{}}}
	e.srv = httptest.NewServer(e)
	e.iss = e.srv.URL
	t.Cleanup(e.srv.Close)
	return e
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
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer": poison, "authorization_endpoint": e.iss + "/authorize", "token_endpoint": e.iss + "/token",
			"registration_endpoint": e.iss + "/register", "code_challenge_methods_supported": []string{"S256"},
		})
	case "/register":
		e.mu.Lock()
		e.regs++
		e.mu.Unlock()
		writeJSON(w, http.StatusCreated, map[string]any{"client_id": "evil-client", "token_endpoint_auth_method": "none"})
	case "/authorize":
		q := r.URL.Query()
		http.Redirect(w, r, q.Get("redirect_uri")+"?"+url.Values{"code": {"evil-code"}, "state": {q.Get("state")}}.Encode(), http.StatusFound)
	case "/token":
		r.ParseForm()
		_, pw, _ := r.BasicAuth()
		e.mu.Lock()
		e.secrets = append(e.secrets, pw, r.PostForm.Get("client_secret"))
		e.mu.Unlock()
		e.fakeAS.mu.Lock()
		e.access["evil-access"] = true
		e.fakeAS.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"access_token": "evil-access", "token_type": "Bearer", "expires_in": 3600})
	default:
		http.NotFound(w, r)
	}
}

// TestOAuthPoisonedMetadataNeverGetsTheSecret points the server at an
// authorization server whose metadata claims the first one's issuer, then
// at the same one without metadata: the stored registration and its
// secret are presented to neither; the second sign-in registers with it.
func TestOAuthPoisonedMetadataNeverGetsTheSecret(t *testing.T) {
	good := newFakeAS(t, "good")
	res := newFakeResource(t, good)
	store := newMemStore()
	g := signIn(t, res, store)
	if !g.Dynamic || g.ClientSecret == "" || g.Issuer != good.iss {
		t.Fatalf("setup: stored grant %+v", g)
	}
	var fetches atomic.Int32
	c, _ := newOAuthConn(t, res, &Config{Store: store, Fetch: headless(&fetches), RedirectURL: testRedirect})
	startOAuth(t, c)

	evil := newEvilAS(t)
	evil.setPoison(good.iss)
	res.setAS(evil.fakeAS)
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
		t.Fatalf("the client secret registered with %s was sent to %s", good.iss, evil.iss)
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
	*memStore
	fail atomic.Bool
}

func (s *flakyStore) Save(key string, data []byte) error {
	if s.fail.Load() {
		return errors.New("keychain locked")
	}
	return s.memStore.Save(key, data)
}

// TestOAuthSaveFailureKeepsNewerGrant checks that once a Save failed, a
// refusal does not bring back the older stored grant (whose refresh token
// was rotated away) but signs in.
func TestOAuthSaveFailureKeepsNewerGrant(t *testing.T) {
	as := newFakeAS(t, "as")
	res := newFakeResource(t, as)
	store := &flakyStore{memStore: newMemStore()}
	var fetches atomic.Int32
	c, _ := newOAuthConn(t, res, &Config{Store: store, Fetch: headless(&fetches), RedirectURL: testRedirect})
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
	as.revoke()
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
	as := newFakeAS(t, "as")
	inner := as.srv.Config.Handler
	as.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	c, _ := newOAuthConn(t, res, &Config{Fetch: headless(&fetches), RedirectURL: testRedirect})
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
	if form.Get("resource") != res.url || !basic || form.Get("client_secret") != "" {
		t.Errorf("refresh request: resource %q (want %q), basic %v, secret in the form %v", form.Get("resource"), res.url, basic, form.Get("client_secret") != "")
	}
	if ng, _ := c.a.current(); ng.Token.AccessToken == g.Token.AccessToken || ng.Token.Expiry.IsZero() || ng.Resource != res.url {
		t.Errorf("grant after the refresh: %+v", ng)
	}
}

// TestOAuthAttemptsCapHoldsForVaryingChallenges checks that a challenge
// whose free text changes on every answer still gets three sign-ins.
func TestOAuthAttemptsCapHoldsForVaryingChallenges(t *testing.T) {
	as := newFakeAS(t, "as")
	var n atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			writeJSON(w, http.StatusOK, map[string]any{"resource": srv.URL + "/mcp", "authorization_servers": []string{as.iss}})
			return
		}
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="invalid_token", error_description="request %d"`, n.Add(1)))
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	var fetches atomic.Int32
	c := newTestConn(t, Options{URL: srv.URL + "/mcp", Logger: slog.New(slog.DiscardHandler),
		Config: Config{Fetch: headless(&fetches), RedirectURL: testRedirect}})
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

	as := newFakeAS(t, "as")
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
	as := newFakeAS(t, "a")
	res := newFakeResource(t, as)
	res.setForbid(func(m *rpcRequest) string {
		if m.Method == "tools/call" && m.Params.Name == "admin" {
			return "mcp:admin"
		}
		return ""
	})
	var fetches atomic.Int32
	c, _ := newOAuthConn(t, res, &Config{Fetch: headless(&fetches), RedirectURL: testRedirect, Scopes: []string{"mcp:write", "custom:x"}})
	startOAuth(t, c)
	// The fake server refuses the tool whatever the token grants.
	if _, err := call(t, c, "tools/call", `{"name":"admin"}`); !strings.Contains(fmt.Sprint(err), "403") {
		t.Fatalf("tools/call after the step-up: %v, want HTTP 403", err)
	}
	as.mu.Lock()
	asked := slices.Clone(as.scopes)
	as.mu.Unlock()
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
	for name, setup := range map[string]func(as *fakeAS){
		"public":         func(as *fakeAS) { as.public = true },
		"expired secret": func(as *fakeAS) { as.secretExp = time.Now().Add(30 * time.Second).Unix() },
	} {
		t.Run(name, func(t *testing.T) {
			as := newFakeAS(t, "a")
			setup(as)
			res := newFakeResource(t, as)
			store := newMemStore()
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
			recv(t, saved, "the refreshed grant to be stored")
			if g := store.grant(t, res.url); g.Token.AccessToken == first.Token.AccessToken {
				t.Fatal("not refreshed")
			}
			c.Close()
			as.revoke()
			second := signIn(t, res, store)
			registers, _, _ := as.counts()
			as.mu.Lock()
			emptyBasic := as.emptyBasic
			as.mu.Unlock()
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
		as := newFakeAS(t, "a")
		res := newFakeResource(t, as)
		store := newMemStore()
		first := signIn(t, res, store)
		var fetches atomic.Int32
		c, _ := newOAuthConn(t, res, &Config{Store: store, Fetch: headless(&fetches), RedirectURL: testRedirect})
		startOAuth(t, c)
		as.revoke()
		as.mu.Lock()
		delete(as.clients, first.ClientID)
		as.mu.Unlock()
		_, err := call(t, c, "tools/list", "")
		var ae *SignInError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), "invalid_client") {
			t.Fatalf("tools/list with a refused registration: %v", err)
		}
		if _, err := call(t, c, "tools/list", ""); err != nil {
			t.Fatalf("tools/list after registering anew: %v", err)
		}
		if registers, _, _ := as.counts(); registers != 2 || fetches.Load() != 2 {
			t.Errorf("registered %d times with %d sign-ins, want 2 and 2", registers, fetches.Load())
		}
	})
	t.Run("abandoned", func(t *testing.T) {
		as := newFakeAS(t, "a")
		res := newFakeResource(t, as)
		store := newMemStore()
		signIn(t, res, store)
		var fetches atomic.Int32
		inner := headless(&fetches)
		fetch := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			if fetches.Add(1) == 1 {
				return nil, errors.New("the browser was closed")
			}
			return inner(ctx, args)
		}
		c, _ := newOAuthConn(t, res, &Config{Store: store, Fetch: fetch, RedirectURL: testRedirect})
		startOAuth(t, c)
		as.revoke()
		if _, err := call(t, c, "tools/list", ""); err == nil {
			t.Fatal("an abandoned sign-in succeeded")
		}
		if _, err := call(t, c, "tools/list", ""); err != nil {
			t.Fatalf("tools/list after signing in: %v", err)
		}
		if registers, _, _ := as.counts(); registers != 1 {
			t.Errorf("registered %d times, want 1", registers)
		}
	})
}

// TestOAuthTransientRefreshFailureSendsValidToken checks that a token
// within the refresh margin whose refresh fails for a reason that may pass
// is still sent.
func TestOAuthTransientRefreshFailureSendsValidToken(t *testing.T) {
	as := newFakeAS(t, "a")
	res := newFakeResource(t, as)
	store := newMemStore()
	g := signIn(t, res, store)
	as.mu.Lock()
	as.unavail = 1000
	as.mu.Unlock()
	c, _ := newOAuthConn(t, res, &Config{Store: store})
	useFakeTimers(c)
	c.a.now = func() time.Time { return g.Token.Expiry.Add(-refreshMargin / 2) }
	startOAuth(t, c)
	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if _, _, refreshes := as.counts(); refreshes == 0 || res.lastBearer() != "Bearer "+g.Token.AccessToken {
		t.Errorf("%d refreshes; the request carried %q, want the current token", refreshes, res.lastBearer())
	}
}

// gateStore holds Save while block is set, until release is closed.
type gateStore struct {
	*memStore
	block   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (s *gateStore) Save(key string, data []byte) error {
	if s.block.Load() {
		s.entered <- struct{}{}
		<-s.release
	}
	return s.memStore.Save(key, data)
}

// TestOAuthSlowStoreBlocksNothing checks that a Save that does not return
// (a keychain asking the user) holds up neither requests nor Close.
func TestOAuthSlowStoreBlocksNothing(t *testing.T) {
	as := newFakeAS(t, "a")
	res := newFakeResource(t, as)
	store := &gateStore{memStore: newMemStore(), entered: make(chan struct{}, 1), release: make(chan struct{})}
	t.Cleanup(func() { close(store.release) })
	signIn(t, res, store.memStore)
	c, _ := newOAuthConn(t, res, &Config{Store: store})
	timers := useFakeTimers(c)
	startOAuth(t, c)
	store.block.Store(true)
	timers.next(t).fire <- time.Now()
	fresh := recv(t, as.refreshed, "a refresh")
	recv(t, store.entered, "the refreshed grant to be saved")
	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Fatalf("tools/list while the store is busy: %v", err)
	}
	if res.lastBearer() != "Bearer "+fresh {
		t.Errorf("the request carried %q, want the refreshed token", res.lastBearer())
	}
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	recv(t, closed, "Close while the store is busy")
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
	as := newFakeAS(t, "a")
	c := newTestConn(t, Options{URL: "http://192.0.2.10/mcp", Logger: slog.New(slog.DiscardHandler)})
	_, err := c.a.hc.Get(as.iss + "/.well-known/oauth-authorization-server")
	if err == nil || !strings.Contains(err.Error(), "not a public address") {
		t.Errorf("reaching a loopback authorization server for a public server: %v", err)
	}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"via": "proxy", "for": r.URL.String()})
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
	as := newFakeAS(t, "a")
	as.registerFn = func(w http.ResponseWriter) bool {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"client_id": 42, "client_secret" : "reg-secret-xyz\"q", "x": 1}`)
		return true
	}
	res := newFakeResource(t, as)
	var fetches atomic.Int32
	c, logs := newOAuthConn(t, res, &Config{Fetch: headless(&fetches), RedirectURL: testRedirect})
	if err := c.a.Start(); err != nil {
		t.Fatal(err)
	}
	_, err := call(t, c, "initialize", "")
	if err == nil || !strings.Contains(err.Error(), "register") {
		t.Fatalf("initialize: %v, want the registration's failure", err)
	}
	noSecrets(t, "the error", err.Error(), "reg-secret-xyz", `q", "x"`)
	noSecrets(t, "the logs", logs.String(), "reg-secret-xyz")
}

// TestOAuthCloseWaitsForSave checks that Close waits for a save in
// progress (a refresh just before the hub stops must not lose the rotated
// refresh token), when the store answers.
func TestOAuthCloseWaitsForSave(t *testing.T) {
	as := newFakeAS(t, "a")
	res := newFakeResource(t, as)
	store := &gateStore{memStore: newMemStore(), entered: make(chan struct{}, 1), release: make(chan struct{})}
	signIn(t, res, store.memStore)
	c, _ := newOAuthConn(t, res, &Config{Store: store})
	timers := useFakeTimers(c)
	startOAuth(t, c)
	store.block.Store(true)
	timers.next(t).fire <- time.Now()
	recv(t, as.refreshed, "a refresh")
	recv(t, store.entered, "the refreshed grant to be saved")
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
	recv(t, closed, "Close")
	g := store.grant(t, res.url)
	if cur, _ := c.a.current(); g == nil || g.Token == nil || g.Token.RefreshToken != cur.Token.RefreshToken {
		t.Errorf("after Close the store holds %+v, want the refreshed grant", g)
	}
}
