package access

import (
	"context"
	"crypto/hmac"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcphub/mcphub/hub"
	"github.com/mcphub/mcphub/registry"
)

// Key is an API key as the gate reads it from the store: its own limits
// (zero: the hub's) besides what it may reach.
type Key struct {
	ID, Name         string
	Hash             []byte
	Profiles         []string
	Rate             registry.Rate
	Concurrent       int
	Expires, Revoked time.Time
}

// ErrNoKey is what a KeyStore returns for an id it has no key of.
var ErrNoKey = errors.New("no such key")

// KeyStore is where the gate finds API keys: the hub's store, read on each
// request so that a key revoked by any process is refused at once.
type KeyStore interface {
	KeyByID(id string) (Key, error)
	TouchKey(id string, at time.Time) error
}

// touchEvery is how often a key's last use is written at most.
const touchEvery = 30 * time.Second

// Gate is the hub's Access: it identifies callers by API key or by an
// access token of the team's identity provider.
type Gate struct {
	keys    KeyStore
	pepper  []byte
	serving string // the hub's base URL where it listens
	log     *slog.Logger

	ctx    context.Context // ended by Close: the provider's key fetches
	cancel context.CancelFunc

	cfg     atomic.Pointer[config]
	touched sync.Map // key id → time.Time of the last TouchKey

	touches   chan keyUse   // to writeTouches
	touchDone chan struct{} // closed when writeTouches returns
	closeMu   sync.RWMutex  // touch sends under R, Close closes touches under W
	closeOnce sync.Once
}

// config is the gate's part of one registry.
type config struct {
	oauth    *registry.HubOAuth // nil: no sign-in
	provider *provider
	base     string // the hub's public base URL
	access   *registry.Access
	profiles map[string]bool // the registry's profiles
}

// New makes a gate over a key store; pepper is the key of the keys'
// hashes; serving is the hub's base URL where it listens (the address it
// bound, not a registry's :0), for an [hub.oauth] without url. Apply gives
// it its registry.
func New(keys KeyStore, pepper []byte, serving string, log *slog.Logger) *Gate {
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &Gate{keys: keys, pepper: pepper, serving: serving, log: log, ctx: ctx, cancel: cancel,
		touches: make(chan keyUse, 64), touchDone: make(chan struct{})}
	g.cfg.Store(&config{})
	go g.writeTouches()
	return g
}

// Apply puts a registry's [hub.oauth] and [hub.access] in force for the
// next request. The provider's cached keys are kept while its issuer and
// key URL stay.
func (g *Gate) Apply(reg *registry.Registry) {
	prev := g.cfg.Load()
	c := &config{access: reg.Hub.Access, profiles: map[string]bool{}}
	for _, p := range reg.Profiles {
		c.profiles[p.Name] = true
	}
	if o := reg.Hub.OAuth; o != nil {
		c.oauth = o
		c.base = o.URL
		if c.base == "" {
			// Where the hub listens, not the registry's listen: a file
			// edited since may say :0, or an address that applies only
			// after a restart.
			c.base = g.serving
		}
		// The provider is shared with the checks in progress and never
		// changed: the scopes are the config's.
		if prev.oauth != nil && sameProvider(*prev.oauth, *o) {
			c.provider = prev.provider
		} else {
			c.provider = newProvider(g.ctx, *o)
		}
	}
	g.cfg.Store(c)
}

// Close ends the provider's fetches and waits for the last uses of keys to
// be written. It may be called more than once.
func (g *Gate) Close() error {
	g.closeOnce.Do(func() {
		g.closeMu.Lock()
		g.cancel()
		close(g.touches)
		g.closeMu.Unlock()
		<-g.touchDone
	})
	return nil
}

// refusal is a credential the gate does not take: 401 with the gate's
// challenge (RFC 6750 §3: error="invalid_token" for a credential that is
// wrong, none for a missing one), or, when forbidden, 403
// (error="insufficient_scope" for a token without a required scope).
type refusal struct {
	msg       string
	challenge string
	forbidden bool
}

