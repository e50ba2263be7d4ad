package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"

	"github.com/mcphub/mcphub/internal/redact"
)

// The client side of MCP authorization (OAuth 2.1) for remote servers:
// discovery, registration, the authorization code flow with PKCE and the
// code exchange are go-sdk's auth.AuthorizationCodeHandler; what is kept
// here is what it leaves to its user: persisting the grant, refreshing it
// ahead of expiry, attaching the token to the right requests
// (oauth_transport.go), and deciding when to sign in.

// TokenStore keeps OAuth grants between runs, as opaque bytes under a key
// (the server's canonical resource, see CanonicalResource). Load returns
// nil, nil when nothing is stored. Implementations must be safe for
// concurrent use; the data holds secrets (tokens, client secrets).
type TokenStore interface {
	Load(key string) ([]byte, error)
	Save(key string, data []byte) error
	Delete(key string) error
}

// Grant is what a sign-in to one server leaves behind, stored as JSON in a
// TokenStore: the client registration it used with the authorization
// server, that server's endpoints, and the token.
type Grant struct {
	// Issuer is the authorization server's issuer identifier. The client
	// registration below is only good with that server.
	Issuer       string `json:"issuer"`
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	// AuthStyle is how the client authenticates at the token endpoint:
	// oauth2.AuthStyleInHeader (client_secret_basic) or
	// oauth2.AuthStyleInParams (client_secret_post, or none with an empty
	// secret); never AuthStyleAutoDetect.
	AuthStyle oauth2.AuthStyle `json:"auth_style"`
	AuthURL   string           `json:"auth_url,omitempty"`
	TokenURL  string           `json:"token_url"`
	// Dynamic marks a client mcphub registered itself (RFC 7591), for
	// RedirectURL; such a registration is reused by a later sign-in with
	// the same issuer and redirect instead of registering anew.
	Dynamic     bool   `json:"dynamic,omitempty"`
	RedirectURL string `json:"redirect_url,omitempty"`
	// Scopes are the scopes granted, kept so that a later sign-in asks for
	// them as well as for what the server then wants (step-up).
	Scopes []string `json:"scopes,omitempty"`
	// Token is nil once the authorization server refused to refresh it:
	// someone has to sign in again.
	Token *oauth2.Token `json:"token,omitempty"`
}

func (g *Grant) oauth2Config() *oauth2.Config {
	return &oauth2.Config{
		ClientID: g.ClientID, ClientSecret: g.ClientSecret, Scopes: g.Scopes, RedirectURL: g.RedirectURL,
		Endpoint: oauth2.Endpoint{AuthURL: g.AuthURL, TokenURL: g.TokenURL, AuthStyle: g.AuthStyle},
	}
}

// hasToken reports whether g holds an access token.
func (g *Grant) hasToken() bool { return g != nil && g.Token != nil && g.Token.AccessToken != "" }

