package oauth

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"

	"github.com/mcphub/mcphub/internal/goroutines"
	"github.com/mcphub/mcphub/internal/redact"
)

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
	// settleLimit is how long Close waits for the grant's last write.
	settleLimit = 5 * time.Second
)

// ErrClosed is why a sign-in cannot start once the Authorizer (or the
// connection whose Options.Go it runs on) is closing.
var ErrClosed = errors.New("connection closed")

// errGrantRejected marks a refresh the authorization server refused for
// good; the token is dropped.
var errGrantRejected = errors.New("the authorization server refused to refresh the token")

// Authorizer is the OAuth state of one connection to a remote server: its
// grant, the refresher that keeps the token fresh, and the sign-ins its
// refusals call for. Its Transport carries the connection's requests.
type Authorizer struct {
	cfg    Config
	key    string   // CanonicalResource of the server URL
	target *url.URL // the server URL without query: what discovery is based on
	asTr   *http.Transport
	hc     *http.Client // the requests to authorization servers
	rec    *asRecorder
	base   http.RoundTripper // the connection's requests

	log    *slog.Logger
	ctx    context.Context // the connection's life
	cancel context.CancelFunc
	goFn   func(f func()) error
	own    *goroutines.Group // runs goFn's goroutines when Options.Go is nil
	scrub  func(string) string

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

// New prepares the OAuth state of one connection. It reads nothing yet
// (Start loads the stored grant); it fails only on a server URL that does
// not parse, or a Config that cannot sign in (Fetch without RedirectURL,
// or settings go-sdk refuses).
func New(o Options) (*Authorizer, error) {
	u, err := url.Parse(o.URL)
	if err != nil {
		// url's error quotes the URL whole, query (an API key) included.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("server URL: %w", err)
	}
	cfg := o.Config
	a := &Authorizer{
		cfg:        cfg,
		key:        CanonicalResource(o.URL),
		target:     resourceURL(u),
		base:       cmp.Or[http.RoundTripper](o.Base, http.DefaultTransport),
		log:        cmp.Or(o.Logger, slog.Default()),
		goFn:       o.Go,
		scrub:      o.Scrub,
		now:        time.Now,
		newTimer:   realTimer,
		jitter:     func(max time.Duration) time.Duration { return rand.N(max + 1) },
		refreshing: make(chan struct{}, 1),
		changed:    make(chan struct{}),
		attempts:   map[string]int{},
	}
	a.ctx, a.cancel = context.WithCancel(cmp.Or[context.Context](o.Context, context.Background()))
	if a.goFn == nil {
		a.own = new(goroutines.Group)
		a.goFn = func(f func()) error {
			if !a.own.Go(f) {
				return ErrClosed
			}
			return nil
		}
	}
	if a.scrub == nil {
		a.scrub = func(s string) string { return s }
	}
	a.asTr = newOAuthTransport(a.base, a.target.Hostname())
	a.rec = &asRecorder{base: a.asTr, a: a}
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

// Transport is the round tripper the connection sends its requests with:
// Options.Base, with the token attached to the server's origin and the
// refusals that ask for sign-in answered (see oauthTransport). A sign-in
// that fails is reported as a *SignInError.
func (a *Authorizer) Transport() http.RoundTripper { return &oauthTransport{base: a.base, a: a} }

// Close ends what the Authorizer runs (the refresher, a sign-in waiting
// for the user) and waits for it, then waits a few seconds at most for
// the grant's last change to be stored: a refresh just before Close must
// not lose the rotated refresh token, but a keychain that waits for the
// user must not hold Close for ever. With Options.Go set, the caller
// waits for those goroutines itself before Close.
func (a *Authorizer) Close() {
	a.cancel()
	if a.own != nil {
		a.own.Stop()
	}
	a.settle(settleLimit)
	a.asTr.CloseIdleConnections()
}

// newHandler is go-sdk's handler for one sign-in. reuse is a registration
// of mcphub's to present instead of registering anew, bound to its
// issuer; nil for none. fetched is set once the user was sent to sign in.
func (a *Authorizer) newHandler(reuse *Grant, fetched *bool) (*auth.AuthorizationCodeHandler, error) {
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

// Start loads the stored grant and starts the background refresher, once;
// the connection calls it before its first request. A grant that cannot
// be read is ignored (a new sign-in replaces it); a store that fails is
// an error, with the secrets this connection knows masked.
func (a *Authorizer) Start() error {
	a.mu.Lock()
	started, gen := a.started, a.gen
	a.mu.Unlock()
	if started {
		return nil
	}
	g, err := a.loadStored()
	if err != nil {
		return a.scrubErr(err)
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
	a.goFn(func() { a.refreshLoop(a.ctx) })
	return nil
}

// loadStored reads the stored grant; a grant that cannot be read is
// ignored (a new sign-in replaces it).
func (a *Authorizer) loadStored() (*Grant, error) {
	if a.cfg.Store == nil {
		return nil, nil
	}
	data, err := a.cfg.Store.Load(a.key)
	if err != nil || data == nil {
		return nil, err
	}
	var g Grant
	if err := json.Unmarshal(data, &g); err != nil {
		a.log.Warn("ignoring a stored OAuth grant that cannot be read", "err", err)
		return nil, nil
	}
	return &g, nil
}

// setGrantLocked installs g as the current grant; a.mu is held.
func (a *Authorizer) setGrantLocked(g *Grant) {
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
func (a *Authorizer) setOwnLocked(g *Grant) {
	var prev time.Time
	if a.grant != nil {
		prev = a.grant.Saved
	}
	g.Saved = stamp(prev)
	a.setGrantLocked(g)
}

// current returns the grant and the generation of its token.
func (a *Authorizer) current() (*Grant, uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.grant, a.gen
}
