package main

// A fake OAuth 2.1 authorization server and an MCP server behind it, both
// on loopback, for the sign-in tests (oauth_e2e_test.go); and this test
// binary re-executed as the browser that follows the authorization URL.

import (
	"bytes"
	"context"
	"crypto/rand"
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
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// oauthFake is an authorization server (RFC 8414 metadata, dynamic client
// registration, authorize, token with PKCE, refresh with rotation) and a
// Streamable HTTP MCP server (echo, slow) that serves only requests with
// one of its live access tokens.
type oauthFake struct {
	t   *testing.T
	iss string // the authorization server's issuer, its base URL
	url string // the MCP endpoint

	slowStarted chan struct{} // a slow call arrived
	release     chan struct{} // closed by releaseSlow: every slow call returns
	releaseOnce sync.Once

	mu         sync.Mutex
	expiresIn  int    // expires_in of the tokens issued from now on, seconds
	refreshErr string // when set, a refresh is answered with this error code
	clients    map[string]string
	codes      map[string]oauthCode
	access     map[string]time.Time // live access token → expiry
	refreshTok map[string]string    // live refresh token → client id
	lastRT     string               // the refresh token issued last
	secrets    []string             // every token, code and verifier seen
	registers  int
	authorizes int
	exchanges  int
	refreshes  int
	// badRefreshes counts refreshes with a refresh token that is not (or
	// no longer) good: one used twice, when rotated.
	badRefreshes int
	refused      int // MCP requests refused for want of a live token
	requests     []oauthRequest
}

type oauthCode struct{ client, challenge, redirect string }

// oauthRequest is an MCP request that got through: its JSON-RPC method (""
// for a GET or DELETE), the tool of a tools/call, and its access token.
type oauthRequest struct{ method, tool, token string }

func newOAuthFake(t *testing.T) *oauthFake {
	f := &oauthFake{t: t, expiresIn: 3600, slowStarted: make(chan struct{}, 8), release: make(chan struct{}),
		clients: map[string]string{}, codes: map[string]oauthCode{}, access: map[string]time.Time{}, refreshTok: map[string]string{}}
	as := httptest.NewServer(http.HandlerFunc(f.serveAS))
	f.iss = as.URL

	srv := mcp.NewServer(&mcp.Implementation{Name: "tracker", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Returns its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			return textResult("tracker:" + in.Text), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "slow", Description: "Returns once the test lets it."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ noIn) (*mcp.CallToolResult, any, error) {
			f.slowStarted <- struct{}{}
			select {
			case <-f.release:
				return textResult("slow done"), nil, nil
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		})
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Logger: slog.New(slog.DiscardHandler)})
	var rs *httptest.Server
	rs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.serveMCP(w, r, rs.URL, mcpHandler)
	}))
	f.url = rs.URL + "/mcp"
	t.Cleanup(func() {
		f.releaseSlow()
		rs.CloseClientConnections()
		rs.Close()
		as.Close()
	})
	return f
}

func (f *oauthFake) serveMCP(w http.ResponseWriter, r *http.Request, base string, next http.Handler) {
	if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" || r.URL.Path == "/.well-known/oauth-protected-resource" {
		oauthJSON(w, http.StatusOK, map[string]any{"resource": f.url, "authorization_servers": []string{f.iss},
			"bearer_methods_supported": []string{"header"}})
		return
	}
	if r.URL.Path != "/mcp" {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	f.mu.Lock()
	exp, live := f.access[tok]
	if !live || !time.Now().Before(exp) {
		f.refused++
		f.mu.Unlock()
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, base))
		http.Error(w, "a valid bearer token is required", http.StatusUnauthorized)
		return
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	json.Unmarshal(body, &msg)
	f.requests = append(f.requests, oauthRequest{method: msg.Method, tool: msg.Params.Name, token: tok})
	f.mu.Unlock()
	next.ServeHTTP(w, r)
}

