package access

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcphub/mcphub/hub"
	"github.com/mcphub/mcphub/registry"
)

// idp is a minimal identity provider: an OpenID discovery document and a
// JWKS whose keys a test can change, counting the JWKS fetches.
type idp struct {
	srv     *httptest.Server
	mu      sync.Mutex
	keys    []jose.JSONWebKey
	fetches atomic.Int64
}

func newIDP(t *testing.T) *idp {
	p := &idp{}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": p.srv.URL, "jwks_uri": p.srv.URL + "/jwks",
			"authorization_endpoint": p.srv.URL + "/authorize", "token_endpoint": p.srv.URL + "/token",
			"id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		p.fetches.Add(1)
		p.mu.Lock()
		defer p.mu.Unlock()
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: p.keys})
	})
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

// publish adds a key's public half to the JWKS.
func (p *idp) publish(kid string, key *rsa.PrivateKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys = append(p.keys, jose.JSONWebKey{Key: &key.PublicKey, KeyID: kid, Algorithm: "RS256", Use: "sig"})
}

func rsaKey(t *testing.T) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// sign makes a JWT of claims with key under kid.
func sign(t *testing.T, key *rsa.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	obj, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// unsigned makes a JWT with alg "none".
func unsigned(claims map[string]any) string {
	enc := base64.RawURLEncoding
	head, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT"})
	body, _ := json.Marshal(claims)
	return enc.EncodeToString(head) + "." + enc.EncodeToString(body) + "."
}

// memKeys is a KeyStore in memory.
type memKeys struct {
	mu      sync.Mutex
	keys    map[string]Key
	touches int
}

func (m *memKeys) KeyByID(id string) (Key, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keys[id]
	if !ok {
		return Key{}, ErrNoKey
	}
	return k, nil
}

func (m *memKeys) TouchKey(string, time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.touches++
	return nil
}

func parse(t *testing.T, text string) *registry.Registry {
	t.Helper()
	reg, err := registry.Parse("hub.toml", []byte(text), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("registry: %v", err)
	}
	return reg
}

const hubURL = "https://hub.example.com"

func oauthRegistry(issuer, extra string) string {
	return `
[hub.oauth]
issuer = "` + issuer + `"
url = "` + hubURL + `"
` + extra + `
[servers.alpha]
command = "alpha"
[servers.beta]
command = "beta"
[profiles.eng]
servers = ["alpha"]
[profiles.ops]
servers = ["beta"]
`
}

func request(path string) *http.Request {
	return httptest.NewRequest(http.MethodPost, hubURL+path, nil)
}

// TestAccessTokens checks each kind of access token the issue names: the
// good one passes, and a wrong audience, a wrong issuer, an expired one, an
// unknown key id, alg "none", and a signature of another key under a
// known key id are each refused with a 401 challenge that points at the
// hub's metadata.
func TestAccessTokens(t *testing.T) {
	p := newIDP(t)
	good, other := rsaKey(t), rsaKey(t)
	p.publish("k1", good)
	g := New(&memKeys{}, []byte("pepper"), hubURL, nil)
	defer g.Close()
	g.Apply(parse(t, oauthRegistry(p.srv.URL, "")))

	now := time.Now()
	claims := func(change func(map[string]any)) map[string]any {
		c := map[string]any{"iss": p.srv.URL, "sub": "alice", "aud": hubURL + "/mcp", "exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}
		if change != nil {
			change(c)
		}
		return c
	}
	tests := []struct {
		name, token, path string
		want              string // "" for accepted, else a piece of the refusal
	}{
		{name: "good", token: sign(t, good, "k1", claims(nil)), path: "/mcp"},
		{name: "audience is the hub's base URL", token: sign(t, good, "k1", claims(func(c map[string]any) { c["aud"] = hubURL })), path: "/mcp"},
		{name: "audience among several", token: sign(t, good, "k1", claims(func(c map[string]any) { c["aud"] = []string{"other", hubURL + "/alpha/mcp"} })), path: "/alpha/mcp"},
		{name: "expired within the clock skew", token: sign(t, good, "k1", claims(func(c map[string]any) { c["exp"] = now.Add(-10 * time.Second).Unix() })), path: "/mcp"},
		{name: "wrong audience", token: sign(t, good, "k1", claims(func(c map[string]any) { c["aud"] = "https://elsewhere.example.com/mcp" })), path: "/mcp", want: "not for this hub"},
		{name: "another endpoint's audience", token: sign(t, good, "k1", claims(func(c map[string]any) { c["aud"] = hubURL + "/beta/mcp" })), path: "/alpha/mcp", want: "not for this hub"},
		{name: "wrong issuer", token: sign(t, good, "k1", claims(func(c map[string]any) { c["iss"] = "https://evil.example.com" })), path: "/mcp", want: "issued by another provider"},
		{name: "expired", token: sign(t, good, "k1", claims(func(c map[string]any) { c["exp"] = now.Add(-2 * time.Minute).Unix() })), path: "/mcp", want: "expired"},
		{name: "no expiry", token: sign(t, good, "k1", claims(func(c map[string]any) { delete(c, "exp") })), path: "/mcp", want: "expired"},
		{name: "unknown kid", token: sign(t, other, "k9", claims(nil)), path: "/mcp", want: "signature matches none"},
		{name: "alg none", token: unsigned(claims(nil)), path: "/mcp", want: "not a JWT signed with an accepted algorithm"},
		{name: "another key under a known kid", token: sign(t, other, "k1", claims(nil)), path: "/mcp", want: "signature matches none"},
		{name: "not a JWT", token: "opaque-token", path: "/mcp", want: "not a JWT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := g.Identify(request(tt.path), tt.token)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if !strings.HasPrefix(c.ID, "user:") || len(c.ID) != len("user:")+12 || !strings.HasPrefix(c.Principal, c.ID) || strings.Contains(c.ID, "alice") || c.Limited {
					t.Errorf("caller = %+v, want an unlimited user: pseudonym without the subject", c)
				}
				return
			}
			var r *refusal
			if !errors.As(err, &r) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a refusal saying %q", err, tt.want)
			}
			if want := `Bearer resource_metadata="` + hubURL + WellKnown + tt.path + `", error="invalid_token"`; r.Challenge() != want {
				t.Errorf("challenge = %s, want %s", r.Challenge(), want)
			}
			if strings.Contains(err.Error(), tt.token) || strings.Contains(err.Error(), "alice") || strings.Contains(err.Error(), "evil") {
				t.Errorf("the refusal quotes the token or a claim: %v", err)
			}
		})
	}
}

