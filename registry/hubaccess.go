package registry

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
)

// HubOAuth is the [hub.oauth] table: the team's identity provider, whose
// access tokens the hub accepts besides its own token and API keys. With
// it the hub is an OAuth 2.1 protected resource (RFC 9728): it answers
// 401 with the address of its metadata, which names Issuer, and checks each
// token against the issuer's published keys.
type HubOAuth struct {
	// Issuer is the provider's issuer URL, exactly as its tokens' iss.
	Issuer string
	// Audience is what a token's aud must hold; "" means the resource URL
	// of the endpoint it is sent to (URL plus the endpoint's path) or URL.
	Audience string
	// URL is the hub's public base URL as clients reach it (behind a load
	// balancer, its address); "" means the listen address.
	URL string
	// JWKSURL is where the provider's signing keys are; "" means the one
	// its OpenID discovery document names.
	JWKSURL string
	// Scopes are scopes every token must carry; they are advertised in the
	// metadata and the 401's challenge too.
	Scopes []string
	// ClockSkew is how far the provider's clock may be from the hub's when
	// a token's expiry and not-before times are checked.
	ClockSkew time.Duration
}

// DefaultClockSkew is the clock skew tokens are allowed by default.
const DefaultClockSkew = 30 * time.Second

// Access is the [hub.access] table: what the callers the identity provider
// signs in may reach, by the values of one claim of their tokens (their
// groups). Without it, every signed-in caller reaches everything.
type Access struct {
	// Claim names the token claim that holds the caller's groups (a string
	// or an array of strings); "groups" by default.
	Claim string
	// Groups maps a group to the profiles its members may use; the group
	// "*" applies to every signed-in caller.
	Groups map[string][]string
}

// DefaultAccessClaim is the claim groups are read from by default.
const DefaultAccessClaim = "groups"

var (
	hubOAuthKeys  = []string{"issuer", "audience", "url", "jwks_url", "scopes", "clock_skew"}
	hubAccessKeys = []string{"claim", "groups"}
)

// hubOAuth reads [hub.oauth].
func (p *parser) hubOAuth(t *table, raw any) *HubOAuth {
	m, ok := raw.(map[string]any)
	if !ok {
		t.errf("oauth", `must be a table; write [hub.oauth] with issuer = "https://idp.example.com"`)
		return nil
	}
	sub := &table{p: p, m: m, path: append(slices.Clone(t.path), "oauth")}
	sub.unknown(hubOAuthKeys, map[string]string{"issuer_url": "issuer", "aud": "audience", "resource": "url", "jwks_uri": "jwks_url", "scope": "scopes"})
	o := &HubOAuth{ClockSkew: DefaultClockSkew}
	if !sub.str("issuer", &o.Issuer) || o.Issuer == "" {
		sub.errf("issuer", `is required: the identity provider's issuer URL, exactly as its tokens' iss claim (e.g. "https://idp.example.com")`)
	} else if msg := checkHTTPURL(o.Issuer); msg != "" {
		sub.errf("issuer", "%s", msg)
	}
	sub.str("audience", &o.Audience)
	if sub.str("url", &o.URL) && o.URL != "" {
		if msg := checkHTTPURL(o.URL); msg != "" {
			sub.errf("url", "%s", msg)
		}
		o.URL = strings.TrimSuffix(o.URL, "/")
	}
	if sub.str("jwks_url", &o.JWKSURL) && o.JWKSURL != "" {
		if msg := checkHTTPURL(o.JWKSURL); msg != "" {
			sub.errf("jwks_url", "%s", msg)
		}
	}
	if sub.strs("scopes", &o.Scopes) {
		for i, sc := range o.Scopes {
			if sc == "" || strings.ContainsFunc(sc, func(r rune) bool { return r <= ' ' || r == '"' || r == '\\' || r > '~' }) {
				sub.errf("scopes", "entry %d is not a scope; scopes are words of printable ASCII without spaces", i+1)
			}
		}
	}
	if v, ok := m["clock_skew"]; ok {
		if s, isStr := v.(string); isStr && (s == "0" || s == "0s") {
			o.ClockSkew = 0
		} else if sub.duration("clock_skew", &o.ClockSkew) && o.ClockSkew > maxClockSkew {
			sub.errf("clock_skew", "%s is more than %s; a clock that far off is the one to fix (tokens would be taken long after they expired)", o.ClockSkew, maxClockSkew)
		}
	}
	return o
}

