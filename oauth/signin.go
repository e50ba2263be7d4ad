package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// answer decides what a refusal calls for. retry says the request is to
// be sent again (resp is then drained and closed): the token changed since
// it went out, another process stored a newer one, or a sign-in succeeded.
// Otherwise resp is left for the caller, unless signing in failed: then it
// is closed and the error is a SignInError saying why.
func (a *Authorizer) answer(ctx context.Context, resp *http.Response, ch *authChallenge, gen uint64) (bool, error) {
	retry := a.newerToken(gen)
	if !retry && a.cfg.Fetch == nil && ch.status == http.StatusForbidden {
		a.want(ch.scopes)
	}
	if !retry && (a.cfg.Fetch == nil || a.attemptsFor(ch.key) >= maxAuthorize) {
		return false, nil
	}
	drain(resp)
	if retry {
		return true, nil
	}
	if err := a.signIn(ctx, ch, gen); err != nil {
		return false, challengeError(ch, err)
	}
	return true, nil
}

func (a *Authorizer) attemptsFor(key string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.attempts[key]
}

// countAttemptLocked counts a sign-in for the challenge key, unless it had
// its sign-ins; a.mu is held. Past maxAttemptKeys challenges the counts
// start over.
func (a *Authorizer) countAttemptLocked(key string) bool {
	n, ok := a.attempts[key]
	if n >= maxAuthorize {
		return false
	}
	if !ok && len(a.attempts) >= maxAttemptKeys {
		clear(a.attempts)
	}
	a.attempts[key]++
	return true
}

// noteStatus gives every challenge its sign-ins back once the server
// answers a request with success.
func (a *Authorizer) noteStatus(status int) {
	if status < 200 || status > 299 {
		return
	}
	a.mu.Lock()
	if len(a.attempts) > 0 {
		clear(a.attempts)
	}
	a.mu.Unlock()
}

// signIn runs one sign-in, shared by every request refused meanwhile,
// whatever its challenge: the first to finish answers them all. The
// sign-in lives as long as the connection (Close ends it and waits for
// it), not as the request that started it; each request waits for it
// within its own context.
func (a *Authorizer) signIn(ctx context.Context, ch *authChallenge, gen uint64) error {
	res := a.flights.DoChan("sign-in", func() (any, error) {
		done := make(chan error, 1)
		if err := a.goFn(func() { done <- a.authorize(ch, gen) }); err != nil {
			return nil, err
		}
		return nil, <-done
	})
	select {
	case r := <-res:
		return r.Err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// authorize runs go-sdk's sign-in for ch, unless the token changed since
// gen (another sign-in answered the same need) or ch has had its
// sign-ins. The stored registration is presented when it may be; when
// go-sdk refuses to present it (the server now names another
// authorization server), the sign-in registers with that one instead.
func (a *Authorizer) authorize(ch *authChallenge, gen uint64) error {
	ctx := a.ctx
	a.mu.Lock()
	if a.gen != gen {
		a.mu.Unlock()
		return nil
	}
	if !a.countAttemptLocked(ch.key) {
		a.mu.Unlock()
		return fmt.Errorf("gave up after %d sign-ins for the same refusal", maxAuthorize)
	}
	a.stepUp = ch.status == http.StatusForbidden
	reuse := a.reusableLocked()
	a.mu.Unlock()
	fetched, err := a.authorizeWith(ctx, ch, reuse)
	if err != nil && reuse != nil && !fetched && ctx.Err() == nil && !issuersEqual(a.rec.flightIssuer(), reuse.Issuer) {
		a.log.Info("the server names another authorization server; registering with it")
		reuse = nil
		fetched, err = a.authorizeWith(ctx, ch, nil)
	}
	if err == nil {
		return nil
	}
	if reuse != nil && fetched && clientRefused(err) {
		a.forgetRegistration()
	}
	err = a.scrubErr(err)
	a.log.Warn("signing in failed", "err", err)
	return err
}

// authorizeWith runs one go-sdk sign-in presenting reuse (nil for none),
// and reports whether it got as far as sending the user to sign in.
func (a *Authorizer) authorizeWith(ctx context.Context, ch *authChallenge, reuse *Grant) (fetched bool, err error) {
	h, err := a.newHandler(reuse, &fetched)
	if err != nil {
		return false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.target.String(), nil)
	if err != nil {
		return false, err
	}
	resp := &http.Response{StatusCode: ch.status, Header: http.Header{}, Body: http.NoBody, Request: req}
	for _, v := range ch.values {
		resp.Header.Add("WWW-Authenticate", v)
	}
	a.rec.beginFlight()
	err = h.Authorize(ctx, req, resp)
	return fetched, err
}

// clientRefused reports whether the token endpoint refused a code
// exchange: the registration it presented is not to be presented again.
func clientRefused(err error) bool {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return false
	}
	if re.ErrorCode == "invalid_client" || re.ErrorCode == "unauthorized_client" {
		return true
	}
	return re.Response != nil && re.Response.StatusCode >= 400 && re.Response.StatusCode < 500
}

func issuersEqual(a, b string) bool { return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/") }

// signedIn is go-sdk's hook after a code exchange: the new grant is
// installed, and stored before the sign-in returns. reuse is the stored
// registration the sign-in presented, nil when none.
func (a *Authorizer) signedIn(oc *oauth2.Config, tok *oauth2.Token, reuse *Grant) {
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
	case <-a.ctx.Done():
	}
	a.log.Info("signed in", "issuer", g.Issuer)
}

// grantSource serves the connection's current token to go-sdk.
type grantSource struct{ a *Authorizer }

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
func (a *Authorizer) scopeFilter(discovered []string) []string {
	a.mu.Lock()
	stepUp := a.stepUp
	a.mu.Unlock()
	if want := a.cfg.Scopes; len(want) > 0 {
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
func (a *Authorizer) want(scopes []string) {
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
	a.log.Warn("the server wants more scopes for a request; the next sign-in asks for them", "scopes", scopes)
}

// reusableLocked returns the stored registration a sign-in presents
// instead of registering anew, nil for none: a client mcphub registered
// for this redirect, with an authorization server whose issuer is known,
// whose secret (if any) has not expired. A public one authenticates as
// "none" (see publicClient). a.mu is held.
func (a *Authorizer) reusableLocked() *Grant {
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
func (a *Authorizer) forgetRegistration() {
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