// TestAccessTokenKeyRotation checks that a token signed by a key the
// provider published after the hub cached its keys is accepted: an
// unknown kid fetches the keys again.
func TestAccessTokenKeyRotation(t *testing.T) {
	defer func(every time.Duration) { refetchEvery = every }(refetchEvery)
	refetchEvery = 0
	p := newIDP(t)
	first, second := rsaKey(t), rsaKey(t)
	p.publish("k1", first)
	g := New(&memKeys{}, nil, hubURL, nil)
	defer g.Close()
	g.Apply(parse(t, oauthRegistry(p.srv.URL, "")))
	claims := map[string]any{"iss": p.srv.URL, "sub": "bob", "aud": hubURL + "/mcp", "exp": time.Now().Add(time.Hour).Unix()}
	if _, err := g.Identify(request("/mcp"), sign(t, first, "k1", claims)); err != nil {
		t.Fatal(err)
	}
	before := p.fetches.Load()
	if _, err := g.Identify(request("/mcp"), sign(t, first, "k1", claims)); err != nil || p.fetches.Load() != before {
		t.Fatalf("a token of a cached key: err %v, %d fetches more; want accepted from the cache", err, p.fetches.Load()-before)
	}
	p.publish("k2", second)
	if _, err := g.Identify(request("/mcp"), sign(t, second, "k2", claims)); err != nil {
		t.Fatalf("a token of a key published later: %v", err)
	}
	if p.fetches.Load() == before {
		t.Error("the keys were not fetched again for an unknown kid")
	}
	// A registry change that keeps the issuer keeps the cached keys.
	g.Apply(parse(t, oauthRegistry(p.srv.URL, `scopes = []`)))
	before = p.fetches.Load()
	if _, err := g.Identify(request("/mcp"), sign(t, second, "k2", claims)); err != nil || p.fetches.Load() != before {
		t.Errorf("after a registry change: err %v, %d fetches more; want the cached keys", err, p.fetches.Load()-before)
	}
}

// TestAccessScopesAndUnreachableProvider checks that required scopes are
// enforced and advertised, and that a provider that cannot be reached is
// a check not made (no refusal of the caller's token).
func TestAccessScopesAndUnreachableProvider(t *testing.T) {
	p := newIDP(t)
	key := rsaKey(t)
	p.publish("k1", key)
	g := New(&memKeys{}, nil, hubURL, nil)
	defer g.Close()
	g.Apply(parse(t, oauthRegistry(p.srv.URL, `scopes = ["mcp"]`)))
	claims := map[string]any{"iss": p.srv.URL, "sub": "carol", "aud": hubURL + "/mcp", "exp": time.Now().Add(time.Hour).Unix(), "scope": "openid"}
	_, err := g.Identify(request("/mcp"), sign(t, key, "k1", claims))
	var r *refusal
	if !errors.As(err, &r) || !r.Forbidden() || !strings.Contains(err.Error(), `lacks the scope "mcp"`) ||
		!strings.Contains(r.Challenge(), `scope="mcp", error="insufficient_scope"`) {
		t.Fatalf("err = %v, want a 403 refusal for the missing scope whose challenge names it (RFC 6750 insufficient_scope)", err)
	}
	claims["scope"] = "openid mcp"
	if _, err := g.Identify(request("/mcp"), sign(t, key, "k1", claims)); err != nil {
		t.Fatalf("with the scope: %v", err)
	}

	down := New(&memKeys{}, nil, hubURL, nil)
	defer down.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	down.Apply(parse(t, oauthRegistry(gone.URL, "")))
	_, err = down.Identify(request("/mcp"), sign(t, key, "k1", claims))
	if err == nil || errors.As(err, &r) || !strings.Contains(err.Error(), "discover the identity provider") {
		t.Fatalf("err = %v, want a check not made (not a refusal) naming the provider", err)
	}
}

