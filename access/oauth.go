package access

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/sync/singleflight"

	"github.com/mcphub/mcphub/registry"
)

// signingAlgs are the signature algorithms tokens may use: every
// asymmetric one JOSE defines. "none" and the HMAC ones (whose key the hub
// would have to share) are refused.
var signingAlgs = []string{oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512, oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA}

// provider checks the access tokens of one identity provider. Its keys are
// found on first use (from jwks_url, or the provider's discovery
// document), then kept by a keySet.
type provider struct {
	cfg    registry.HubOAuth
	ctx    context.Context // the gate's: discovery and key fetches end with it
	client *http.Client

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
	keys     *keySet
	tried    time.Time // the last discovery that failed
	err      error     // and why
	group    singleflight.Group
}

func newProvider(ctx context.Context, cfg registry.HubOAuth) *provider {
	return &provider{cfg: cfg, ctx: ctx, client: &http.Client{Timeout: fetchTimeout}}
}

// sameProvider reports whether two configurations check tokens alike, so
// a registry change that keeps them keeps the cached keys.
func sameProvider(a, b registry.HubOAuth) bool {
	return a.Issuer == b.Issuer && a.JWKSURL == b.JWKSURL && a.ClockSkew == b.ClockSkew
}

// verifierFor returns the token verifier, discovering the provider's keys
// on first use. A failed discovery is tried again at most every
// refetchEvery; checks meanwhile fail at once with its reason, and checks
// that ask during one share it.
func (p *provider) verifierFor() (*oidc.IDTokenVerifier, *keySet, error) {
	p.mu.Lock()
	v, keys, tried, err := p.verifier, p.keys, p.tried, p.err
	p.mu.Unlock()
	if v != nil {
		return v, keys, nil
	}
	if err != nil && time.Since(tried) < refetchEvery {
		return nil, nil, err
	}
	_, err, _ = p.group.Do("discover", func() (any, error) {
		jwks, err := p.discover()
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil {
			p.tried, p.err = time.Now(), err
			return nil, err
		}
		skew := p.cfg.ClockSkew
		p.keys = newKeySet(p.ctx, jwks, p.client)
		p.verifier = oidc.NewVerifier(p.cfg.Issuer, p.keys, &oidc.Config{
			// The audience is checked by the gate: it is the resource
			// URL of the endpoint the token is sent to.
			SkipClientIDCheck:    true,
			SupportedSigningAlgs: signingAlgs,
			// A token expired less than the clock skew ago still
			// passes.
			Now: func() time.Time { return time.Now().Add(-skew) },
		})
		return nil, nil
	})
	if err != nil {
		return nil, nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.verifier, p.keys, nil
}

// discover finds the provider's JWKS: jwks_url, else its OpenID discovery
// document's jwks_uri.
func (p *provider) discover() (string, error) {
	if p.cfg.JWKSURL != "" {
		return p.cfg.JWKSURL, nil
	}
	ctx, cancel := context.WithTimeout(p.ctx, fetchTimeout)
	defer cancel()
	disc, err := oidc.NewProvider(oidc.ClientContext(ctx, p.client), p.cfg.Issuer)
	if err != nil {
		return "", fmt.Errorf("discover the identity provider %s: %w (set jwks_url in [hub.oauth] if it publishes no OpenID discovery document)", p.cfg.Issuer, err)
	}
	var doc struct {
		JWKS string `json:"jwks_uri"`
	}
	if err := disc.Claims(&doc); err != nil || doc.JWKS == "" {
		return "", fmt.Errorf("the identity provider %s names no jwks_uri in its discovery document; set jwks_url in [hub.oauth]", p.cfg.Issuer)
	}
	// Keys fetched in the clear could be swapped on the way: https, or
	// http on this machine, as [hub.oauth] itself takes.
	if u, err := url.Parse(doc.JWKS); err != nil || !(u.Scheme == "https" || u.Scheme == "http" && loopbackHost(u.Hostname())) {
		return "", fmt.Errorf("the identity provider %s names a jwks_uri that is not https; set jwks_url in [hub.oauth]", p.cfg.Issuer)
	}
	return doc.JWKS, nil
}

// unreachableError is a token that could not be checked: the provider's
// discovery document or keys could not be read.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string { return e.err.Error() }
func (e *unreachableError) Unwrap() error { return e.err }

// errScope marks a token without a scope the hub requires.
var errScope = errors.New("insufficient scope")

// verify checks an access token for a request and returns what it says
// of its caller: an auth.TokenVerifier, the go-sdk's shape for it, bound
// to the accepted audiences and the required scopes.
func (p *provider) verify(audiences, scopes []string) auth.TokenVerifier {
	return func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		v, keys, err := p.verifierFor()
		if err != nil {
			return nil, &unreachableError{err}
		}
		idt, err := v.Verify(ctx, token)
		if err != nil {
			if errors.As(err, new(*oidc.TokenExpiredError)) {
				return nil, fmt.Errorf("%w: the access token expired; sign in again", auth.ErrInvalidToken)
			}
			if ferr := keys.failed(); ferr != nil && strings.Contains(err.Error(), errNoKey.Error()) {
				return nil, &unreachableError{ferr}
			}
			return nil, fmt.Errorf("%w: the access token was refused: %s", auth.ErrInvalidToken, tokenReason(err))
		}
		if idt.Subject == "" {
			return nil, fmt.Errorf("%w: the access token names no subject (sub)", auth.ErrInvalidToken)
		}
		if !slices.ContainsFunc(idt.Audience, func(a string) bool { return slices.Contains(audiences, a) }) {
			return nil, fmt.Errorf("%w: the access token is not for this hub: its audience must include %s", auth.ErrInvalidToken, strings.Join(audiences, " or "))
		}
		var claims map[string]any
		if err := idt.Claims(&claims); err != nil {
			return nil, fmt.Errorf("%w: the access token's claims do not decode", auth.ErrInvalidToken)
		}
		info := &auth.TokenInfo{UserID: idt.Issuer + "\x00" + idt.Subject, Expiration: idt.Expiry, Extra: claims}
		// scope is a space-separated string (RFC 9068); some providers
		// (Okta, Entra ID) send scp, an array.
		info.Scopes = append(claimValues(claims["scope"]), claimValues(claims["scp"])...)
		for _, want := range scopes {
			if !slices.Contains(info.Scopes, want) {
				return nil, fmt.Errorf("%w: the access token lacks the scope %q", errScope, want)
			}
		}
		return info, nil
	}
}