func (e *refusal) Error() string     { return e.msg }
func (e *refusal) Challenge() string { return e.challenge }
func (e *refusal) Forbidden() bool   { return e.forbidden }

// forbiddenError is a caller the gate knows but may reach nothing.
type forbiddenError struct{ msg string }

func (e *forbiddenError) Error() string   { return e.msg }
func (e *forbiddenError) Forbidden() bool { return true }

// Identify names a request's caller from its bearer credential: an API key
// (by its prefix) or, with [hub.oauth], the provider's access token.
func (g *Gate) Identify(r *http.Request, bearer string) (hub.Caller, error) {
	c := g.cfg.Load()
	refuse := func(format string, args ...any) (hub.Caller, error) {
		return hub.Caller{}, &refusal{msg: fmt.Sprintf(format, args...), challenge: g.challenge(c, r, "invalid_token")}
	}
	switch {
	case bearer == "" && c.oauth != nil:
		return hub.Caller{}, &refusal{msg: fmt.Sprintf("sign in: send Authorization: Bearer with an access token of %s (the hub's metadata at %s says so to MCP clients), an API key, or the hub's token",
			c.oauth.Issuer, c.base+WellKnown+resourcePath(r)), challenge: g.challenge(c, r, "")}
	case bearer == "":
		return hub.Caller{}, &refusal{msg: "send Authorization: Bearer <token> with the hub's token (see mcphub token) or an API key (see mcphub keys create)",
			challenge: g.challenge(c, r, "")}
	case strings.HasPrefix(bearer, KeyPrefix):
		return g.identifyKey(c, r, bearer)
	case c.oauth == nil:
		return refuse("the bearer credential is neither the hub's token nor an API key")
	}
	info, err := c.provider.verify(g.audiences(c, r), c.oauth.Scopes)(r.Context(), bearer, r)
	switch {
	case errors.As(err, new(*unreachableError)):
		return hub.Caller{}, err // the provider cannot be reached: 503
	case errors.Is(err, errScope):
		return hub.Caller{}, &refusal{msg: strings.TrimPrefix(err.Error(), errScope.Error()+": "), challenge: g.challenge(c, r, "insufficient_scope"), forbidden: true}
	case err != nil:
		return refuse("%s", strings.TrimPrefix(err.Error(), auth.ErrInvalidToken.Error()+": "))
	}
	// A signed-in user is named by a keyed hash of issuer and subject:
	// stable, and, unlike a plain hash of a guessable subject, not to be
	// turned back into it by whoever reads the log.
	sum := hex.EncodeToString(Hash(g.pepper, "user\x00"+info.UserID))
	caller := hub.Caller{ID: "user:" + sum[:12], Principal: "user:" + sum}
	if c.access == nil {
		return caller, nil
	}
	groups := claimValues(info.Extra[c.access.Claim])
	caller.Limited = true
	for _, g := range append(groups, "*") {
		for _, p := range c.access.Groups[g] {
			if c.profiles[p] && !slices.Contains(caller.Profiles, p) {
				caller.Profiles = append(caller.Profiles, p)
			}
		}
	}
	if len(caller.Profiles) == 0 {
		return hub.Caller{}, &forbiddenError{fmt.Sprintf("%s is signed in, but none of the groups in its %q claim is given a profile in [hub.access] of the hub's registry", caller.ID, c.access.Claim)}
	}
	slices.Sort(caller.Profiles)
	return caller, nil
}

