package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/oauthtest"
	"github.com/mcphub/mcphub/internal/testkit"
	"github.com/mcphub/mcphub/oauth"
)

// The tests of OAuth sign-in run against oauthtest's fake authorization
// server and a fake MCP server that wants its tokens, both on loopback.

// fakeResource is an MCP server (the scripted fakeStreamable, or a legacy
// one) behind oauthtest's Bearer check.
type fakeResource struct {
	*oauthtest.Resource
	mcp    *fakeStreamable
	legacy *fakeLegacy
}

func newFakeResource(t *testing.T, as *oauthtest.AuthServer, legacy bool) *fakeResource {
	res := &fakeResource{}
	if legacy {
		res.legacy = newFakeLegacy(t)
		res.Resource = oauthtest.NewResource(t, as, "/sse", res.legacy)
	} else {
		res.mcp = newFakeStreamable(t)
		res.Resource = oauthtest.NewResource(t, as, "/mcp", res.mcp)
	}
	return res
}

// setForbid makes f decide the scope each JSON-RPC message lacks (""
// for none).
func (res *fakeResource) setForbid(f func(m *jsonrpc.Message) string) {
	if f == nil {
		res.SetForbid(nil)
		return
	}
	res.SetForbid(func(body []byte) string {
		m, err := jsonrpc.Decode(body)
		if err != nil {
			return ""
		}
		return f(m)
	})
}

// storedGrant is the grant s holds for serverURL.
func storedGrant(t *testing.T, s oauth.TokenStore, serverURL string) *oauth.Grant {
	t.Helper()
	g, err := oauth.LoadGrant(s, serverURL)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// newOAuthConn prepares a connection to res with oc; start it with
// startOAuth, after setting any test hook.
func newOAuthConn(t *testing.T, res *fakeResource, oc *oauth.Config, transport string) (*Conn, *testkit.SyncBuffer) {
	t.Helper()
	logs := &testkit.SyncBuffer{}
	cfg := Config{Name: "remote", URL: res.URL, Transport: transport, OAuth: oc,
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
	c, _ := newOAuthConn(t, res, &oauth.Config{Store: store, Fetch: oauthtest.Headless(&fetches), RedirectURL: oauthtest.RedirectURL}, TransportStreamableHTTP)
	startOAuth(t, c)
	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Fatalf("tools/list after sign-in: %v", err)
	}
	c.Close()
	g, err := oauth.LoadGrant(store, res.URL)
	if err != nil || !hasToken(g) {
		t.Fatalf("no grant stored after sign-in: %+v, %v", g, err)
	}
	return g
}

// TestOAuthBackgroundRefresh checks that the refresher renews the token
// while a call's stream is open, that nothing fails or reconnects, that
// the next requests carry a new token and that the rotated refresh token
// is stored. (The oauth room's own test pins when the refresh is due.)
func TestOAuthBackgroundRefresh(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "a")
	as.ExpiresIn = 3 // refreshed in real time, at about 80% of 3 s
	res := newFakeResource(t, as, false)
	store := oauthtest.NewMemStore()
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
	testkit.Recv(t, gotSlow, "the slow call")

	second := testkit.Recv(t, as.Refreshed, "a refresh")
	testkit.Recv(t, changed, "the refreshed grant to be stored")

	close(finish)
	if err := testkit.Recv(t, slow, "the slow call's result"); err != nil {
		t.Errorf("the call open across the refresh failed: %v", err)
	}
	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Fatalf("tools/list after the refresh: %v", err)
	}
	if got := res.LastBearer(); got == "Bearer "+first.Token.AccessToken {
		t.Errorf("after the refresh a request carried %q, the old token", got)
	}
	if n := res.mcp.count(isGET) - gets; n != 1 {
		t.Errorf("%d GET streams were opened, want 1 (none dropped)", n)
	}
	g := storedGrant(t, store, res.URL)
	if g.Token.AccessToken == first.Token.AccessToken || g.Token.RefreshToken == first.Token.RefreshToken || g.Token.RefreshToken == "" {
		t.Errorf("stored token after the refresh: access %q refresh %q (first refresh %q)", g.Token.AccessToken, g.Token.RefreshToken, first.Token.RefreshToken)
	}
	if g.ClientID != first.ClientID || g.Issuer != first.Issuer {
		t.Errorf("the refresh changed the registration: %+v", g)
	}
	testkit.NoSecrets(t, "the logs", logs.String(), first.Token.AccessToken, first.Token.RefreshToken, second, g.Token.RefreshToken, g.ClientSecret)
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
		as := oauthtest.NewAuthServer(t, "a")
		res := newFakeResource(t, as, true)
		res.legacy.endpoint = other.URL + "/messages?sessionId=abc"
		var fetches atomic.Int32
		c, _ := newOAuthConn(t, res, &oauth.Config{Fetch: oauthtest.Headless(&fetches), RedirectURL: oauthtest.RedirectURL}, TransportSSE)
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
	as := oauthtest.NewAuthServer(t, "a")
	res := newFakeResource(t, as, true)
	var fetches atomic.Int32
	store := oauthtest.NewMemStore()
	c, _ := newOAuthConn(t, res, &oauth.Config{Store: store, Fetch: oauthtest.Headless(&fetches), RedirectURL: oauthtest.RedirectURL}, TransportSSE)
	startOAuth(t, c)
	if _, err := call(t, c, "tools/call", `{"name":"x"}`); err != nil {
		t.Fatalf("tools/call: %v", err)
	}
	g := storedGrant(t, store, c.cfg.URL)
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
	as := oauthtest.NewAuthServer(t, "a")
	res := newFakeResource(t, as, false)
	store := oauthtest.NewMemStore()
	g := signIn(t, res, store)
	res.SetStatic("static-header-token")
	mark := res.Mark()
	var fetches atomic.Int32
	c := New(Config{Name: "remote", URL: res.URL, Transport: TransportStreamableHTTP, Headers: map[string]string{"authorization": "Bearer static-header-token"},
		OAuth: &oauth.Config{Store: store, Fetch: oauthtest.Headless(&fetches), RedirectURL: oauthtest.RedirectURL}}, nil)
	t.Cleanup(func() { c.Close() })
	startOAuth(t, c)
	if _, err := call(t, c, "tools/list", ""); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if got := res.LastBearer(); got != "Bearer static-header-token" {
		t.Errorf("a request carried %q, want the static header", got)
	}
	if res.SawBearerSince(mark, g.Token.AccessToken) || fetches.Load() != 0 {
		t.Error("the OAuth token was sent, or a sign-in ran, despite the static header")
	}
}

