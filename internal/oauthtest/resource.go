package oauthtest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// AuthorizationServer is what a Resource needs of the authorization
// server it names: its issuer for the protected resource metadata, and
// whether it issued a token. *AuthServer is one; a test may bring another.
type AuthorizationServer interface {
	Issuer() string
	Valid(token string) bool
}

// Resource is an MCP server behind a Bearer check against the
// authorization server it names. A request without a valid token gets
// 401 with a challenge naming its protected resource metadata (scope
// mcp:read); one refused by the Forbid function gets 403
// insufficient_scope; the rest go to the handler it wraps, with their
// body intact.
type Resource struct {
	// URL is the MCP endpoint, Server's URL and the path it was given.
	URL string
	// Server is the running server.
	Server *httptest.Server

	path string
	next http.Handler

	mu      sync.Mutex
	as      AuthorizationServer
	static  string                   // a token accepted besides the AS's
	forbid  func(body []byte) string // a scope a request lacks, "" for none
	hold    int                      // refusals held until this many arrived
	held    int
	release chan struct{}
	bearers []string // the Authorization of every MCP request
}

// NewResource starts a resource at path (such as /mcp) that hands the
// requests it accepts to next, closed when the test ends.
func NewResource(t testing.TB, as AuthorizationServer, path string, next http.Handler) *Resource {
	res := &Resource{as: as, path: path, next: next, release: make(chan struct{})}
	res.Server = httptest.NewServer(res)
	res.URL = res.Server.URL + path
	t.Cleanup(res.Server.Close)
	return res
}

// ServeHTTP answers the protected resource metadata, checks the Bearer
// token, then the scope, then hands the request on.
func (res *Resource) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	res.mu.Lock()
	as := res.as
	res.mu.Unlock()
	prm := res.Server.URL + "/.well-known/oauth-protected-resource" + res.path
	if r.URL.Path == "/.well-known/oauth-protected-resource"+res.path {
		WriteJSON(w, http.StatusOK, map[string]any{"resource": res.URL, "authorization_servers": []string{as.Issuer()},
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
	if !(tok != "" && (as.Valid(tok) || tok == static)) {
		if !res.holdRefusal(r) {
			return
		}
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s", scope="mcp:read"`, prm))
		http.Error(w, `{"error":"invalid_token","echo":"`+authz+`"}`, http.StatusUnauthorized)
		return
	}
	if forbid != nil {
		if scope := forbid(body); scope != "" {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="%s", resource_metadata="%s"`, scope, prm))
			http.Error(w, "insufficient scope", http.StatusForbidden)
			return
		}
	}
	res.next.ServeHTTP(w, r)
}

// holdRefusal counts a refusal and, while HoldRefusals is in force,
// holds it until the number asked for arrived; false when the request
// ended first.
func (res *Resource) holdRefusal(r *http.Request) bool {
	res.mu.Lock()
	res.held++
	hold, held, release := res.hold, res.held, res.release
	if hold > 0 && held == hold {
		close(release)
	}
	res.mu.Unlock()
	if hold > 0 {
		select {
		case <-release:
		case <-r.Context().Done():
			return false
		}
	}
	return true
}

// HoldRefusals holds the refusals from now on until n of them arrived,
// then answers them all at once: concurrent requests are refused
// together.
func (res *Resource) HoldRefusals(n int) {
	res.mu.Lock()
	res.hold, res.held = n, 0
	res.mu.Unlock()
}

// SetAS makes as the authorization server the resource names and
// accepts tokens of.
func (res *Resource) SetAS(as AuthorizationServer) {
	res.mu.Lock()
	res.as = as
	res.mu.Unlock()
}

// SetStatic makes the resource accept tok besides the tokens of its
// authorization server, as a server configured with a static header.
func (res *Resource) SetStatic(tok string) {
	res.mu.Lock()
	res.static = tok
	res.mu.Unlock()
}

// SetForbid makes f see the body of every request with a valid token:
// the scope it returns ("" for none) is one the request lacks, and the
// request is refused 403 insufficient_scope. nil forbids nothing.
func (res *Resource) SetForbid(f func(body []byte) string) {
	res.mu.Lock()
	res.forbid = f
	res.mu.Unlock()
}

// SawBearer reports whether some MCP request carried tok.
func (res *Resource) SawBearer(tok string) bool { return res.SawBearerSince(0, tok) }

// Mark is where SawBearerSince starts looking: the number of requests
// seen so far.
func (res *Resource) Mark() int {
	res.mu.Lock()
	defer res.mu.Unlock()
	return len(res.bearers)
}

// SawBearerSince reports whether some MCP request since mark carried tok.
func (res *Resource) SawBearerSince(mark int, tok string) bool {
	res.mu.Lock()
	defer res.mu.Unlock()
	return slices.Contains(res.bearers[mark:], "Bearer "+tok)
}

// LastBearer is the Authorization header of the last MCP request.
func (res *Resource) LastBearer() string {
	res.mu.Lock()
	defer res.mu.Unlock()
	return res.bearers[len(res.bearers)-1]
}
