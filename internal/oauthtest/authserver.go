package oauthtest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
)

// RedirectURL is a loopback redirect URL for clients registered with the
// fake: Headless reads the code from the redirect without following it,
// so nothing needs to listen there.
const RedirectURL = "http://127.0.0.1:9/callback"

// AuthServer is a scripted OAuth 2.1 authorization server. Its client
// IDs, secrets, codes and tokens are predictable (client-NAME-1,
// client-secret-NAME-1, access-token-NAME-3, ...) so that a test can
// name what it expects to see, or never to see, in logs and errors.
type AuthServer struct {
	// Server is the running server; a test may wrap Server.Config.Handler
	// before the first request to watch what arrives.
	Server *httptest.Server
	// Refreshed receives the new access token of every successful
	// refresh (it holds 16 before a refresh blocks).
	Refreshed chan string

	// The fields below are set, if at all, before the first request.

	// ExpiresIn is the expires_in, in seconds, of the tokens issued.
	ExpiresIn int
	// Public makes registrations public clients, with no secret
	// (token_endpoint_auth_method none).
	Public bool
	// SecretExpiresAt is the client_secret_expires_at of registrations.
	SecretExpiresAt int64
	// OnRegister, when set, sees every valid registration request first
	// and answers it itself when it returns true.
	OnRegister func(w http.ResponseWriter) bool

	t    testing.TB
	name string
	iss  string

	mu         sync.Mutex
	n          int
	clients    map[string]string // client id → secret
	redirects  map[string]string // client id → registered redirect
	codes      map[string]authCode
	access     map[string]bool // access tokens the resource accepts
	refresh    map[string]bool // refresh tokens the token endpoint accepts
	refreshErr string          // when set, a refresh is refused with this error code
	unavail    int             // refreshes answered 503 before one succeeds
	onExchange func(w http.ResponseWriter, code string) bool
	emptyBasic int // token requests with Basic and an empty secret
	registers  int
	authorizes int
	refreshes  int
	scopes     []string // scope asked by each authorization request
}

// authCode is what an issued authorization code was granted for.
type authCode struct {
	client, challenge, redirect, resource, scope string
}

// NewAuthServer starts an authorization server whose names carry name,
// closed when the test ends.
func NewAuthServer(t testing.TB, name string) *AuthServer {
	as := &AuthServer{t: t, name: name, clients: map[string]string{}, redirects: map[string]string{}, codes: map[string]authCode{},
		access: map[string]bool{}, refresh: map[string]bool{}, ExpiresIn: 3600, Refreshed: make(chan string, 16)}
	as.Server = httptest.NewServer(as)
	as.iss = as.Server.URL
	t.Cleanup(as.Server.Close)
	return as
}

// Issuer is the server's issuer identifier, its base URL.
func (as *AuthServer) Issuer() string { return as.iss }

// ServeHTTP answers the metadata, registration, authorization and token
// endpoints. A Bearer token sent here fails the test: tokens are for the
// resource only.
func (as *AuthServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		as.t.Errorf("the authorization server got a Bearer token: %s %s", r.Method, r.URL.Path)
	}
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		WriteJSON(w, http.StatusOK, map[string]any{
			"issuer": as.iss, "authorization_endpoint": as.iss + "/authorize", "token_endpoint": as.iss + "/token",
			"registration_endpoint": as.iss + "/register", "code_challenge_methods_supported": []string{"S256"},
			"token_endpoint_auth_methods_supported":          []string{"client_secret_basic"},
			"authorization_response_iss_parameter_supported": true,
			"scopes_supported":                               []string{"mcp:read", "mcp:write", "offline_access"},
		})
	case "/register":
		as.register(w, r)
	case "/authorize":
		as.authorize(w, r)
	case "/token":
		as.token(w, r)
	default:
		http.NotFound(w, r)
	}
}