func (f *oauthFake) serveAS(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" {
		f.t.Errorf("the authorization server got an Authorization header: %s %s", r.Method, r.URL.Path)
	}
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		oauthJSON(w, http.StatusOK, map[string]any{
			"issuer": f.iss, "authorization_endpoint": f.iss + "/authorize", "token_endpoint": f.iss + "/token",
			"registration_endpoint": f.iss + "/register", "code_challenge_methods_supported": []string{"S256"},
			"response_types_supported": []string{"code"}, "grant_types_supported": []string{"authorization_code", "refresh_token"},
			"token_endpoint_auth_methods_supported": []string{"none"}, "authorization_response_iss_parameter_supported": true,
		})
	case "/register":
		var meta struct {
			RedirectURIs []string `json:"redirect_uris"`
		}
		if json.NewDecoder(r.Body).Decode(&meta) != nil || len(meta.RedirectURIs) != 1 {
			oauthJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
			return
		}
		f.mu.Lock()
		f.registers++
		id := "client-" + strconv.Itoa(f.registers)
		f.clients[id] = meta.RedirectURIs[0]
		f.mu.Unlock()
		oauthJSON(w, http.StatusCreated, map[string]any{"client_id": id, "token_endpoint_auth_method": "none",
			"redirect_uris": meta.RedirectURIs, "grant_types": []string{"authorization_code", "refresh_token"}})
	case "/authorize":
		q := r.URL.Query()
		f.mu.Lock()
		f.authorizes++
		redirect, known := f.clients[q.Get("client_id")]
		known = known && redirect == q.Get("redirect_uri")
		code := f.secretLocked("code-")
		f.codes[code] = oauthCode{client: q.Get("client_id"), challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri")}
		f.mu.Unlock()
		if !known || q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("state") == "" {
			http.Error(w, "bad authorization request", http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, redirect+"?"+url.Values{"code": {code}, "state": {q.Get("state")}, "iss": {f.iss}}.Encode(), http.StatusFound)
	case "/token":
		f.token(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (f *oauthFake) token(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	form := r.PostForm
	f.mu.Lock()
	defer f.mu.Unlock()
	client := form.Get("client_id")
	if _, ok := f.clients[client]; !ok {
		oauthJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	switch form.Get("grant_type") {
	case "authorization_code":
		f.exchanges++
		verifier := form.Get("code_verifier")
		f.secrets = append(f.secrets, verifier)
		c, found := f.codes[form.Get("code")]
		delete(f.codes, form.Get("code"))
		sum := sha256.Sum256([]byte(verifier))
		if !found || c.client != client || c.redirect != form.Get("redirect_uri") || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
			oauthJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		f.issueLocked(w, client)
	case "refresh_token":
		f.refreshes++
		rt := form.Get("refresh_token")
		if f.refreshErr != "" {
			// The description quotes the refresh token, as some servers
			// do: it must not reach a log or an output.
			oauthJSON(w, http.StatusBadRequest, map[string]string{"error": f.refreshErr,
				"error_description": "refresh token " + rt + " was revoked"})
			return
		}
		if f.refreshTok[rt] != client {
			f.badRefreshes++
			oauthJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		delete(f.refreshTok, rt) // rotation: a refresh token is good once
		f.issueLocked(w, client)
	default:
		oauthJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
	}
}

// issueLocked answers a token request with a new access and refresh token.
func (f *oauthFake) issueLocked(w http.ResponseWriter, client string) {
	at, rt := f.secretLocked("at-"), f.secretLocked("rt-")
	f.access[at] = time.Now().Add(time.Duration(f.expiresIn) * time.Second)
	f.refreshTok[rt] = client
	f.lastRT = rt
	w.Header().Set("Cache-Control", "no-store")
	oauthJSON(w, http.StatusOK, map[string]any{"access_token": at, "refresh_token": rt, "token_type": "Bearer", "expires_in": f.expiresIn})
}

// secretLocked is a new unguessable value, remembered as a secret.
func (f *oauthFake) secretLocked(prefix string) string {
	s := prefix + rand.Text()
	f.secrets = append(f.secrets, s)
	return s
}

func oauthJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// releaseSlow lets every slow call, present and future, return.
func (f *oauthFake) releaseSlow() { f.releaseOnce.Do(func() { close(f.release) }) }

func (f *oauthFake) setExpiresIn(s int) {
	f.mu.Lock()
	f.expiresIn = s
	f.mu.Unlock()
}

func (f *oauthFake) setRefreshErr(code string) {
	f.mu.Lock()
	f.refreshErr = code
	f.mu.Unlock()
}

// oauthCounts is what the authorization server and the MCP server saw.
type oauthCounts struct{ registers, authorizes, exchanges, refreshes, badRefreshes, refused int }

func (f *oauthFake) counts() oauthCounts {
	f.mu.Lock()
	defer f.mu.Unlock()
	return oauthCounts{f.registers, f.authorizes, f.exchanges, f.refreshes, f.badRefreshes, f.refused}
}

// served returns the MCP requests that got through so far.
func (f *oauthFake) served() []oauthRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]oauthRequest(nil), f.requests...)
}

// countReqs is how many of reqs have method (and tool, when given).
func countReqs(reqs []oauthRequest, method, tool string) int {
	n := 0
	for _, r := range reqs {
		if r.method == method && (tool == "" || r.tool == tool) {
			n++
		}
	}
	return n
}

// lastToken is the access token of the last request of reqs with method
// and tool, "" for none.
func lastToken(reqs []oauthRequest, method, tool string) string {
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].method == method && reqs[i].tool == tool {
			return reqs[i].token
		}
	}
	return ""
}

