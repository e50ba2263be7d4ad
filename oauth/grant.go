package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// TokenStore keeps OAuth grants between runs, as opaque bytes under a key
// (the server's canonical resource, see CanonicalResource). Load returns
// nil, nil when nothing is stored. Implementations must be safe for
// concurrent use; the data holds secrets (tokens, client secrets).
type TokenStore interface {
	Load(key string) ([]byte, error)
	Save(key string, data []byte) error
	Delete(key string) error
}

// GrantLocker is a TokenStore several processes share (a team hub's
// replicas on one database) that can lock a grant: the refresh of a grant
// holds its lock, so that exactly one process refreshes it at a time and
// the others take the token it stored.
type GrantLocker interface {
	LockGrant(ctx context.Context, key string) (unlock func(), err error)
}

// Grant is what a sign-in to one server leaves behind, stored as JSON in a
// TokenStore: the client registration it used with the authorization
// server, that server's endpoints, and the token.
type Grant struct {
	// Issuer is the authorization server's issuer identifier, as its
	// metadata stated it; "" when the server published none (the
	// 2025-03-26 fallback). The client registration below is only good
	// with that server.
	Issuer       string `json:"issuer"`
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	// ClientSecretExpiresAt is when a dynamically registered client's
	// secret expires (Unix seconds; 0 for never).
	ClientSecretExpiresAt int64 `json:"client_secret_expires_at,omitempty"`
	// AuthStyle is how the client authenticates at the token endpoint:
	// oauth2.AuthStyleInHeader (client_secret_basic) or
	// oauth2.AuthStyleInParams (client_secret_post, or none with an empty
	// secret); never AuthStyleAutoDetect.
	AuthStyle oauth2.AuthStyle `json:"auth_style"`
	TokenURL  string           `json:"token_url"`
	// Resource is the resource indicator (RFC 8707) the token was asked
	// for, sent again with every refresh.
	Resource string `json:"resource,omitempty"`
	// Dynamic marks a client mcphub registered itself (RFC 7591), for
	// RedirectURL. A later sign-in presents such a registration again when
	// it has a secret and the same authorization server answers; a public
	// one (no secret) is registered anew.
	Dynamic     bool   `json:"dynamic,omitempty"`
	RedirectURL string `json:"redirect_url,omitempty"`
	// Scopes are the scopes granted, kept so that a later sign-in asks for
	// them as well as for what the server then wants (step-up).
	Scopes []string `json:"scopes,omitempty"`
	// Wanted are scopes a request was refused for want of (403
	// insufficient_scope) on a connection that cannot sign in (the hub's):
	// the next sign-in asks for them too.
	Wanted []string `json:"wanted,omitempty"`
	// Token is nil once the authorization server refused to refresh it:
	// someone has to sign in again.
	Token *oauth2.Token `json:"token,omitempty"`
	// Saved is when this version of the grant was made: of two grants for
	// the same server, the later one holds the newer token.
	Saved time.Time `json:"saved,omitzero"`
}

// hasToken reports whether g holds an access token.
func (g *Grant) hasToken() bool { return g != nil && g.Token != nil && g.Token.AccessToken != "" }

// stamp is the Saved time of a grant that replaces one saved at prev:
// now, but always after prev.
func stamp(prev time.Time) time.Time {
	now := time.Now().Round(0)
	if !now.After(prev) {
		now = prev.Add(time.Nanosecond)
	}
	return now
}

// CanonicalResource is the key a server's grant is stored under: its URL
// with the scheme and host in lower case, a default port dropped, and no
// user info, query, fragment or trailing slash.
func CanonicalResource(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.IndexAny(raw, "?#"); i >= 0 {
			raw = raw[:i]
		}
		return strings.TrimRight(raw, "/")
	}
	r := resourceURL(u)
	if port := r.Port(); (r.Scheme == "https" && port == "443") || (r.Scheme == "http" && port == "80") {
		r.Host = r.Hostname()
		if strings.Contains(r.Host, ":") {
			r.Host = "[" + r.Host + "]"
		}
	}
	r.Path = strings.TrimRight(r.Path, "/")
	r.RawPath = strings.TrimRight(r.RawPath, "/")
	return r.String()
}

// resourceURL is the server URL as the authorization server is to know it:
// scheme and host in lower case, without user info, query or fragment (an
// API key in the query must reach neither the well-known URLs nor the
// authorization server).
func resourceURL(u *url.URL) *url.URL {
	return &url.URL{Scheme: strings.ToLower(u.Scheme), Host: strings.ToLower(u.Host), Path: u.Path, RawPath: u.RawPath}
}

// LoadGrant returns the grant stored for a server, nil when there is none.
func LoadGrant(s TokenStore, serverURL string) (*Grant, error) {
	data, err := s.Load(CanonicalResource(serverURL))
	if err != nil || data == nil {
		return nil, err
	}
	var g Grant
	if err := json.Unmarshal(data, &g); err != nil {
		return nil, fmt.Errorf("stored grant: %w", err)
	}
	return &g, nil
}