// OAuthConfig lets a connection to a remote server sign in with OAuth 2.1
// as the MCP authorization spec describes.
type OAuthConfig struct {
	// Store keeps the grant between runs; nil keeps it in memory only.
	Store TokenStore
	// Fetch runs the interactive step of a sign-in: it sends the user to
	// the authorization URL and returns the code, state and iss the
	// authorization server redirected to RedirectURL with. nil means the
	// connection never signs in: it uses the stored grant, refreshes it,
	// and a refusal a refresh cannot fix surfaces as AuthRequiredError.
	// Fetch must return once its context ends: Close waits for it.
	Fetch auth.AuthorizationCodeFetcher
	// RedirectURL is where the authorization server sends the user back
	// to; required with Fetch.
	RedirectURL string
	// ClientID and ClientSecret name a client registered beforehand with
	// the authorization server; Issuer, when set, is that server's issuer,
	// and the client is then never presented to another one.
	ClientID     string
	ClientSecret string
	Issuer       string
	// ClientMetadataURL is mcphub's client ID metadata document (an https
	// URL with a path), used as the client id where the authorization
	// server supports such documents.
	ClientMetadataURL string
	// OnChange is told when a grant is saved or dropped. It must not block.
	OnChange func()
	// OnRefreshFailed is told when the authorization server refused to
	// refresh the token for good (invalid_grant, say): the token is
	// dropped, and the server needs a new sign-in. It must not block.
	OnRefreshFailed func(err error)
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

const (
	// refreshMargin is how long before expiry a background refresh is due
	// at the latest; a token that close to expiry is refreshed before use.
	refreshMargin = 10 * time.Second
	// refreshRetryMax caps the backoff between refreshes that failed for
	// a reason that may pass.
	refreshRetryMax = time.Minute
	// maxAuthorize is how many sign-ins one challenge gets until a request
	// succeeds.
	maxAuthorize = 3
	// oauthHTTPTimeout bounds each request to an authorization server.
	oauthHTTPTimeout = 30 * time.Second
	// maxSecrets bounds the remembered token values masked in errors.
	maxSecrets = 64
)

// errGrantRejected marks a refresh the authorization server refused for
// good; the token is dropped.
var errGrantRejected = errors.New("the authorization server refused to refresh the token")

// authorizer is the OAuth state of one connection.
type authorizer struct {
	c      *Conn
	cfg    OAuthConfig
	key    string   // CanonicalResource of the server URL
	target *url.URL // the server URL without query: what discovery is based on
	hc     *http.Client
	rec    *asRecorder
	h      *auth.AuthorizationCodeHandler // nil without Fetch

	// Test hooks: the clock, the refresher's timers and its jitter.
	now      func() time.Time
	newTimer func(d time.Duration) (<-chan time.Time, func() bool)
	jitter   func(max time.Duration) time.Duration

	refreshing chan struct{} // one-slot lock: one refresh at a time
	signingIn  chan struct{} // one-slot lock: one sign-in at a time
	persistMu  sync.Mutex    // orders writes to the store
	flights    singleflight.Group

	mu        sync.Mutex
	grant     *Grant
	obtained  time.Time     // when grant.Token was obtained or loaded
	gen       uint64        // counts token changes
	changed   chan struct{} // closed (and replaced) when the token changes
	attempts  map[string]int
	noReplay  bool // a reused registration failed; register anew
	started   bool
	secrets   []string
	redactor  *redact.Redactor // over secrets; nil when stale
	clientSec []string         // client secrets, never forgotten
}

func newAuthorizer(c *Conn, base http.RoundTripper) (*authorizer, error) {
	u, err := url.Parse(c.cfg.URL)
	if err != nil {
		// url's error quotes the URL whole, query (an API key) included.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("server URL: %w", err)
	}
	cfg := *c.cfg.OAuth
	a := &authorizer{
		c:          c,
		cfg:        cfg,
		key:        CanonicalResource(c.cfg.URL),
		target:     resourceURL(u),
		now:        time.Now,
		newTimer:   realTimer,
		jitter:     func(max time.Duration) time.Duration { return rand.N(max + 1) },
		refreshing: make(chan struct{}, 1),
		signingIn:  make(chan struct{}, 1),
		changed:    make(chan struct{}),
		attempts:   map[string]int{},
	}
	a.rec = &asRecorder{base: base, a: a, issuerByToken: map[string]string{}, issuerByReg: map[string]string{},
		styleByToken: map[string]oauth2.AuthStyle{}, dynamic: map[string]bool{}}
	a.hc = &http.Client{Transport: a.rec, Timeout: oauthHTTPTimeout}
	if cfg.ClientSecret != "" {
		a.clientSec = append(a.clientSec, cfg.ClientSecret)
	}
	if cfg.Fetch == nil {
		return a, nil
	}
	if cfg.RedirectURL == "" {
		return nil, errors.New("OAuth: a redirect URL is required to sign in")
	}
	hcfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              cfg.RedirectURL,
		AuthorizationCodeFetcher: a.fetch,
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName:              "mcphub",
			RedirectURIs:            []string{cfg.RedirectURL},
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			TokenEndpointAuthMethod: "none",
		}},
		ScopeFilter:           a.scopeFilter,
		RequestRefreshToken:   true,
		AcceptUnadvertisedIss: true,
		Client:                a.hc,
		NewTokenSource:        a.newTokenSource,
	}
	if cfg.ClientMetadataURL != "" {
		hcfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: cfg.ClientMetadataURL}
	}
	if cfg.ClientID != "" {
		pre := &oauthex.ClientCredentials{ClientID: cfg.ClientID, Issuer: cfg.Issuer}
		if cfg.ClientSecret != "" {
			pre.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: cfg.ClientSecret}
		}
		hcfg.PreregisteredClient = pre
	}
	h, err := auth.NewAuthorizationCodeHandler(hcfg)
	if err != nil {
		return nil, fmt.Errorf("OAuth: %w", err)
	}
	a.h = h
	return a, nil
}