// tokenReason is go-oidc's reason for refusing a token, in words that
// quote none of its claims (go-oidc's own messages quote some).
func tokenReason(err error) string {
	msg := strings.TrimPrefix(err.Error(), "oidc: ")
	switch {
	case strings.Contains(msg, "issued by a different provider"):
		return "it was issued by another provider"
	case strings.Contains(msg, "malformed jwt"):
		return "it is not a JWT signed with an accepted algorithm (" + strings.Join(signingAlgs, ", ") + ")"
	case strings.Contains(msg, "failed to verify signature"), strings.Contains(msg, errNoKey.Error()):
		return "its signature matches none of the provider's keys"
	}
	return "it does not verify"
}

// metadata serves the protected resource metadata (RFC 9728) of each MCP
// endpoint at /.well-known/oauth-protected-resource plus the endpoint's
// path, through the go-sdk's handler.
func metadata(cfg registry.HubOAuth, base string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := strings.TrimPrefix(r.URL.Path, WellKnown)
		if path != "/mcp" && !strings.HasSuffix(path, "/mcp") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]string{"error": "no such resource: metadata is served for /mcp, /{server}/mcp and /profiles/{profile}/mcp"})
			return
		}
		auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource:               base + path,
			AuthorizationServers:   []string{cfg.Issuer},
			ScopesSupported:        cfg.Scopes,
			BearerMethodsSupported: []string{"header"},
			ResourceName:           "mcphub",
		}).ServeHTTP(w, r)
	})
}

// WellKnown is the path prefix of the protected resource metadata.
const WellKnown = "/.well-known/oauth-protected-resource"

// loopbackHost reports a host name of this machine.
func loopbackHost(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}