// register answers a dynamic client registration (RFC 7591) that names
// one redirect URI and asks for refresh tokens.
func (as *AuthServer) register(w http.ResponseWriter, r *http.Request) {
	var meta struct {
		RedirectURIs []string `json:"redirect_uris"`
		GrantTypes   []string `json:"grant_types"`
	}
	json.NewDecoder(r.Body).Decode(&meta)
	if len(meta.RedirectURIs) != 1 || !slices.Contains(meta.GrantTypes, "refresh_token") {
		WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	as.registers++
	if as.OnRegister != nil && as.OnRegister(w) {
		return
	}
	as.n++
	id := fmt.Sprintf("client-%s-%d", as.name, as.n)
	secret := fmt.Sprintf("client-secret-%s-%d", as.name, as.n)
	body := map[string]any{"client_id": id, "client_secret": secret, "client_secret_expires_at": as.SecretExpiresAt,
		"token_endpoint_auth_method": "client_secret_basic", "redirect_uris": meta.RedirectURIs}
	if as.Public {
		secret = ""
		delete(body, "client_secret")
		body["token_endpoint_auth_method"] = "none"
	}
	as.clients[id] = secret
	as.redirects[id] = meta.RedirectURIs[0]
	WriteJSON(w, http.StatusCreated, body)
}

// authorize issues a code at once, as a user who consents, when the
// request names its registered redirect, an S256 challenge and a resource.
func (as *AuthServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	as.mu.Lock()
	as.authorizes++
	as.scopes = append(as.scopes, q.Get("scope"))
	known := as.redirects[q.Get("client_id")] == q.Get("redirect_uri")
	as.n++
	code := fmt.Sprintf("auth-code-%s-%d", as.name, as.n)
	as.codes[code] = authCode{client: q.Get("client_id"), challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"),
		resource: q.Get("resource"), scope: q.Get("scope")}
	as.mu.Unlock()
	if !known || q.Get("code_challenge_method") != "S256" || q.Get("resource") == "" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	http.Redirect(w, r, q.Get("redirect_uri")+"?"+url.Values{"code": {code}, "state": {q.Get("state")}, "iss": {as.iss}}.Encode(), http.StatusFound)
}

// token answers the token endpoint: the client authenticates with Basic
// or in the form; a code is good once, for its client, verifier, redirect
// and resource; a refresh token is good once (rotation).
func (as *AuthServer) token(w http.ResponseWriter, r *http.Request) {
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
		WriteJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		code := r.PostForm.Get("code")
		if as.onExchange != nil && as.onExchange(w, code) {
			return
		}
		c, found := as.codes[code]
		delete(as.codes, code)
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !found || c.client != id || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge ||
			r.PostForm.Get("resource") != c.resource || r.PostForm.Get("redirect_uri") != c.redirect {
			WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
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
			WriteJSON(w, http.StatusBadRequest, map[string]string{"error": as.refreshErr,
				"error_description": "refresh token " + rt + " is no longer good"})
			return
		}
		if !as.refresh[rt] {
			WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		delete(as.refresh, rt) // rotation
		at := as.issueLocked(w, "")
		as.Refreshed <- at
	default:
		WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
	}
}

// issueLocked answers a token request with a new access and refresh token.
func (as *AuthServer) issueLocked(w http.ResponseWriter, scope string) string {
	as.n++
	at := fmt.Sprintf("access-token-%s-%d", as.name, as.n)
	rt := fmt.Sprintf("refresh-token-%s-%d", as.name, as.n)
	as.access[at] = true
	as.refresh[rt] = true
	body := map[string]any{"access_token": at, "refresh_token": rt, "token_type": "Bearer", "expires_in": as.ExpiresIn}
	if scope != "" {
		body["scope"] = scope
	}
	WriteJSON(w, http.StatusOK, body)
	return at
}

// Valid reports whether the resource accepts tok: the server issued it
// and has not revoked it since.
func (as *AuthServer) Valid(tok string) bool {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.access[tok]
}

// Revoke makes the resource refuse every access token issued so far;
// the refresh tokens stay good.
func (as *AuthServer) Revoke() {
	as.mu.Lock()
	clear(as.access)
	as.mu.Unlock()
}

// Counts is how many registrations, authorization requests and refresh
// requests the server has seen.
func (as *AuthServer) Counts() (registers, authorizes, refreshes int) {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.registers, as.authorizes, as.refreshes
}

// Scopes is the scope each authorization request asked for, in order.
func (as *AuthServer) Scopes() []string {
	as.mu.Lock()
	defer as.mu.Unlock()
	return slices.Clone(as.scopes)
}

// EmptyBasic is how many token requests authenticated with Basic and an
// empty secret, which a public client must not send.
func (as *AuthServer) EmptyBasic() int {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.emptyBasic
}

// ClientSecret is the secret of the registered client id ("" for a
// public one), and whether the server knows that client.
func (as *AuthServer) ClientSecret(id string) (secret string, ok bool) {
	as.mu.Lock()
	defer as.mu.Unlock()
	secret, ok = as.clients[id]
	return secret, ok
}

// ForgetClient drops the registration of client id, as a server that
// expired it: its token requests are then refused with invalid_client.
func (as *AuthServer) ForgetClient(id string) {
	as.mu.Lock()
	delete(as.clients, id)
	as.mu.Unlock()
}

// SetRefreshErr makes every later refresh fail with the OAuth error code
// ("" lets them succeed again); the error description quotes the refresh
// token, as some servers do.
func (as *AuthServer) SetRefreshErr(code string) {
	as.mu.Lock()
	as.refreshErr = code
	as.mu.Unlock()
}

// SetUnavailable answers the next n refreshes 503 Service Unavailable.
func (as *AuthServer) SetUnavailable(n int) {
	as.mu.Lock()
	as.unavail = n
	as.mu.Unlock()
}

// SetOnExchange makes f see every code exchange from an authenticated
// client first; f answers it itself when it returns true. f runs with
// the server's lock held, so it must not call the server's methods.
func (as *AuthServer) SetOnExchange(f func(w http.ResponseWriter, code string) bool) {
	as.mu.Lock()
	as.onExchange = f
	as.mu.Unlock()
}

// WriteJSON answers with status and v as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