func realTimer(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}

// start loads the stored grant and starts the background refresher, once.
func (a *authorizer) start() error {
	a.mu.Lock()
	started := a.started
	a.mu.Unlock()
	if started {
		return nil
	}
	g, err := a.loadStored()
	if err != nil {
		return fmt.Errorf("loading the OAuth grant of server %s: %w", a.c.cfg.Name, a.scrubErr(err))
	}
	a.mu.Lock()
	if a.started {
		a.mu.Unlock()
		return nil
	}
	a.started = true
	if g != nil {
		a.setGrantLocked(g)
	}
	a.mu.Unlock()
	a.c.handlers.Go(func() { a.refreshLoop(a.c.ctx) })
	return nil
}

// loadStored reads the stored grant; a grant that cannot be read is
// ignored (a new sign-in replaces it).
func (a *authorizer) loadStored() (*Grant, error) {
	if a.cfg.Store == nil {
		return nil, nil
	}
	data, err := a.cfg.Store.Load(a.key)
	if err != nil || data == nil {
		return nil, err
	}
	var g Grant
	if err := json.Unmarshal(data, &g); err != nil {
		a.c.log.Warn("ignoring a stored OAuth grant that cannot be read", "err", err)
		return nil, nil
	}
	return &g, nil
}

// setGrantLocked installs g as the current grant; a.mu is held.
func (a *authorizer) setGrantLocked(g *Grant) {
	a.grant = g
	a.obtained = a.now()
	a.gen++
	close(a.changed)
	a.changed = make(chan struct{})
	if g != nil {
		if g.ClientSecret != "" && !slices.Contains(a.clientSec, g.ClientSecret) {
			a.clientSec = append(a.clientSec, g.ClientSecret)
			a.redactor = nil
		}
		if g.Token != nil {
			a.addSecretsLocked(g.Token.AccessToken, g.Token.RefreshToken)
		}
	}
}

// install makes g the current grant and stores it.
func (a *authorizer) install(g *Grant) {
	a.mu.Lock()
	a.setGrantLocked(g)
	a.mu.Unlock()
	a.persist()
}

// persist writes the current grant to the store (or deletes it when there
// is none) and tells OnChange.
func (a *authorizer) persist() {
	a.persistMu.Lock()
	a.mu.Lock()
	g := a.grant
	a.mu.Unlock()
	var err error
	if st := a.cfg.Store; st != nil {
		if g == nil {
			err = st.Delete(a.key)
		} else {
			var data []byte
			if data, err = json.Marshal(g); err == nil {
				err = st.Save(a.key, data)
			}
		}
	}
	a.persistMu.Unlock()
	if err != nil {
		a.c.log.Warn("could not store the OAuth grant; it lasts as long as this connection", "err", a.scrubErr(err))
	}
	if a.cfg.OnChange != nil {
		a.cfg.OnChange()
	}
}