// maxClockSkew bounds clock_skew (go-oidc allows a token's not-before
// five minutes ahead, which a larger skew would undo).
const maxClockSkew = 5 * time.Minute

// checkOAuthURL reports OAuthURLProblem at [hub.oauth].
func (p *parser) checkOAuthURL(t *table, h *Hub) {
	if msg := h.OAuthURLProblem(); msg != "" {
		t.at([]string{"oauth"}, "%s", msg)
	}
}

// OAuthURLProblem says why [hub.oauth] needs url: the listen address names
// no host (every interface), so the hub's resource URL, which clients
// compare with the URL they use and tokens are issued for, cannot be made
// of it. "" when it has url or needs none. serve checks it again once
// --listen applied.
func (h Hub) OAuthURLProblem() string {
	if h.OAuth == nil || h.OAuth.URL != "" {
		return ""
	}
	host, _, err := net.SplitHostPort(h.Listen)
	if err != nil {
		return "" // listen's own error says why
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return fmt.Sprintf("[hub.oauth] needs url (the hub's address as clients reach it, e.g. \"https://mcp.example.com\"): listen %q names no host to make the resource URL of", h.Listen)
	}
	return ""
}

// checkHTTPURL says what is wrong with an identity provider's URL: it must
// be https, or http on loopback (a provider on this machine).
func checkHTTPURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Sprintf("%q is not a URL; write https://host[/path], without query or fragment", s)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); u.Scheme == "http" && (host == "localhost" || ip != nil && ip.IsLoopback()) {
		return ""
	}
	if u.Scheme != "https" {
		return fmt.Sprintf("%q must be https (http only on loopback): tokens and keys would cross the network in the clear", s)
	}
	return ""
}

// hubAccess reads [hub.access]; its profiles are checked once they are
// read (checkAccess).
func (p *parser) hubAccess(t *table, raw any) *Access {
	m, ok := raw.(map[string]any)
	if !ok {
		t.errf("access", `must be a table; write [hub.access] with claim = "groups", then [hub.access.groups] mapping each group to its profiles`)
		return nil
	}
	sub := &table{p: p, m: m, path: append(slices.Clone(t.path), "access")}
	sub.unknown(hubAccessKeys, map[string]string{"group_claim": "claim", "roles": "groups"})
	a := &Access{Claim: DefaultAccessClaim, Groups: map[string][]string{}}
	if sub.str("claim", &a.Claim) && a.Claim == "" {
		sub.errf("claim", `must name a claim of the tokens, such as "groups" or "roles"`)
	}
	if v, ok := m["groups"]; ok {
		g, isTable := v.(map[string]any)
		if !isTable {
			sub.errf("groups", `must be a table mapping each group to its profiles, like [hub.access.groups] with eng = ["eng"]`)
			return a
		}
		gt := &table{p: p, m: g, path: append(slices.Clone(sub.path), "groups")}
		for _, name := range slices.Sorted(maps.Keys(g)) {
			var profiles []string
			if gt.strs(name, &profiles) {
				a.Groups[name] = profiles
			}
		}
	}
	return a
}

// checkAccess reports the profiles [hub.access] names that the registry
// does not have.
func (p *parser) checkAccess(reg *Registry) {
	a := reg.Hub.Access
	if a == nil {
		return
	}
	for _, group := range slices.Sorted(maps.Keys(a.Groups)) {
		for i, name := range a.Groups[group] {
			if reg.Profile(name) == nil {
				p.fail([]string{"hub", "access", "groups", group}, "", "entry %d names no profile: %q is not a [profiles.%s] table (profiles: %s)",
					i+1, name, name, reg.ProfileNames())
			}
		}
	}
}

// ProfileNames lists the registry's profiles for a message: their names,
// or "none".
func (reg *Registry) ProfileNames() string {
	if len(reg.Profiles) == 0 {
		return "none"
	}
	names := make([]string, len(reg.Profiles))
	for i, p := range reg.Profiles {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}
