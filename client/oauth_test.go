package client

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

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/oauth"
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

// fakeResource is an MCP server (the scripted fakeStreamable, or a legacy
// one) behind a Bearer check against the authorization server it names.
type fakeResource struct {
	t      *testing.T
	srv    *httptest.Server
	url    string // the MCP endpoint
	path   string // its path
	mcp    *fakeStreamable
	legacy *fakeLegacy

	mu       sync.Mutex
	as       *fakeAS
	static   string                          // a token accepted besides the AS's
	forbid   func(m *jsonrpc.Message) string // a scope a request lacks, "" for none
	hold401  int                             // refusals held until this many arrived
	held     int
	release  chan struct{}
	bearers  []string // the Authorization of every MCP request
	refusals int
}

func newFakeResource(t *testing.T, as *fakeAS, legacy bool) *fakeResource {
	res := &fakeResource{t: t, as: as, release: make(chan struct{}), path: "/mcp"}
	if legacy {
		res.legacy = newFakeLegacy(t)
		res.path = "/sse"
	} else {
		res.mcp = newFakeStreamable(t)
	}
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
	r.Body = io.NopCloser(bytes.NewReader(body))
	authz := r.Header.Get("Authorization")
	tok, _ := strings.CutPrefix(authz, "Bearer ")
	res.mu.Lock()
	res.bearers = append(res.bearers, authz)
	static, forbid := res.static, res.forbid
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
	if m, err := jsonrpc.Decode(body); err == nil && forbid != nil {
		if scope := forbid(m); scope != "" {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="%s", resource_metadata="%s"`, scope, prm))
			http.Error(w, "insufficient scope", http.StatusForbidden)
			return
		}
	}
	if res.legacy != nil {
		res.legacy.ServeHTTP(w, r)
		return
	}
	res.mcp.ServeHTTP(w, r)
}

func (res *fakeResource) setForbid(f func(m *jsonrpc.Message) string) {
	res.mu.Lock()
	res.forbid = f
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

// memStore is an oauth.TokenStore in memory.
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

func (s *memStore) grant(t *testing.T, serverURL string) *oauth.Grant {
	t.Helper()
	g, err := oauth.LoadGrant(s, serverURL)
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

// newOAuthConn prepares a connection to res with oc; start it with
// startOAuth, after setting any test hook.
func newOAuthConn(t *testing.T, res *fakeResource, oc *oauth.Config, transport string) (*Conn, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	cfg := Config{Name: "remote", URL: res.url, Transport: transport, OAuth: oc,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	c := New(cfg, nil)
	t.Cleanup(func() { c.Close() })
	return c, logs
}

func startOAuth(t *testing.T, c *Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
}

func call(t *testing.T, c *Conn, method string, params string) (json.RawMessage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var p json.RawMessage
	if params != "" {
		p = json.RawMessage(params)
	}
	return c.Call(ctx, method, p)
}

// signIn signs in to res once, with a connection that is closed after.
func signIn(t *testing.T, res *fakeResource, store oauth.TokenStore) *oauth.Grant {
	t.Helper()
	var fetches atomic.Int32
	c, _ := newOAuthConn(t, res, &oauth.Config{Store: store, Fetch: headless(&fetches), RedirectURL: testRedirect}, TransportStreamableHTTP)
	startOAuth(t, c)
	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Fatalf("tools/list after sign-in: %v", err)
	}
	c.Close()
	g, err := oauth.LoadGrant(store, res.url)
	if err != nil || !hasToken(g) {
		t.Fatalf("no grant stored after sign-in: %+v, %v", g, err)
	}
	return g
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

// TestOAuthBackgroundRefresh checks that the refresher renews the token
// while a call's stream is open, that nothing fails or reconnects, that
// the next requests carry a new token and that the rotated refresh token
// is stored. (The oauth room's own test pins when the refresh is due.)
func TestOAuthBackgroundRefresh(t *testing.T) {
	as := newFakeAS(t, "a")
	as.expiresIn = 3 // refreshed in real time, at about 80% of 3 s
	res := newFakeResource(t, as, false)
	store := newMemStore()
	first := signIn(t, res, store)

	gotSlow := make(chan struct{})
	finish := make(chan struct{})
	res.mcp.tools["slow"] = func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, sess *fakeSession) {
		startSSE(w)
		close(gotSlow)
		<-finish
		writeSSE(w, sseData(jsonrpc.NewResponse(m.ID, json.RawMessage(`{"content":[]}`))))
	}
	changed := make(chan struct{}, 16)
	gets := res.mcp.count(isGET)
	c, logs := newOAuthConn(t, res, &oauth.Config{Store: store, OnChange: func() { changed <- struct{}{} }}, TransportStreamableHTTP)
	startOAuth(t, c)
	slow := make(chan error, 1)
	go func() {
		_, err := call(t, c, "tools/call", `{"name":"slow"}`)
		slow <- err
	}()
	recv(t, gotSlow, "the slow call")

	second := recv(t, as.refreshed, "a refresh")
	recv(t, changed, "the refreshed grant to be stored")

	close(finish)
	if err := recv(t, slow, "the slow call's result"); err != nil {
		t.Errorf("the call open across the refresh failed: %v", err)
	}
	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Fatalf("tools/list after the refresh: %v", err)
	}
	if got := res.lastBearer(); got == "Bearer "+first.Token.AccessToken {
		t.Errorf("after the refresh a request carried %q, the old token", got)
	}
	if n := res.mcp.count(isGET) - gets; n != 1 {
		t.Errorf("%d GET streams were opened, want 1 (none dropped)", n)
	}
	g := store.grant(t, res.url)
	if g.Token.AccessToken == first.Token.AccessToken || g.Token.RefreshToken == first.Token.RefreshToken || g.Token.RefreshToken == "" {
		t.Errorf("stored token after the refresh: access %q refresh %q (first refresh %q)", g.Token.AccessToken, g.Token.RefreshToken, first.Token.RefreshToken)
	}
	if g.ClientID != first.ClientID || g.Issuer != first.Issuer {
		t.Errorf("the refresh changed the registration: %+v", g)
	}
	noSecrets(t, "the logs", logs.String(), first.Token.AccessToken, first.Token.RefreshToken, second, g.Token.RefreshToken, g.ClientSecret)
}

// TestOAuthBearerStaysOnOrigin checks that the token never goes to a
// legacy endpoint on another origin. (The oauth room's own test checks
// that it never follows a redirect there.)
func TestOAuthBearerStaysOnOrigin(t *testing.T) {
	var mu sync.Mutex
	var elsewhere []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere = append(elsewhere, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		if m, err := jsonrpc.Decode(body); err == nil && m.IsRequest() {
			writeJSONMsg(w, jsonrpc.NewResponse(m.ID, json.RawMessage(`{"content":[]}`)))
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
		res := newFakeResource(t, as, true)
		res.legacy.endpoint = other.URL + "/messages?sessionId=abc"
		var fetches atomic.Int32
		c, _ := newOAuthConn(t, res, &oauth.Config{Fetch: headless(&fetches), RedirectURL: testRedirect}, TransportSSE)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		before := len(seen())
		err := c.Start(ctx)
		if err == nil || !strings.Contains(err.Error(), "another origin") {
			t.Errorf("Start: %v, want the endpoint on another origin refused", err)
		}
		if got := seen(); len(got) != before {
			t.Errorf("the other origin saw %q", got[before:])
		}
	}
}

// TestOAuthLegacySSE signs in on the legacy transport's stream and checks
// that the stream and the POSTs carry the token.
func TestOAuthLegacySSE(t *testing.T) {
	as := newFakeAS(t, "a")
	res := newFakeResource(t, as, true)
	var fetches atomic.Int32
	store := newMemStore()
	c, _ := newOAuthConn(t, res, &oauth.Config{Store: store, Fetch: headless(&fetches), RedirectURL: testRedirect}, TransportSSE)
	startOAuth(t, c)
	if _, err := call(t, c, "tools/call", `{"name":"x"}`); err != nil {
		t.Fatalf("tools/call: %v", err)
	}
	g := store.grant(t, c.cfg.URL)
	if fetches.Load() != 1 || !hasToken(g) {
		t.Fatalf("signed in %d times, grant %+v", fetches.Load(), g)
	}
	for _, r := range res.legacy.requests(nil) {
		if r.header.Get("Authorization") != "Bearer "+g.Token.AccessToken {
			t.Errorf("%s %s carried %q", r.method, r.path, r.header.Get("Authorization"))
		}
	}
}

// TestOAuthStaticHeaderWins checks that an Authorization header from the
// configuration is sent as it is and never replaced by the OAuth token.
func TestOAuthStaticHeaderWins(t *testing.T) {
	as := newFakeAS(t, "a")
	res := newFakeResource(t, as, false)
	store := newMemStore()
	g := signIn(t, res, store)
	res.mu.Lock()
	res.static = "static-header-token"
	res.mu.Unlock()
	mark := res.mark()
	var fetches atomic.Int32
	c := New(Config{Name: "remote", URL: res.url, Transport: TransportStreamableHTTP, Headers: map[string]string{"authorization": "Bearer static-header-token"},
		OAuth: &oauth.Config{Store: store, Fetch: headless(&fetches), RedirectURL: testRedirect}}, nil)
	t.Cleanup(func() { c.Close() })
	startOAuth(t, c)
	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if got := res.lastBearer(); got != "Bearer static-header-token" {
		t.Errorf("a request carried %q, want the static header", got)
	}
	if res.sawBearerSince(mark, g.Token.AccessToken) || fetches.Load() != 0 {
		t.Error("the OAuth token was sent, or a sign-in ran, despite the static header")
	}
}

// TestOAuthNoFetchNeedsLogin checks that a connection that cannot sign in
// and has no grant reports that sign-in is needed.
func TestOAuthNoFetchNeedsLogin(t *testing.T) {
	as := newFakeAS(t, "a")
	res := newFakeResource(t, as, false)
	c, _ := newOAuthConn(t, res, &oauth.Config{Store: newMemStore()}, TransportStreamableHTTP)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := c.Start(ctx)
	var ae *AuthRequiredError
	if !errors.As(err, &ae) || ae.Err != nil || ae.ResourceMetadata == "" {
		t.Fatalf("Start: %v, want an AuthRequiredError", err)
	}
	if registers, authorizes, _ := as.counts(); registers+authorizes != 0 {
		t.Error("a connection without Fetch signed in")
	}
}

// TestOAuthErrorsHoldNoSecrets makes sign-in and refresh fail with answers
// that quote the code, the tokens and the client secret, and checks that
// none of them reaches an error.
func TestOAuthErrorsHoldNoSecrets(t *testing.T) {
	as := newFakeAS(t, "a")
	res := newFakeResource(t, as, false)
	store := newMemStore()
	g := signIn(t, res, store)
	as.revoke()
	var quoted []string
	as.mu.Lock()
	as.exchangeFn = func(w http.ResponseWriter, code string) bool {
		// The lock is held: as.clients is read directly.
		msg := fmt.Sprintf("cannot use code %s for %s (secret %s); old tokens %s %s", code, g.ClientID, as.clients[g.ClientID], g.Token.AccessToken, g.Token.RefreshToken)
		quoted = append(quoted, code)
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, msg)
		return true
	}
	as.mu.Unlock()
	var fetches atomic.Int32
	c, logs := newOAuthConn(t, res, &oauth.Config{Store: store, Fetch: headless(&fetches), RedirectURL: testRedirect}, TransportStreamableHTTP)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := c.Start(ctx)
	var ae *AuthRequiredError
	if !errors.As(err, &ae) || ae.Err == nil {
		t.Fatalf("Start: %v, want an AuthRequiredError saying why signing in failed", err)
	}
	if !strings.Contains(err.Error(), "signing in failed") || !strings.Contains(err.Error(), "Internal Server Error") {
		t.Errorf("error %q does not say why", err)
	}
	as.mu.Lock()
	secrets := append([]string{g.Token.AccessToken, g.Token.RefreshToken, g.ClientSecret}, quoted...)
	as.mu.Unlock()
	if len(quoted) == 0 {
		t.Fatal("no code was exchanged")
	}
	noSecrets(t, "the error", err.Error(), secrets...)
	noSecrets(t, "the logs", logs.String(), secrets...)
}

// TestOAuthHubRecordsWantedScopes: a connection that cannot sign in (the
// hub's) fails a request refused 403 insufficient_scope with an HTTPError
// naming the scope, and records the scope in the stored grant; the next sign-in
// (mcphub login) asks for it with the scopes granted before, and the
// grant then wants nothing more.
func TestOAuthHubRecordsWantedScopes(t *testing.T) {
	as := newFakeAS(t, "a")
	res := newFakeResource(t, as, false)
	res.setForbid(func(m *jsonrpc.Message) string {
		if m.Method == "tools/call" && toolName(m) == "write" {
			return "mcp:write"
		}
		return ""
	})
	store := newMemStore()
	signIn(t, res, store)

	hub, _ := newOAuthConn(t, res, &oauth.Config{Store: store}, TransportStreamableHTTP)
	startOAuth(t, hub)
	_, err := call(t, hub, "tools/call", `{"name":"write"}`)
	var he *HTTPError
	if !errors.As(err, &he) || he.Status != http.StatusForbidden || he.Scope != "mcp:write" || !strings.Contains(err.Error(), "lacks the scope the request needs (mcp:write)") {
		t.Fatalf("the hub's call: %v, want an HTTP 403 naming scope mcp:write", err)
	}
	hub.Close()
	g, _ := oauth.LoadGrant(store, res.url)
	if g == nil || !slices.Contains(g.Wanted, "mcp:write") {
		t.Fatalf("stored grant wants %v, want mcp:write", g)
	}

	// mcphub login signs in again with the stored grant's token left out.
	g.Token = nil
	data, _ := json.Marshal(g)
	if err := store.Save(oauth.CanonicalResource(res.url), data); err != nil {
		t.Fatal(err)
	}
	res.setForbid(nil)
	g = signIn(t, res, store)
	as.mu.Lock()
	last := strings.Fields(as.scopes[len(as.scopes)-1])
	as.mu.Unlock()
	if !slices.Contains(last, "mcp:write") || !slices.Contains(last, "mcp:read") {
		t.Errorf("the next sign-in asked for %v, want mcp:write with mcp:read", last)
	}
	if len(g.Wanted) != 0 {
		t.Errorf("after signing in the grant still wants %v", g.Wanted)
	}
}

// hasToken reports whether g holds an access token.
func hasToken(g *oauth.Grant) bool { return g != nil && g.Token != nil && g.Token.AccessToken != "" }