// current returns the grant and the generation of its token.
func (a *authorizer) current() (*Grant, uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.grant, a.gen
}

// generation counts the changes of the token.
func (a *authorizer) generation() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.gen
}

// expired reports whether t is past, or within refreshMargin of, its
// expiry.
func (a *authorizer) expired(t *oauth2.Token) bool {
	return !t.Expiry.IsZero() && !a.now().Before(t.Expiry.Add(-refreshMargin))
}

// bearer returns the access token to send ("" for none) and the generation
// it belongs to. An expired token is refreshed first when it can be; one
// the authorization server refuses to refresh is dropped, and the request
// goes without, so that the server's 401 says sign-in is needed.
func (a *authorizer) bearer(ctx context.Context) (string, uint64, error) {
	g, gen := a.current()
	if !g.hasToken() {
		return "", gen, nil
	}
	if a.expired(g.Token) && g.Token.RefreshToken != "" {
		if err := a.refresh(ctx, g.Token); err != nil && !errors.Is(err, errGrantRejected) {
			return "", gen, err
		}
		if g, gen = a.current(); !g.hasToken() {
			return "", gen, nil
		}
	}
	return g.Token.AccessToken, gen, nil
}

// refresh trades old's refresh token for a new token, unless old is no
// longer the current token (another refresh or a sign-in replaced it). A
// refusal for good drops the token and returns errGrantRejected.
func (a *authorizer) refresh(ctx context.Context, old *oauth2.Token) error {
	select {
	case a.refreshing <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-a.refreshing }()
	g, _ := a.current()
	if g == nil || g.Token != old {
		return nil
	}
	rctx := context.WithValue(ctx, oauth2.HTTPClient, a.hc)
	tok, err := g.oauth2Config().TokenSource(rctx, &oauth2.Token{RefreshToken: old.RefreshToken}).Token()
	if err == nil {
		if tok.RefreshToken == "" {
			tok.RefreshToken = old.RefreshToken
		}
		ng := *g
		ng.Token = tok
		a.mu.Lock()
		current := a.grant == g // not replaced by a sign-in meanwhile
		if current {
			a.setGrantLocked(&ng)
		}
		a.mu.Unlock()
		if current {
			a.persist()
			a.c.log.Debug("refreshed the OAuth access token", "expires", tok.Expiry)
		}
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	clean := a.scrubErr(err)
	permanent, dropClient := refreshRefused(err)
	if !permanent {
		return fmt.Errorf("refreshing the access token: %w", clean)
	}
	// Another process sharing the store may have rotated the refresh token.
	if a.adoptStored(func(s *Grant) bool { return s.Token.RefreshToken != old.RefreshToken }) {
		return nil
	}
	a.mu.Lock()
	if a.grant == g {
		if dropClient {
			a.setGrantLocked(nil)
		} else {
			ng := *g
			ng.Token = nil
			a.setGrantLocked(&ng)
		}
	}
	a.mu.Unlock()
	a.persist()
	rerr := fmt.Errorf("%w: %w", errGrantRejected, clean)
	a.c.log.Warn("the OAuth token was dropped; the server needs a new sign-in", "err", clean)
	if a.cfg.OnRefreshFailed != nil {
		a.cfg.OnRefreshFailed(rerr)
	}
	return rerr
}

// refreshRefused reports whether a failed refresh is final, and whether it
// also condemns the client registration.
func refreshRefused(err error) (permanent, dropClient bool) {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return false, false
	}
	switch re.ErrorCode {
	case "invalid_client", "unauthorized_client":
		return true, true
	case "invalid_grant", "invalid_scope", "unsupported_grant_type", "invalid_request":
		return true, false
	}
	if re.Response != nil {
		st := re.Response.StatusCode
		return st >= 400 && st < 500 && st != http.StatusRequestTimeout && st != http.StatusTooManyRequests, false
	}
	return false, false
}