// identifyKey checks an API key: known by its id, its hash equal (in
// constant time), not revoked, not expired.
func (g *Gate) identifyKey(c *config, r *http.Request, text string) (hub.Caller, error) {
	refuse := func(format string, args ...any) (hub.Caller, error) {
		return hub.Caller{}, &refusal{msg: fmt.Sprintf(format, args...), challenge: g.challenge(c, r, "invalid_token")}
	}
	id, ok := KeyID(text)
	if !ok {
		return refuse("the bearer credential has an API key's prefix but not its shape; copy the whole key mcphub keys create printed")
	}
	k, err := g.keys.KeyByID(id)
	if errors.Is(err, ErrNoKey) {
		return refuse("unknown API key (mcphub keys ls lists the keys)")
	}
	if err != nil {
		return hub.Caller{}, fmt.Errorf("read API key: %w", err)
	}
	if !hmac.Equal(Hash(g.pepper, text), k.Hash) {
		return refuse("unknown API key (mcphub keys ls lists the keys)")
	}
	now := time.Now()
	if !k.Revoked.IsZero() {
		return refuse("API key %s was revoked at %s", k.Name, k.Revoked.UTC().Format(time.RFC3339))
	}
	if !k.Expires.IsZero() && now.After(k.Expires) {
		return refuse("API key %s expired at %s; make another with mcphub keys create", k.Name, k.Expires.UTC().Format(time.RFC3339))
	}
	g.touch(id, now)
	// The id, not the name, binds its sessions and its bucket: a new key
	// may take a revoked one's name.
	caller := hub.Caller{ID: "key:" + k.Name, Principal: "key:" + k.ID, Rate: k.Rate, ConcurrentCalls: k.Concurrent}
	if len(k.Profiles) > 0 {
		caller.Limited, caller.Profiles = true, slices.Clone(k.Profiles)
	}
	return caller, nil
}

// touch records a key's use, at most every touchEvery per key and
// process: last use is for people, and a write per request would tax the
// store for nothing.
//
// The write is the gate's writer's (writeTouches), so that no request
// waits for it; when the writer is behind, a use is dropped, and the next
// one after touchEvery records it.
func (g *Gate) touch(id string, now time.Time) {
	if last, ok := g.touched.Load(id); ok && now.Sub(last.(time.Time)) < touchEvery {
		return
	}
	g.touched.Store(id, now)
	g.closeMu.RLock()
	defer g.closeMu.RUnlock()
	if g.ctx.Err() != nil {
		return
	}
	select {
	case g.touches <- keyUse{id, now}:
	default:
		g.touched.Delete(id)
	}
}

// keyUse is a key's use, for its last-use time.
type keyUse struct {
	id string
	at time.Time
}

// writeTouches records the keys' uses until Close.
func (g *Gate) writeTouches() {
	defer close(g.touchDone)
	for u := range g.touches {
		if err := g.keys.TouchKey(u.id, u.at); err != nil {
			g.log.Debug("could not record an API key's use", "key_id", u.id, "err", err)
		}
	}
}

// claimValues reads a groups claim: a string (several, space-separated) or
// an array of strings.
func claimValues(v any) []string {
	switch v := v.(type) {
	case string:
		return strings.Fields(v)
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// audiences are the audiences a token sent to r may name: the configured
// one, else the resource URL of r's endpoint or the hub's base URL.
func (g *Gate) audiences(c *config, r *http.Request) []string {
	if c.oauth.Audience != "" {
		return []string{c.oauth.Audience}
	}
	return []string{c.base + resourcePath(r), c.base, c.base + "/"}
}

// resourcePath is the MCP endpoint of a request: its path for an endpoint,
// /mcp for any other route (the control routes).
func resourcePath(r *http.Request) string {
	if p := strings.TrimSuffix(r.URL.Path, "/"); strings.HasSuffix(p, "/mcp") {
		return p
	}
	return "/mcp"
}

// challenge is the WWW-Authenticate value for r with an RFC 6750 error
// code ("" for none: a request that sent no credential).
func (g *Gate) challenge(c *config, r *http.Request, code string) string {
	v := `Bearer realm="mcphub"`
	if c.oauth != nil {
		v = fmt.Sprintf("Bearer resource_metadata=%q", c.base+WellKnown+resourcePath(r))
		if len(c.oauth.Scopes) > 0 {
			v += fmt.Sprintf(", scope=%q", strings.Join(c.oauth.Scopes, " "))
		}
	}
	if code != "" {
		v += fmt.Sprintf(", error=%q", code)
	}
	return v
}

// Metadata serves the protected resource metadata; 404 without sign-in.
func (g *Gate) Metadata() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := g.cfg.Load()
		if c.oauth == nil {
			http.NotFound(w, r)
			return
		}
		metadata(*c.oauth, c.base).ServeHTTP(w, r)
	})
}
