package access

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/mcphub/mcphub/registry"
)

// signingAlgs are the signature algorithms tokens may use: every
// asymmetric one JOSE defines. "none" and the HMAC ones (whose key the hub
// would have to share) are refused.
var signingAlgs = []string{oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512, oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA}

// provider checks the access tokens of one identity provider. Its keys are
// found on first use (from jwks_url, or the provider's discovery document),
// then cached by go-oidc's remote key set, which fetches them again when a
// token names a key id it does not have.
type provider struct {
	cfg registry.HubOAuth
	ctx context.Context // the gate's: key fetches end with it

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
}

func newProvider(ctx context.Context, cfg registry.HubOAuth) *provider {
	return &provider{cfg: cfg, ctx: ctx}
}

// sameProvider reports whether two configurations check tokens alike, so
// a registry change that keeps them keeps the cached keys.
func sameProvider(a, b registry.HubOAuth) bool {
	return a.Issuer == b.Issuer && a.JWKSURL == b.JWKSURL && a.ClockSkew == b.ClockSkew
}

// verifierFor returns the token verifier, discovering the provider's keys
// on first use; a failed discovery is tried again on the next token.
func (p *provider) verifierFor(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.verifier != nil {
		return p.verifier, nil
	}
	jwks := p.cfg.JWKSURL
	if jwks == "" {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		disc, err := oidc.NewProvider(ctx, p.cfg.Issuer)
		if err != nil {
			return nil, fmt.Errorf("discover the identity provider %s: %w (set jwks_url in [hub.oauth] if it publishes no OpenID discovery document)", p.cfg.Issuer, err)
		}
		var doc struct {
			JWKS string `json:"jwks_uri"`
		}
		if err := disc.Claims(&doc); err != nil || doc.JWKS == "" {
			return nil, fmt.Errorf("the identity provider %s names no jwks_uri in its discovery document; set jwks_url in [hub.oauth]", p.cfg.Issuer)
		}
		jwks = doc.JWKS
	}
	skew := p.cfg.ClockSkew
	p.verifier = oidc.NewVerifier(p.cfg.Issuer, oidc.NewRemoteKeySet(p.ctx, jwks), &oidc.Config{
		// The audience is checked by the gate: it is the resource URL
		// of the endpoint the token is sent to.
		SkipClientIDCheck:    true,
		SupportedSigningAlgs: signingAlgs,
		// A token expired less than the clock skew ago still passes.
		Now: func() time.Time { return time.Now().Add(-skew) },
	})
	return p.verifier, nil
}

// unreachableError is a token that could not be checked: the provider's
// discovery document could not be read.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string { return e.err.Error() }
func (e *unreachableError) Unwrap() error { return e.err }

// verify checks an access token for a request to resource and returns what
// it says of its caller. It is an auth.TokenVerifier, the go-sdk's shape
// for it, bound to the accepted audiences.
func (p *provider) verify(audiences []string) auth.TokenVerifier {
	return func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		v, err := p.verifierFor(ctx)
		if err != nil {
			return nil, &unreachableError{err}
		}
		idt, err := v.Verify(ctx, token)
		if err != nil {
			if errors.As(err, new(*oidc.TokenExpiredError)) {
				return nil, fmt.Errorf("%w: the access token expired; sign in again", auth.ErrInvalidToken)
			}
			return nil, fmt.Errorf("%w: the access token was refused: %s", auth.ErrInvalidToken, tokenReason(err))
		}
		if !slices.ContainsFunc(idt.Audience, func(a string) bool { return slices.Contains(audiences, a) }) {
			return nil, fmt.Errorf("%w: the access token is not for this hub: its audience must include %s", auth.ErrInvalidToken, strings.Join(audiences, " or "))
		}
		var claims map[string]any
		if err := idt.Claims(&claims); err != nil {
			return nil, fmt.Errorf("%w: the access token's claims do not decode", auth.ErrInvalidToken)
		}
		info := &auth.TokenInfo{UserID: pseudonym(idt.Issuer, idt.Subject), Expiration: idt.Expiry, Extra: claims}
		if s, ok := claims["scope"].(string); ok {
			info.Scopes = strings.Fields(s)
		}
		for _, want := range p.cfg.Scopes {
			if !slices.Contains(info.Scopes, want) {
				return nil, fmt.Errorf("%w: the access token lacks the scope %q", auth.ErrInvalidToken, want)
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
	case strings.Contains(msg, "failed to verify signature"):
		return "its signature matches none of the provider's keys"
	}
	return "it does not verify"
}

// pseudonym names a signed-in user in logs and sessions without writing
// their subject: a hash of issuer and subject.
func pseudonym(issuer, subject string) string {
	sum := sha256.Sum256([]byte(issuer + "\x00" + subject))
	return "user:" + hex.EncodeToString(sum[:6])
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