// TestAccessGroups checks [hub.access]: a caller's groups claim (an array
// or a space-separated string) gives it the profiles mapped to each group
// and to "*"; a caller in no mapped group is forbidden.
func TestAccessGroups(t *testing.T) {
	p := newIDP(t)
	key := rsaKey(t)
	p.publish("k1", key)
	g := New(&memKeys{}, nil, hubURL, nil)
	defer g.Close()
	g.Apply(parse(t, oauthRegistry(p.srv.URL, `
[hub.access]
claim = "roles"
[hub.access.groups]
eng = ["eng"]
sre = ["ops", "eng"]
`)))
	token := func(roles any) string {
		c := map[string]any{"iss": p.srv.URL, "sub": "dave", "aud": hubURL + "/mcp", "exp": time.Now().Add(time.Hour).Unix()}
		if roles != nil {
			c["roles"] = roles
		}
		return sign(t, key, "k1", c)
	}
	for _, tt := range []struct {
		name  string
		roles any
		want  []string // nil: forbidden
	}{
		{"one group", []string{"eng"}, []string{"eng"}},
		{"two groups, one profile twice", []string{"eng", "sre"}, []string{"eng", "ops"}},
		{"space-separated string", "sre other", []string{"eng", "ops"}},
		{"no mapped group", []string{"sales"}, nil},
		{"no claim", nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := g.Identify(request("/mcp"), token(tt.roles))
			if tt.want == nil {
				var f interface{ Forbidden() bool }
				if !errors.As(err, &f) || !f.Forbidden() || !strings.Contains(err.Error(), `"roles" claim`) {
					t.Fatalf("err = %v, want forbidden naming the claim", err)
				}
				return
			}
			if err != nil || !c.Limited || !slices.Equal(c.Profiles, tt.want) {
				t.Fatalf("caller = %+v, %v; want limited to %v", c, err, tt.want)
			}
		})
	}
}

