package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// expired reports whether t is past, or within refreshMargin of, its
// expiry.
func (a *Authorizer) expired(t *oauth2.Token) bool {
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
func (a *Authorizer) bearer(ctx context.Context) (string, uint64, error) {
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
			a.log.Debug("could not refresh the OAuth token; using it until it expires", "err", err)
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
// is held for the request to the authorization server, and, with a store
// that locks grants (GrantLocker), while the lock is waited for and the
// shared grant read; never while this process's grant is written.
func (a *Authorizer) refresh(ctx context.Context, old *oauth2.Token) error {
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
	// A store several processes share (a team hub's replicas) locks the
	// grant: one refreshes while the others wait, then take the token it
	// stored. With a rotating refresh token, two refreshing at once would
	// have one of them refused.
	var saved <-chan struct{}
	if l, ok := a.cfg.Store.(GrantLocker); ok {
		unlock, err := l.LockGrant(ctx, a.key)
		if err != nil {
			return fmt.Errorf("refreshing the access token: %w", a.scrubErr(err))
		}
		defer func() {
			// Held until the new token is stored, so the next holder
			// reads it: whatever became of the request that refreshed
			// (a client that went away), within settleLimit.
			if saved != nil {
				t := time.NewTimer(settleLimit)
				select {
				case <-saved:
				case <-t.C:
				}
				t.Stop()
			}
			unlock()
		}()
		if done, err := a.sharedChanged(gen); done || err != nil {
			return err // another process refreshed it, or signed it out, meanwhile
		}
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
			saved = a.persist()
			a.log.Debug("refreshed the OAuth access token", "expires", tok.Expiry)
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
	a.log.Warn("the OAuth token was dropped; the server needs a new sign-in", "err", clean)
	if a.cfg.OnRefreshFailed != nil {
		a.cfg.OnRefreshFailed(rerr)
	}
	return rerr
}

// sharedChanged reads, under the grant's lock, what other processes sharing
// the store did while this one waited: a newer token is taken (done); a
// grant gone from the store was signed out (mcphub logout), and is dropped
// here too rather than written back; a grant that cannot be read (the store
// is down, or it is sealed under a key this process lacks) leaves the
// token as it is and the refresh for later: refreshing with a refresh
// token another process may have rotated, and writing the refusal over
// the shared grant, would sign every process out.
func (a *Authorizer) sharedChanged(gen uint64) (done bool, err error) {
	s, err := a.loadStored()
	if err != nil {
		err = a.scrubErr(err)
		a.log.Warn("could not read the shared OAuth grant; not refreshing it now", "err", err)
		return false, fmt.Errorf("refreshing the access token: reading the shared grant: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.gen != gen {
		return true, nil
	}
	if s == nil {
		a.setGrantLocked(nil)
		a.log.Warn("the OAuth grant was signed out elsewhere; the server needs a new sign-in")
		return true, fmt.Errorf("%w: it was signed out", errGrantRejected)
	}
	var cur time.Time
	if a.grant != nil {
		cur = a.grant.Saved
	}
	if !s.Saved.After(cur) {
		return false, nil
	}
	a.setGrantLocked(s)
	if !s.hasToken() {
		// Another process's refresh was refused: the refresh token this
		// one holds is the same, and would be refused too.
		return true, fmt.Errorf("%w: another process's refresh was refused", errGrantRejected)
	}
	return true, nil
}

// requestRefresh sends g's refresh token to the token endpoint with the
// resource it was granted for (RFC 8707), the client authenticating as g
// says. A refusal is an *oauth2.RetrieveError.
func (a *Authorizer) requestRefresh(ctx context.Context, g *Grant) (*oauth2.Token, error) {
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
func (a *Authorizer) newerToken(gen uint64) bool {
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
		a.log.Debug("could not read the stored OAuth grant", "err", a.scrubErr(err))
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
	a.log.Info("using the OAuth grant stored by another sign-in")
	return true
}

// refreshDelay is how long to wait from now before refreshing a token
// obtained at from that expires at exp: at 80% of its life, at least
// marginFor(life) before expiry, but not before half its life, less a
// little jitter.
func (a *Authorizer) refreshDelay(now, from, exp time.Time) time.Duration {
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
func (a *Authorizer) refreshLoop(ctx context.Context) {
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
				a.log.Warn("gave up refreshing the OAuth token before it expires; the next request tries again")
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
			a.log.Warn("could not refresh the OAuth token; retrying", "err", err)
			retry = min(max(2*retry, time.Second), refreshRetryMax)
		}
	}
}
