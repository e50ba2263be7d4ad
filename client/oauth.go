package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
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
	// Scopes, when set, replace the scopes the server's challenge or
	// metadata name for the first sign-in; a step-up still adds the ones
	// its challenge asks for.
	Scopes []string
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
	// maxAttemptKeys bounds the distinct challenges counted; past it the
	// counts start over.
	maxAttemptKeys = 32
	// oauthHTTPTimeout bounds each request to an authorization server.
	oauthHTTPTimeout = 30 * time.Second
	// maxWanted bounds the scopes a grant keeps for the next sign-in.
	maxWanted = 32
	// maxSecrets bounds the remembered token values masked in errors.
	maxSecrets = 64
	// maxASBody bounds what is read of an authorization server's answer.
	maxASBody = 1 << 20
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
	base   *http.Transport
	hc     *http.Client // the requests to authorization servers
	rec    *asRecorder

	// Test hooks: the clock, the refresher's timers and its jitter.
	now      func() time.Time
	newTimer func(d time.Duration) (<-chan time.Time, func() bool)
	jitter   func(max time.Duration) time.Duration

	refreshing chan struct{}      // one-slot lock: one refresh at a time
	flights    singleflight.Group // one sign-in at a time, shared by its waiters

	mu       sync.Mutex
	grant    *Grant
	obtained time.Time     // when grant.Token was obtained or loaded
	gen      uint64        // counts token changes
	changed  chan struct{} // closed (and replaced) when the token changes
	attempts map[string]int
	// stepUp says the sign-in in progress answers a 403 asking for more
	// scopes, not a first 401.
	stepUp  bool
	noReuse bool // the authorization server refused the stored registration
	started bool
	// The store's writer: dirty says the grant changed since the last
	// write, written is closed when the write covering it is done, stale
	// says the last write failed.
	dirty, writing, stale bool
	written               chan struct{}
	idle                  chan struct{} // closed when the writer in progress exits

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
		changed:    make(chan struct{}),
		attempts:   map[string]int{},
	}
	a.base = newOAuthTransport(base, a.target.Hostname())
	a.rec = &asRecorder{base: a.base, a: a}
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
	if _, err := a.newHandler(nil, new(bool)); err != nil {
		return nil, err
	}
	return a, nil
}

// newHandler is go-sdk's handler for one sign-in. reuse is a registration
// of mcphub's to present instead of registering anew, bound to its
// issuer; nil for none. fetched is set once the user was sent to sign in.
func (a *authorizer) newHandler(reuse *Grant, fetched *bool) (*auth.AuthorizationCodeHandler, error) {
	cfg := a.cfg
	hcfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: cfg.RedirectURL,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			*fetched = true
			res, err := cfg.Fetch(ctx, args)
			if res != nil {
				a.addSecrets(res.Code)
			}
			return res, err
		},
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
		NewTokenSource: func(_ context.Context, oc *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			a.signedIn(oc, tok, reuse)
			return grantSource{a}, nil
		},
	}
	if cfg.ClientMetadataURL != "" {
		hcfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: cfg.ClientMetadataURL}
	}
	switch {
	case cfg.ClientID != "":
		pre := &oauthex.ClientCredentials{ClientID: cfg.ClientID, Issuer: cfg.Issuer}
		if cfg.ClientSecret != "" {
			pre.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: cfg.ClientSecret}
		}
		hcfg.PreregisteredClient = pre
	case reuse != nil:
		// go-sdk presents it only to the authorization server whose
		// validated metadata states this issuer.
		pre := &oauthex.ClientCredentials{ClientID: reuse.ClientID, Issuer: reuse.Issuer}
		if reuse.ClientSecret != "" {
			pre.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: reuse.ClientSecret}
		}
		hcfg.PreregisteredClient = pre
	}
	h, err := auth.NewAuthorizationCodeHandler(hcfg)
	if err != nil {
		return nil, fmt.Errorf("OAuth: %w", err)
	}
	return h, nil
}