// adoptStored replaces the current grant with the stored one when it holds
// a token and newer(stored) says it differs from what this connection
// tried: another process signed in or refreshed meanwhile.
func (a *authorizer) adoptStored(newer func(stored *Grant) bool) bool {
	s, err := a.loadStored()
	if err != nil {
		a.c.log.Debug("could not read the stored OAuth grant", "err", a.scrubErr(err))
		return false
	}
	if !s.hasToken() || !newer(s) {
		return false
	}
	a.mu.Lock()
	if cur := a.grant; cur.hasToken() && cur.Token.AccessToken == s.Token.AccessToken {
		a.mu.Unlock()
		return true // already adopted
	}
	a.setGrantLocked(s)
	a.mu.Unlock()
	a.c.log.Info("using the OAuth grant stored by another sign-in")
	return true
}

// refreshDelay is how long to wait from now before refreshing a token
// obtained at from that expires at exp: at 80% of its life, at least
// refreshMargin before expiry, but not before half its life (a very short
// token is then refreshed before use instead), less a little jitter.
func (a *authorizer) refreshDelay(now, from, exp time.Time) time.Duration {
	life := exp.Sub(from)
	if life <= 0 {
		return 0
	}
	at := from.Add(life / 5 * 4)
	if latest := exp.Add(-refreshMargin); at.After(latest) {
		at = latest
	}
	if earliest := from.Add(life / 2); at.Before(earliest) {
		at = earliest
	}
	at = at.Add(-a.jitter(life / 20))
	return max(at.Sub(now), 0)
}

// refreshLoop refreshes the token ahead of its expiry for the life of the
// connection, so that no request ever waits for a refresh or carries an
// expired token. A refresh that fails for a reason that may pass is
// retried with backoff until the token expires.
func (a *authorizer) refreshLoop(ctx context.Context) {
	var retry time.Duration
	for {
		a.mu.Lock()
		g, from, changed := a.grant, a.obtained, a.changed
		a.mu.Unlock()
		if !g.hasToken() || g.Token.RefreshToken == "" || g.Token.Expiry.IsZero() {
			retry = 0
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return
			}
		}
		tok := g.Token
		now := a.now()
		d := a.refreshDelay(now, from, tok.Expiry)
		if retry > 0 {
			if !now.Add(retry).Before(tok.Expiry) {
				a.c.log.Warn("gave up refreshing the OAuth token before it expires; the next request tries again")
				retry = 0
				select {
				case <-changed:
					continue
				case <-ctx.Done():
					return
				}
			}
			d = retry
		}
		if d > 0 {
			fire, stop := a.newTimer(d)
			select {
			case <-fire:
			case <-changed:
				stop()
				retry = 0
				continue
			case <-ctx.Done():
				stop()
				return
			}
		}
		err := a.refresh(ctx, tok)
		switch {
		case ctx.Err() != nil:
			return
		case err == nil || errors.Is(err, errGrantRejected):
			retry = 0
		default:
			a.c.log.Warn("could not refresh the OAuth token; retrying", "err", err)
			retry = min(max(2*retry, time.Second), refreshRetryMax)
		}
	}
}

// fetch runs Config.Fetch, noting the code as a secret.
func (a *authorizer) fetch(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	res, err := a.cfg.Fetch(ctx, args)
	if res != nil {
		a.addSecrets(res.Code)
	}
	return res, err
}