// TestOAuthNoFetchNeedsLogin checks that a connection that cannot sign in
// and has no grant reports that sign-in is needed.
func TestOAuthNoFetchNeedsLogin(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "a")
	res := newFakeResource(t, as, false)
	c, _ := newOAuthConn(t, res, &oauth.Config{Store: oauthtest.NewMemStore()}, TransportStreamableHTTP)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := c.Start(ctx)
	var ae *AuthRequiredError
	if !errors.As(err, &ae) || ae.Err != nil || ae.ResourceMetadata == "" {
		t.Fatalf("Start: %v, want an AuthRequiredError", err)
	}
	if registers, authorizes, _ := as.Counts(); registers+authorizes != 0 {
		t.Error("a connection without Fetch signed in")
	}
}

// TestOAuthErrorsHoldNoSecrets makes sign-in and refresh fail with answers
// that quote the code, the tokens and the client secret, and checks that
// none of them reaches an error.
func TestOAuthErrorsHoldNoSecrets(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "a")
	res := newFakeResource(t, as, false)
	store := oauthtest.NewMemStore()
	g := signIn(t, res, store)
	as.Revoke()
	var mu sync.Mutex
	var quoted []string
	secret, _ := as.ClientSecret(g.ClientID)
	as.SetOnExchange(func(w http.ResponseWriter, code string) bool {
		msg := fmt.Sprintf("cannot use code %s for %s (secret %s); old tokens %s %s", code, g.ClientID, secret, g.Token.AccessToken, g.Token.RefreshToken)
		mu.Lock()
		quoted = append(quoted, code)
		mu.Unlock()
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, msg)
		return true
	})
	var fetches atomic.Int32
	c, logs := newOAuthConn(t, res, &oauth.Config{Store: store, Fetch: oauthtest.Headless(&fetches), RedirectURL: oauthtest.RedirectURL}, TransportStreamableHTTP)
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
	mu.Lock()
	secrets := append([]string{g.Token.AccessToken, g.Token.RefreshToken, g.ClientSecret}, quoted...)
	mu.Unlock()
	if len(quoted) == 0 {
		t.Fatal("no code was exchanged")
	}
	testkit.NoSecrets(t, "the error", err.Error(), secrets...)
	testkit.NoSecrets(t, "the logs", logs.String(), secrets...)
}

// TestOAuthHubRecordsWantedScopes: a connection that cannot sign in (the
// hub's) fails a request refused 403 insufficient_scope with an HTTPError
// naming the scope, and records the scope in the stored grant; the next sign-in
// (mcphub login) asks for it with the scopes granted before, and the
// grant then wants nothing more.
func TestOAuthHubRecordsWantedScopes(t *testing.T) {
	as := oauthtest.NewAuthServer(t, "a")
	res := newFakeResource(t, as, false)
	res.setForbid(func(m *jsonrpc.Message) string {
		if m.Method == "tools/call" && toolName(m) == "write" {
			return "mcp:write"
		}
		return ""
	})
	store := oauthtest.NewMemStore()
	signIn(t, res, store)

	hub, _ := newOAuthConn(t, res, &oauth.Config{Store: store}, TransportStreamableHTTP)
	startOAuth(t, hub)
	_, err := call(t, hub, "tools/call", `{"name":"write"}`)
	var he *HTTPError
	if !errors.As(err, &he) || he.Status != http.StatusForbidden || he.Scope != "mcp:write" || !strings.Contains(err.Error(), "lacks the scope the request needs (mcp:write)") {
		t.Fatalf("the hub's call: %v, want an HTTP 403 naming scope mcp:write", err)
	}
	hub.Close()
	g, _ := oauth.LoadGrant(store, res.URL)
	if g == nil || !slices.Contains(g.Wanted, "mcp:write") {
		t.Fatalf("stored grant wants %v, want mcp:write", g)
	}

	// mcphub login signs in again with the stored grant's token left out.
	g.Token = nil
	data, _ := json.Marshal(g)
	if err := store.Save(oauth.CanonicalResource(res.URL), data); err != nil {
		t.Fatal(err)
	}
	res.setForbid(nil)
	g = signIn(t, res, store)
	scopes := as.Scopes()
	last := strings.Fields(scopes[len(scopes)-1])
	if !slices.Contains(last, "mcp:write") || !slices.Contains(last, "mcp:read") {
		t.Errorf("the next sign-in asked for %v, want mcp:write with mcp:read", last)
	}
	if len(g.Wanted) != 0 {
		t.Errorf("after signing in the grant still wants %v", g.Wanted)
	}
}

// hasToken reports whether g holds an access token.
func hasToken(g *oauth.Grant) bool { return g != nil && g.Token != nil && g.Token.AccessToken != "" }