// liveRefreshToken reports whether rt is a refresh token the server would
// take now, and whether it is the one issued last.
func (f *oauthFake) liveRefreshToken(rt string) (live, last bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, live = f.refreshTok[rt]
	return live, rt == f.lastRT
}

// noSecrets fails the test when text holds a token, code or verifier the
// fake issued or saw.
func (f *oauthFake) noSecrets(t *testing.T, what, text string) {
	t.Helper()
	f.mu.Lock()
	secrets := append([]string(nil), f.secrets...)
	f.mu.Unlock()
	for _, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			t.Errorf("%s holds a secret (%.6s…, masked):\n%s", what, s, strings.ReplaceAll(text, s, "<secret>"))
		}
	}
}

// ---------------------------------------------------------------------------
// The browser: this test binary re-executed as $BROWSER.

// browserEnv, when set, makes the test binary a browser that GETs its last
// argument, following redirects, and exits; the value is a directory where
// it records its PID (PID.pid) and, once done, the final status (PID.done).
const browserEnv = "MCPHUB_TEST_BROWSER"

func init() {
	if dir := os.Getenv(browserEnv); dir != "" && os.Getenv(childEnv) == "" && len(os.Args) > 1 {
		os.Exit(browserMain(dir, os.Args[len(os.Args)-1]))
	}
}

// browserModeEnv makes the test browser a user who refuses the sign-in
// ("deny": back to the redirect with error=access_denied) or one whose
// redirect carries a code the authorization server never issued
// ("badcode").
const browserModeEnv = "MCPHUB_TEST_BROWSER_MODE"

// browserTarget is where the test browser goes for the authorization URL
// target, by its mode.
func browserTarget(hc *http.Client, target string) string {
	u, err := url.Parse(target)
	if err != nil {
		return target
	}
	switch os.Getenv(browserModeEnv) {
	case "deny":
		q := u.Query()
		return q.Get("redirect_uri") + "?error=access_denied&state=" + url.QueryEscape(q.Get("state"))
	case "badcode":
		noFollow := &http.Client{Timeout: hc.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noFollow.Get(target)
		if err != nil {
			return target
		}
		resp.Body.Close()
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil {
			return target
		}
		q := loc.Query()
		q.Set("code", "bogus")
		loc.RawQuery = q.Encode()
		return loc.String()
	}
	return target
}

func browserMain(dir, target string) int {
	pid := strconv.Itoa(os.Getpid())
	os.WriteFile(filepath.Join(dir, pid+".pid"), nil, 0o600)
	hc := &http.Client{Timeout: 30 * time.Second}
	result := "ok"
	target = browserTarget(hc, target)
	resp, err := hc.Get(target)
	switch {
	case err != nil:
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL holds the code
		}
		result = "error: " + err.Error()
	default:
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			result = "status " + resp.Status
		}
	}
	os.WriteFile(filepath.Join(dir, pid+".done"), []byte(result), 0o600)
	if result != "ok" {
		return 1
	}
	return 0
}

// useBrowser makes $BROWSER this test binary as a browser for the rest of
// the test; cleanup waits for every browser it started to exit, and ends
// one that does not by its PID.
func useBrowser(t *testing.T) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(exe, " \t") || strings.ContainsRune(exe, os.PathListSeparator) {
		t.Skipf("the test binary's path %q cannot be written in $BROWSER", exe)
	}
	dir := t.TempDir()
	t.Setenv(browserEnv, dir)
	t.Setenv("BROWSER", exe)
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	t.Cleanup(func() {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			name, ok := strings.CutSuffix(e.Name(), ".pid")
			if !ok {
				continue
			}
			pid, _ := strconv.Atoi(name)
			if pid <= 0 || poll(10*time.Second, func() bool { return pidGone(pid) }) {
				continue
			}
			t.Errorf("browser %d did not exit; killing it", pid)
			killPID(pid)
		}
		if t.Failed() {
			for _, e := range ents {
				if strings.HasSuffix(e.Name(), ".done") {
					b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
					t.Logf("browser %s: %s", e.Name(), b)
				}
			}
		}
	})
}