// newTokenSource is go-sdk's hook after a code exchange: the new grant is
// installed and stored. The source it returns serves the current token.
func (a *authorizer) newTokenSource(_ context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
	style := cfg.Endpoint.AuthStyle
	if style == oauth2.AuthStyleAutoDetect {
		if s, ok := a.rec.usedStyle(cfg.Endpoint.TokenURL); ok {
			style = s
		} else if cfg.ClientSecret == "" {
			style = oauth2.AuthStyleInParams
		} else {
			style = oauth2.AuthStyleInHeader
		}
	}
	scopes := cfg.Scopes
	if s, ok := tok.Extra("scope").(string); ok && strings.TrimSpace(s) != "" {
		scopes = strings.Fields(s)
	}
	g := &Grant{
		Issuer: a.rec.issuerFor(cfg.Endpoint.TokenURL), ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret,
		AuthStyle: style, AuthURL: cfg.Endpoint.AuthURL, TokenURL: cfg.Endpoint.TokenURL,
		Dynamic: a.rec.isDynamic(cfg.ClientID), RedirectURL: cfg.RedirectURL,
		Scopes: scopes, Token: tok,
	}
	a.install(g)
	a.c.log.Info("signed in", "issuer", g.Issuer)
	return grantSource{a}, nil
}

// grantSource serves the connection's current token to go-sdk.
type grantSource struct{ a *authorizer }

func (s grantSource) Token() (*oauth2.Token, error) {
	g, _ := s.a.current()
	if !g.hasToken() {
		return nil, errors.New("no access token")
	}
	return g.Token, nil
}

// scopeFilter adds the scopes of the stored grant to what a sign-in asks
// for, when it is with the same authorization server: a step-up keeps what
// was granted before, across restarts too.
func (a *authorizer) scopeFilter(discovered []string) []string {
	g, _ := a.current()
	if g == nil || len(g.Scopes) == 0 || g.Issuer == "" || g.Issuer != a.rec.flightIssuer() {
		return discovered
	}
	out := slices.Clone(discovered)
	for _, s := range g.Scopes {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// replayable returns the stored registration a sign-in with issuer may
// reuse instead of registering anew, nil for none.
func (a *authorizer) replayable(issuer string) *Grant {
	a.mu.Lock()
	defer a.mu.Unlock()
	g := a.grant
	if a.noReplay || g == nil || !g.Dynamic || g.ClientID == "" || g.Issuer != issuer || g.RedirectURL != a.cfg.RedirectURL {
		return nil
	}
	return g
}

// forgetRegistration stops reusing the stored registration after a
// sign-in with it failed; a grant that holds nothing else is deleted.
func (a *authorizer) forgetRegistration() {
	a.mu.Lock()
	a.noReplay = true
	drop := a.grant != nil && !a.grant.hasToken()
	if drop {
		a.setGrantLocked(nil)
	}
	a.mu.Unlock()
	if drop {
		a.persist()
	}
}

// addSecrets remembers values to mask in errors and logs.
func (a *authorizer) addSecrets(vs ...string) {
	a.mu.Lock()
	a.addSecretsLocked(vs...)
	a.mu.Unlock()
}

func (a *authorizer) addSecretsLocked(vs ...string) {
	for _, v := range vs {
		if v == "" || slices.Contains(a.secrets, v) {
			continue
		}
		a.secrets = append(a.secrets, v)
		a.redactor = nil
	}
	if n := len(a.secrets) - maxSecrets; n > 0 {
		a.secrets = slices.Delete(a.secrets, 0, n)
	}
}

// scrubErr masks the OAuth secrets this connection knows, and the
// configuration's, in err's message; errors.Is and errors.As still see err.
func (a *authorizer) scrubErr(err error) error {
	if err == nil {
		return nil
	}
	a.mu.Lock()
	r := a.redactor
	if r == nil {
		r = redact.New(append(slices.Clone(a.clientSec), a.secrets...))
		a.redactor = r
	}
	a.mu.Unlock()
	msg := err.Error()
	if clean := a.c.scrub(r.Text(msg)); clean != msg {
		return &scrubbedError{msg: clean, err: err}
	}
	return err
}

// sameOrigin reports whether u is on the server's origin (scheme, host and
// port), the only one its token may be sent to.
func (a *authorizer) sameOrigin(u *url.URL) bool {
	return strings.EqualFold(u.Scheme, a.target.Scheme) && strings.EqualFold(u.Hostname(), a.target.Hostname()) &&
		effectivePort(u) == effectivePort(a.target)
}

func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}