// TestAPIKeys checks keys: a minted key identifies its caller with its
// profiles; a wrong secret, an unknown id, a malformed key, a revoked and
// an expired key are refused; use is recorded at most every touchEvery.
func TestAPIKeys(t *testing.T) {
	pepper := []byte("pepper")
	store := &memKeys{keys: map[string]Key{}}
	g := New(store, pepper, hubURL, nil)
	defer g.Close()
	g.Apply(parse(t, "[servers.alpha]\ncommand = \"alpha\"\n[profiles.eng]\nservers = [\"alpha\"]\n"))
	add := func(name string, profiles []string, change func(*Key)) string {
		text, id, hash := Mint(pepper)
		k := Key{ID: id, Name: name, Hash: hash, Profiles: profiles}
		if change != nil {
			change(&k)
		}
		store.keys[id] = k
		return text
	}
	ci := add("ci", []string{"eng"}, nil)
	admin := add("admin", nil, nil)
	revoked := add("old", nil, func(k *Key) { k.Revoked = time.Now().Add(-time.Minute) })
	expired := add("temp", nil, func(k *Key) { k.Expires = time.Now().Add(-time.Minute) })
	id, _ := KeyID(ci)
	wrongSecret := KeyPrefix + id + "_" + strings.Repeat("a", b32.EncodedLen(secretBytes))
	unknown, _, _ := Mint(pepper)

	c, err := g.Identify(request("/mcp"), ci)
	if err != nil || c.ID != "key:ci" || c.Principal != "key:"+id || !c.Limited || !slices.Equal(c.Profiles, []string{"eng"}) {
		t.Fatalf("ci key: %+v, %v", c, err)
	}
	if c, err := g.Identify(request("/mcp"), admin); err != nil || c.ID != "key:admin" || c.Limited {
		t.Fatalf("admin key: %+v, %v; want an unlimited caller", c, err)
	}
	for _, tt := range []struct{ name, key, want string }{
		{"wrong secret", wrongSecret, "unknown API key"},
		{"unknown id", unknown, "unknown API key"},
		{"malformed", KeyPrefix + "short", "not its shape"},
		{"revoked", revoked, "API key old was revoked"},
		{"expired", expired, "API key temp expired"},
		{"not a key, no sign-in", "something", "neither the hub's token nor an API key"},
	} {
		_, err := g.Identify(request("/mcp"), tt.key)
		var r *refusal
		if !errors.As(err, &r) || !strings.Contains(err.Error(), tt.want) || r.Challenge() != `Bearer realm="mcphub", error="invalid_token"` {
			t.Errorf("%s: err = %v, want a refusal saying %q", tt.name, err, tt.want)
		}
		if strings.Contains(errText(err), tt.key) {
			t.Errorf("%s: the refusal quotes the key", tt.name)
		}
	}
	g.Identify(request("/mcp"), ci)
	g.Close() // waits for the uses to be written
	if store.touches != 2 {
		t.Errorf("TouchKey called %d times for 3 uses of 2 keys, want 2 (once per key per %s)", store.touches, touchEvery)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestMetadata checks the protected resource metadata of each endpoint
// and its 404s.
func TestMetadata(t *testing.T) {
	g := New(&memKeys{}, nil, hubURL, nil)
	defer g.Close()
	get := func(path string) (int, map[string]any) {
		rec := httptest.NewRecorder()
		g.Metadata().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, hubURL+path, nil))
		var m map[string]any
		body, _ := io.ReadAll(rec.Body)
		json.Unmarshal(body, &m)
		return rec.Code, m
	}
	if code, _ := get(WellKnown + "/mcp"); code != http.StatusNotFound {
		t.Errorf("without [hub.oauth]: %d, want 404", code)
	}
	g.Apply(parse(t, oauthRegistry("https://idp.example.com", `scopes = ["mcp"]`)))
	for _, path := range []string{"/mcp", "/alpha/mcp", "/profiles/eng/mcp"} {
		code, m := get(WellKnown + path)
		if code != http.StatusOK || m["resource"] != hubURL+path {
			t.Errorf("%s: %d %v, want 200 with resource %s", path, code, m, hubURL+path)
		}
		if as, _ := m["authorization_servers"].([]any); len(as) != 1 || as[0] != "https://idp.example.com" {
			t.Errorf("%s: authorization_servers = %v", path, m["authorization_servers"])
		}
		if sc, _ := m["scopes_supported"].([]any); len(sc) != 1 || sc[0] != "mcp" {
			t.Errorf("%s: scopes_supported = %v", path, m["scopes_supported"])
		}
	}
	if code, _ := get(WellKnown + "/control/status"); code != http.StatusNotFound {
		t.Errorf("a path that is no endpoint: %d, want 404", code)
	}
}

var _ hub.Access = (*Gate)(nil)

// Tokens no cached key verifies fetch the provider's keys again at most
// once per refetchEvery: 50 forged tokens in a row make one fetch, not
// 50; and keys that cannot be fetched make a check that was not made
// (503), not a refusal of the caller's token.
func TestAccessKeyFetches(t *testing.T) {
	p := newIDP(t)
	good, forger := rsaKey(t), rsaKey(t)
	p.publish("k1", good)
	g := New(&memKeys{}, nil, hubURL, nil)
	defer g.Close()
	g.Apply(parse(t, oauthRegistry(p.srv.URL, "")))
	claims := map[string]any{"iss": p.srv.URL, "sub": "eve", "aud": hubURL + "/mcp", "exp": time.Now().Add(time.Hour).Unix()}
	if _, err := g.Identify(request("/mcp"), sign(t, good, "k1", claims)); err != nil {
		t.Fatal(err)
	}
	before := p.fetches.Load()
	for i := range 50 {
		kid := "k1"
		if i%2 == 1 {
			kid = fmt.Sprintf("forged-%d", i)
		}
		if _, err := g.Identify(request("/mcp"), sign(t, forger, kid, claims)); err == nil {
			t.Fatal("a forged token was accepted")
		}
	}
	if n := p.fetches.Load() - before; n > 1 {
		t.Errorf("50 forged tokens made %d fetches of the keys; want at most 1 per %s", n, refetchEvery)
	}

	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	down := New(&memKeys{}, nil, hubURL, nil)
	defer down.Close()
	down.Apply(parse(t, oauthRegistry(p.srv.URL, `jwks_url = "`+gone.URL+`/keys"`)))
	_, err := down.Identify(request("/mcp"), sign(t, good, "k1", claims))
	var r *refusal
	if err == nil || errors.As(err, &r) || !strings.Contains(err.Error(), "fetch the identity provider's keys") {
		t.Fatalf("keys that cannot be fetched: %v; want a check not made, naming the keys", err)
	}
}