func realTimer(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}

// start loads the stored grant and starts the background refresher, once.
func (a *authorizer) start() error {
	a.mu.Lock()
	started, gen := a.started, a.gen
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
	if g != nil && a.gen == gen {
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
	// A stored grant's token was obtained when it was saved, not when it
	// was read back.
	a.obtained = a.now()
	if g != nil && !g.Saved.IsZero() && g.Saved.Before(a.obtained) {
		a.obtained = g.Saved
	}
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

// setOwnLocked installs g, made by this connection, as a newer version
// of the current grant; a.mu is held.
func (a *authorizer) setOwnLocked(g *Grant) {
	var prev time.Time
	if a.grant != nil {
		prev = a.grant.Saved
	}
	g.Saved = stamp(prev)
	a.setGrantLocked(g)
}

// persist has the current grant written to the store (deleted when there
// is none) by a goroutine of its own, so that a slow store (a keychain
// that asks the user) holds up neither requests nor Close; writes
// coalesce into the latest grant. The channel is closed once a write
// covering this change is done.
func (a *authorizer) persist() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.written == nil {
		a.written = make(chan struct{})
	}
	done := a.written
	a.dirty = true
	if !a.writing {
		a.writing, a.idle = true, make(chan struct{})
		go a.writeLoop(a.idle)
	}
	return done
}

// writeLoop writes the grant until no change is left to write, then
// closes idle. Close waits for it a while (see settle).
func (a *authorizer) writeLoop(idle chan struct{}) {
	defer close(idle)
	for {
		a.mu.Lock()
		if !a.dirty {
			a.writing = false
			a.mu.Unlock()
			return
		}
		g, done := a.grant, a.written
		a.dirty, a.written = false, nil
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
		a.mu.Lock()
		a.stale = err != nil
		a.mu.Unlock()
		if err != nil {
			a.c.log.Warn("could not store the OAuth grant; it lasts as long as this connection", "err", a.scrubErr(err))
		}
		// Told before done closes: whoever waits for the write (a sign-in)
		// then knows the others were told too.
		if a.cfg.OnChange != nil {
			a.cfg.OnChange()
		}
		close(done)
	}
}

// settle waits, at most limit, for the grant's last change to be written:
// a refresh just before Close must not lose the rotated refresh token, but
// a keychain that waits for the user must not hold Close for ever.
func (a *authorizer) settle(limit time.Duration) {
	a.mu.Lock()
	idle := a.idle
	a.mu.Unlock()
	if idle == nil {
		return
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
		a.c.log.Warn("closing before the OAuth grant was stored; the store did not answer", "waited", limit)
	}
}

// current returns the grant and the generation of its token.
func (a *authorizer) current() (*Grant, uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.grant, a.gen
}

// expired reports whether t is past, or within refreshMargin of, its
// expiry.
func (a *authorizer) expired(t *oauth2.Token) bool {
	if t.Expiry.IsZero() {
		return false
	}
	// A token that lives less than four margins is refreshed a quarter of
	// its life before expiry, not on every request.
	a.mu.Lock()
	from := a.obtained
	a.mu.Unlock()
	margin := refreshMargin
	if !from.IsZero() {
		margin = marginFor(t.Expiry.Sub(from))
	}
	return !a.now().Before(t.Expiry.Add(-margin))
}

// marginFor is how long before expiry a token that lives life is due for
// a refresh at the latest: refreshMargin, or a quarter of a shorter life,
// so that a token of a few seconds is not refreshed before every request.
func marginFor(life time.Duration) time.Duration {
	if life > 0 && life/4 < refreshMargin {
		return life / 4
	}
	return refreshMargin
}

// bearer returns the access token to send ("" for none) and the generation
// it belongs to. A token about to expire is refreshed first when it can
// be; one the authorization server refuses to refresh is dropped, and the
// request goes without, so that the server's 401 says sign-in is needed.
// When the refresh fails for a reason that may pass, a token that has not
// expired yet is still sent.
func (a *authorizer) bearer(ctx context.Context) (string, uint64, error) {
	g, gen := a.current()
	if !g.hasToken() {
		return "", gen, nil
	}
	if a.expired(g.Token) && g.Token.RefreshToken != "" {
		err := a.refresh(ctx, g.Token)
		if err != nil && !errors.Is(err, errGrantRejected) {
			if ctx.Err() != nil || !a.now().Before(g.Token.Expiry) {
				return "", gen, err
			}
			a.c.log.Debug("could not refresh the OAuth token; using it until it expires", "err", err)
		}
		if g, gen = a.current(); !g.hasToken() {
			return "", gen, nil
		}
	}
	return g.Token.AccessToken, gen, nil
}

// refresh trades old's refresh token for a new token, unless old is no
// longer the current token (another refresh or a sign-in replaced it). A
// refusal for good drops the token and returns errGrantRejected. The slot
// is held for the request to the authorization server only, never while
// the store is read or written.
func (a *authorizer) refresh(ctx context.Context, old *oauth2.Token) error {
	select {
	case a.refreshing <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	release := sync.OnceFunc(func() { <-a.refreshing })
	defer release()
	g, gen := a.current()
	if g == nil || g.Token != old {
		return nil
	}
	tok, err := a.requestRefresh(ctx, g)
	if err == nil {
		if tok.RefreshToken == "" {
			tok.RefreshToken = old.RefreshToken
		}
		a.mu.Lock()
		current := a.gen == gen // not replaced by a sign-in meanwhile
		if current {
			// From the grant in force: it may want scopes (want) that
			// the copy taken before the refresh did not.
			ng := *a.grant
			ng.Token = tok
			a.setOwnLocked(&ng)
		}
		a.mu.Unlock()
		release()
		if current {
			a.persist()
			a.c.log.Debug("refreshed the OAuth access token", "expires", tok.Expiry)
		}
		return nil
	}
	release()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	clean := a.scrubErr(err)
	permanent, dropClient := refreshRefused(err)
	if !permanent {
		return fmt.Errorf("refreshing the access token: %w", clean)
	}
	// Another process sharing the store may have rotated the refresh token.
	if a.newerToken(gen) {
		return nil
	}
	a.mu.Lock()
	current := a.gen == gen
	if current {
		if dropClient {
			a.setGrantLocked(nil)
		} else {
			ng := *a.grant
			ng.Token = nil
			a.setOwnLocked(&ng)
		}
	}
	a.mu.Unlock()
	if !current {
		return nil
	}
	select {
	case <-a.persist():
	case <-ctx.Done():
	}
	rerr := fmt.Errorf("%w: %w", errGrantRejected, clean)
	a.c.log.Warn("the OAuth token was dropped; the server needs a new sign-in", "err", clean)
	if a.cfg.OnRefreshFailed != nil {
		a.cfg.OnRefreshFailed(rerr)
	}
	return rerr
}

// requestRefresh sends g's refresh token to the token endpoint with the
// resource it was granted for (RFC 8707), the client authenticating as g
// says. A refusal is an *oauth2.RetrieveError.
func (a *authorizer) requestRefresh(ctx context.Context, g *Grant) (*oauth2.Token, error) {
	resource := g.Resource
	if resource == "" {
		resource = a.target.String()
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {g.Token.RefreshToken}, "resource": {resource}}
	basic := g.ClientSecret != "" && g.AuthStyle == oauth2.AuthStyleInHeader
	if !basic {
		form.Set("client_id", g.ClientID)
		if g.ClientSecret != "" {
			form.Set("client_secret", g.ClientSecret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basic {
		req.SetBasicAuth(url.QueryEscape(g.ClientID), url.QueryEscape(g.ClientSecret))
	}
	// A redirect would carry the form, refresh token and secret, elsewhere.
	hc := *a.hc
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxASBody))
	if err != nil {
		return nil, fmt.Errorf("reading the token endpoint's answer: %w", err)
	}
	var t struct {
		AccessToken  string      `json:"access_token"`
		TokenType    string      `json:"token_type"`
		RefreshToken string      `json:"refresh_token"`
		ExpiresIn    json.Number `json:"expires_in"`
		Error        string      `json:"error"`
		Description  string      `json:"error_description"`
		URI          string      `json:"error_uri"`
	}
	json.Unmarshal(body, &t) // an answer that is not JSON holds no token
	if resp.StatusCode < 200 || resp.StatusCode > 299 || t.AccessToken == "" {
		return nil, &oauth2.RetrieveError{Response: resp, Body: body, ErrorCode: t.Error, ErrorDescription: t.Description, ErrorURI: t.URI}
	}
	tok := &oauth2.Token{AccessToken: t.AccessToken, TokenType: t.TokenType, RefreshToken: t.RefreshToken}
	if n, err := t.ExpiresIn.Int64(); err == nil && n > 0 {
		tok.ExpiresIn = n
		tok.Expiry = a.now().Add(time.Duration(n) * time.Second)
	}
	return tok, nil
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

// newerToken reports whether the current token is no longer the one of
// generation gen: it changed meanwhile, or the store holds a grant with a
// token saved after the current grant (another process signed in or
// refreshed), which is then adopted. A store whose last write failed is
// older than this connection and is not read.
func (a *authorizer) newerToken(gen uint64) bool {
	a.mu.Lock()
	moved, stale := a.gen != gen, a.stale
	a.mu.Unlock()
	if moved {
		return true
	}
	if stale || a.cfg.Store == nil {
		return false
	}
	s, err := a.loadStored()
	if err != nil {
		a.c.log.Debug("could not read the stored OAuth grant", "err", a.scrubErr(err))
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.gen != gen {
		return true
	}
	var cur time.Time
	if a.grant != nil {
		cur = a.grant.Saved
	}
	if a.stale || !s.hasToken() || !s.Saved.After(cur) {
		return false
	}
	a.setGrantLocked(s)
	a.c.log.Info("using the OAuth grant stored by another sign-in")
	return true
}

// refreshDelay is how long to wait from now before refreshing a token
// obtained at from that expires at exp: at 80% of its life, at least
// marginFor(life) before expiry, but not before half its life, less a
// little jitter.
func (a *authorizer) refreshDelay(now, from, exp time.Time) time.Duration {
	life := exp.Sub(from)
	if life <= 0 {
		return 0
	}
	at := from.Add(life / 5 * 4)
	if latest := exp.Add(-marginFor(life)); at.After(latest) {
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

// signedIn is go-sdk's hook after a code exchange: the new grant is
// installed, and stored before the sign-in returns. reuse is the stored
// registration the sign-in presented, nil when none.
func (a *authorizer) signedIn(oc *oauth2.Config, tok *oauth2.Token, reuse *Grant) {
	n := a.rec.notes()
	style := oc.Endpoint.AuthStyle
	if style == oauth2.AuthStyleAutoDetect {
		// A preregistered client with an authorization server that
		// advertises neither method: what the exchange used.
		switch {
		case n.styled:
			style = n.style
		case oc.ClientSecret == "":
			style = oauth2.AuthStyleInParams
		default:
			style = oauth2.AuthStyleInHeader
		}
	}
	scopes := oc.Scopes
	if s, ok := tok.Extra("scope").(string); ok && strings.TrimSpace(s) != "" {
		scopes = strings.Fields(s)
	}
	g := &Grant{
		ClientID: oc.ClientID, ClientSecret: oc.ClientSecret, AuthStyle: style,
		TokenURL: oc.Endpoint.TokenURL, Resource: n.resource,
		RedirectURL: oc.RedirectURL, Scopes: scopes, Token: tok,
	}
	if n.tokenURL == oc.Endpoint.TokenURL {
		g.Issuer = n.issuer
	}
	switch {
	case n.clientID != "" && n.clientID == oc.ClientID:
		g.Dynamic, g.ClientSecretExpiresAt = true, n.secretExpires
	case reuse != nil && reuse.ClientID == oc.ClientID:
		g.Dynamic, g.ClientSecretExpiresAt = true, reuse.ClientSecretExpiresAt
	}
	a.mu.Lock()
	a.noReuse = false
	a.setOwnLocked(g)
	a.mu.Unlock()
	select {
	case <-a.persist():
	case <-a.c.ctx.Done():
	}
	a.c.log.Info("signed in", "issuer", g.Issuer)
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
	a.mu.Lock()
	stepUp := a.stepUp
	a.mu.Unlock()
	if want := a.c.cfg.OAuth.Scopes; len(want) > 0 {
		// The registry's scopes replace what a first sign-in would ask
		// for; a step-up asks for them and for what its challenge names.
		if stepUp {
			discovered = append(slices.Clone(want), slices.DeleteFunc(slices.Clone(discovered), func(s string) bool { return slices.Contains(want, s) })...)
		} else {
			discovered = slices.Clone(want)
		}
	}
	g, _ := a.current()
	if g == nil || g.Issuer == "" || g.Issuer != a.rec.flightIssuer() {
		return discovered
	}
	return union(discovered, g.Scopes, g.Wanted)
}

// union is the scopes of the lists, each once, in order of appearance.
func union(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		for _, s := range l {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// want records, on a connection that cannot sign in, the scopes a request
// was refused for want of, so that the next sign-in (mcphub login) asks
// for them; a grant that wants them already is left as it is.
func (a *authorizer) want(scopes []string) {
	a.mu.Lock()
	g := a.grant
	if g == nil || len(scopes) == 0 || len(union(g.Wanted, scopes)) == len(g.Wanted) || len(g.Wanted) >= maxWanted {
		a.mu.Unlock()
		return
	}
	// The token is the same: the grant is replaced in place, without a
	// new generation, so that a refresh in flight still installs its
	// token (and keeps what is wanted).
	ng := *g
	ng.Wanted = union(g.Wanted, scopes)
	ng.Saved = stamp(g.Saved)
	a.grant = &ng
	a.mu.Unlock()
	a.persist()
	a.c.log.Warn("the server wants more scopes for a request; the next sign-in asks for them", "scopes", scopes)
}

// reusableLocked returns the stored registration a sign-in presents
// instead of registering anew, nil for none: a client mcphub registered
// for this redirect, with an authorization server whose issuer is known,
// whose secret (if any) has not expired. A public one authenticates as
// "none" (see publicClient). a.mu is held.
func (a *authorizer) reusableLocked() *Grant {
	g := a.grant
	if a.noReuse || a.cfg.ClientID != "" || g == nil || !g.Dynamic || g.ClientID == "" ||
		g.Issuer == "" || g.RedirectURL != a.cfg.RedirectURL {
		return nil
	}
	if g.ClientSecretExpiresAt != 0 && !time.Now().Add(time.Minute).Before(time.Unix(g.ClientSecretExpiresAt, 0)) {
		return nil
	}
	return g
}

// forgetRegistration stops presenting the stored registration after the
// authorization server refused it; a grant that holds nothing else is
// deleted.
func (a *authorizer) forgetRegistration() {
	a.mu.Lock()
	a.noReuse = true
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

// secretField finds a client secret quoted in JSON, as a registration
// error quotes the answer it could not read.
var secretField = regexp.MustCompile(`(?i)("client_secret"\s*:\s*")(?:[^"\\]|\\.)*"?`)

// scrubErr masks the OAuth secrets this connection knows, any client
// secret quoted as JSON, and the configuration's secrets, in err's
// message; errors.Is and errors.As still see err.
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
	clean := secretField.ReplaceAllString(r.Text(msg), `${1}`+redact.Mask+`"`)
	if clean = a.c.scrub(clean); clean != msg {
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
