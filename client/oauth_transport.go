package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"golang.org/x/oauth2"
)

// oauthTransport carries every request of a connection that signs in with
// OAuth. A request to the server's origin gets the access token (unless
// the configuration sets an Authorization header of its own, which wins);
// a request anywhere else (a redirect, say) never does. A refusal that
// asks for sign-in (401, or 403 insufficient_scope) is answered, when the
// request can be sent again, by adopting a newer token or by signing in,
// and the request is sent once more; otherwise the refusal is returned as
// it came, for the transports to report.
type oauthTransport struct {
	base http.RoundTripper
	a    *authorizer
}

func (t *oauthTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	a := t.a
	if req.Header.Get("Authorization") != "" || !a.sameOrigin(req.URL) {
		return t.base.RoundTrip(req)
	}
	ctx := req.Context()
	tok, gen, err := a.bearer(ctx)
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	resp, err := t.base.RoundTrip(withBearer(req, req.Body, tok))
	if err != nil {
		return nil, err
	}
	ch := challengeOf(resp)
	if ch == nil || (req.Body != nil && req.Body != http.NoBody && req.GetBody == nil) {
		return resp, nil
	}
	retry, err := a.answer(ctx, resp, ch, tok, gen)
	if err != nil {
		return nil, err
	}
	if !retry {
		return resp, nil
	}
	var body io.ReadCloser
	if req.GetBody != nil {
		if body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	if tok, _, err = a.bearer(ctx); err != nil {
		if body != nil {
			body.Close()
		}
		return nil, err
	}
	resp, err = t.base.RoundTrip(withBearer(req, body, tok))
	if err == nil && resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		a.resetAttempts()
	}
	return resp, err
}

// withBearer is a copy of req with body, carrying tok when there is one.
func withBearer(req *http.Request, body io.ReadCloser, tok string) *http.Request {
	r := req.Clone(req.Context())
	r.Body = body
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	return r
}

// authChallenge is a refusal that asks for (more) authorization.
type authChallenge struct {
	status int
	values []string // the WWW-Authenticate headers
	key    string   // tells distinct challenges apart
}

// challengeOf returns the challenge of a 401 that carries a Bearer
// challenge or none at all (a server of the 2025-03-26 revision may send
// none), or of a 403 whose Bearer challenge says insufficient_scope; nil
// for any other answer.
func challengeOf(resp *http.Response) *authChallenge {
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return nil
	}
	values := resp.Header.Values("WWW-Authenticate")
	bearer, scope := false, false
	for _, v := range values {
		for _, c := range parseChallenges(v) {
			if strings.EqualFold(c.scheme, "Bearer") {
				bearer = true
				scope = scope || c.params["error"] == "insufficient_scope"
			}
		}
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized && (bearer || len(values) == 0):
	case resp.StatusCode == http.StatusForbidden && scope:
	default:
		return nil
	}
	return &authChallenge{status: resp.StatusCode, values: values, key: fmt.Sprint(resp.StatusCode, "\n", strings.Join(values, "\n"))}
}

// answer decides what a refusal calls for. retry says the request is to
// be sent again (resp is then drained and closed): the token changed since
// it went out, another process stored a newer one, or a sign-in succeeded.
// Otherwise resp is left for the caller, unless signing in failed: then it
// is closed and the error is an AuthRequiredError saying why.
func (a *authorizer) answer(ctx context.Context, resp *http.Response, ch *authChallenge, sent string, gen uint64) (bool, error) {
	retry := a.generation() != gen ||
		a.adoptStored(func(s *Grant) bool { return s.Token.AccessToken != sent })
	if !retry && (a.h == nil || a.attemptsFor(ch.key) >= maxAuthorize) {
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

// drain reads what is left of a small body and closes it, so that the
// connection can be reused.
func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// challengeError is the AuthRequiredError for a sign-in that failed with
// err. Its request is named by the transport's own error around it.
func challengeError(ch *authChallenge, err error) *AuthRequiredError {
	e := &AuthRequiredError{Status: ch.status, Err: err}
	for _, v := range ch.values {
		for _, c := range parseChallenges(v) {
			if strings.EqualFold(c.scheme, "Bearer") {
				e.Scheme, e.Realm, e.ResourceMetadata = c.scheme, c.params["realm"], c.params["resource_metadata"]
				e.Scope, e.ErrorCode = c.params["scope"], c.params["error"]
				return e
			}
		}
	}
	return e
}

func (a *authorizer) attemptsFor(key string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.attempts[key]
}

// resetAttempts gives every challenge its sign-ins back: a request went
// through.
func (a *authorizer) resetAttempts() {
	a.mu.Lock()
	clear(a.attempts)
	a.mu.Unlock()
}

// signIn runs one sign-in for ch, shared by every request refused with the
// same challenge meanwhile. The sign-in lives as long as the connection
// (Close ends it and waits for it), not as the request that started it;
// each request waits for it within its own context.
func (a *authorizer) signIn(ctx context.Context, ch *authChallenge, gen uint64) error {
	res := make(chan error, 1)
	if !a.c.handlers.Go(func() {
		_, err, _ := a.flights.Do(ch.key, func() (any, error) { return nil, a.authorize(ch, gen) })
		res <- err
	}) {
		return ErrClosed
	}
	select {
	case err := <-res:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// authorize runs go-sdk's sign-in for ch, one at a time, unless the token
// changed since gen (another sign-in answered the same need) or ch has had
// its sign-ins.
func (a *authorizer) authorize(ch *authChallenge, gen uint64) error {
	ctx := a.c.ctx
	select {
	case a.signingIn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-a.signingIn }()
	a.mu.Lock()
	if a.gen != gen {
		a.mu.Unlock()
		return nil
	}
	if a.attempts[ch.key] >= maxAuthorize {
		a.mu.Unlock()
		return fmt.Errorf("gave up after %d sign-ins for the same refusal", maxAuthorize)
	}
	a.attempts[ch.key]++
	a.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.target.String(), nil)
	if err != nil {
		return err
	}
	resp := &http.Response{StatusCode: ch.status, Header: http.Header{}, Body: http.NoBody, Request: req}
	for _, v := range ch.values {
		resp.Header.Add("WWW-Authenticate", v)
	}
	a.rec.beginFlight()
	err = a.h.Authorize(ctx, req, resp)
	if err == nil {
		return nil
	}
	if a.rec.flightReplayed() {
		a.forgetRegistration()
	}
	err = a.scrubErr(err)
	a.c.log.Warn("signing in failed", "err", err)
	return err
}

// asRecorder carries the sign-in's own requests (discovery, registration,
// token requests) and learns from them what go-sdk does not tell: the
// issuer behind each token endpoint, the client authentication a token
// endpoint accepted, which clients were registered dynamically, and the
// secrets that went over the wire. It also answers a registration request
// with the stored registration, when that was made with the same
// authorization server for the same redirect, so that signing in again
// does not register another client.
type asRecorder struct {
	base http.RoundTripper
	a    *authorizer

	mu            sync.Mutex
	issuerByToken map[string]string // token endpoint → issuer
	issuerByReg   map[string]string // registration endpoint → issuer
	styleByToken  map[string]oauth2.AuthStyle
	dynamic       map[string]bool // client ids registered dynamically
	lastIssuer    string          // issuer of the metadata seen in this sign-in
	replayed      bool            // this sign-in reused the stored registration
}

// maxASBody bounds what is read of an authorization server's answer.
const maxASBody = 1 << 20

func (r *asRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	form := req.Method == http.MethodPost && mediaType(req.Header.Get("Content-Type")) == "application/x-www-form-urlencoded"
	reg := req.Method == http.MethodPost && r.registrationIssuer(req.URL.String()) != ""
	if reg {
		if resp := r.replay(req); resp != nil {
			return resp, nil
		}
	}
	if form {
		r.noteForm(req)
	}
	resp, err := r.base.RoundTrip(req)
	if err != nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp, err
	}
	switch {
	case req.Method == http.MethodGet && isASMetadata(req.URL.Path):
		var m struct {
			Issuer       string `json:"issuer"`
			Token        string `json:"token_endpoint"`
			Registration string `json:"registration_endpoint"`
		}
		if peekJSON(resp, &m) && m.Issuer != "" {
			r.mu.Lock()
			r.lastIssuer = m.Issuer
			if m.Token != "" {
				r.issuerByToken[m.Token] = m.Issuer
			}
			if m.Registration != "" {
				r.issuerByReg[m.Registration] = m.Issuer
			}
			r.mu.Unlock()
		}
	case reg:
		var m struct {
			ClientID     string `json:"client_id"`
			ClientSecret string `json:"client_secret"`
		}
		if peekJSON(resp, &m) && m.ClientID != "" {
			r.mu.Lock()
			r.dynamic[m.ClientID] = true
			r.mu.Unlock()
			r.a.addSecrets(m.ClientSecret)
		}
	case form:
		style := oauth2.AuthStyleInParams
		if _, _, ok := req.BasicAuth(); ok {
			style = oauth2.AuthStyleInHeader
		}
		r.mu.Lock()
		r.styleByToken[req.URL.String()] = style
		r.mu.Unlock()
	}
	return resp, nil
}

func mediaType(v string) string {
	t, _, _ := mime.ParseMediaType(v)
	return t
}

func isASMetadata(path string) bool {
	return strings.Contains(path, "/.well-known/oauth-authorization-server") || strings.Contains(path, "/.well-known/openid-configuration")
}

// peekJSON decodes the start of resp's body into v and puts the body back
// as it was.
func peekJSON(resp *http.Response, v any) bool {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxASBody))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), resp.Body), resp.Body}
	return err == nil && json.Unmarshal(b, v) == nil
}

// noteForm remembers the secrets of a token request.
func (r *asRecorder) noteForm(req *http.Request) {
	if _, pw, ok := req.BasicAuth(); ok {
		if p, err := url.QueryUnescape(pw); err == nil {
			pw = p
		}
		r.a.addSecrets(pw)
	}
	if req.GetBody == nil {
		return
	}
	body, err := req.GetBody()
	if err != nil {
		return
	}
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, maxASBody))
	if err != nil {
		return
	}
	q, err := url.ParseQuery(string(b))
	if err != nil {
		return
	}
	for _, k := range []string{"code", "code_verifier", "refresh_token", "client_secret"} {
		r.a.addSecrets(q.Get(k))
	}
}

// registrationIssuer is the issuer whose registration endpoint u is, ""
// when it is none known. Without metadata (the 2025-03-26 fallback) the
// endpoint is /register on the server's origin, whose issuer is the
// origin.
func (r *asRecorder) registrationIssuer(u string) string {
	r.mu.Lock()
	iss := r.issuerByReg[u]
	r.mu.Unlock()
	if iss != "" {
		return iss
	}
	origin := (&url.URL{Scheme: r.a.target.Scheme, Host: r.a.target.Host}).String()
	if u == origin+"/register" {
		return origin
	}
	return ""
}

// replay answers a registration request with the stored registration when
// it may be reused; nil otherwise.
func (r *asRecorder) replay(req *http.Request) *http.Response {
	g := r.a.replayable(r.registrationIssuer(req.URL.String()))
	if g == nil {
		return nil
	}
	method := "none"
	switch {
	case g.AuthStyle == oauth2.AuthStyleInHeader:
		method = "client_secret_basic"
	case g.ClientSecret != "":
		method = "client_secret_post"
	}
	body, err := json.Marshal(map[string]any{
		"client_id": g.ClientID, "client_secret": g.ClientSecret, "token_endpoint_auth_method": method,
		"redirect_uris": []string{g.RedirectURL},
	})
	if err != nil {
		return nil
	}
	if req.Body != nil {
		req.Body.Close()
	}
	r.mu.Lock()
	r.replayed = true
	r.dynamic[g.ClientID] = true
	r.mu.Unlock()
	r.a.c.log.Debug("reusing the stored client registration", "issuer", g.Issuer)
	return &http.Response{
		Status: "201 Created", StatusCode: http.StatusCreated, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"application/json"}},
		Body:    io.NopCloser(bytes.NewReader(body)),
		Request: req, ContentLength: int64(len(body)),
	}
}

// beginFlight starts recording one sign-in.
func (r *asRecorder) beginFlight() {
	r.mu.Lock()
	r.lastIssuer, r.replayed = "", false
	r.mu.Unlock()
}

func (r *asRecorder) flightIssuer() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastIssuer
}

func (r *asRecorder) flightReplayed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.replayed
}

// issuerFor is the issuer behind a token endpoint; without metadata (the
// 2025-03-26 fallback) the token endpoint is /token on the issuer.
func (r *asRecorder) issuerFor(tokenURL string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if iss, ok := r.issuerByToken[tokenURL]; ok {
		return iss
	}
	return strings.TrimSuffix(tokenURL, "/token")
}

// usedStyle is the client authentication a token endpoint last accepted.
func (r *asRecorder) usedStyle(tokenURL string) (oauth2.AuthStyle, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.styleByToken[tokenURL]
	return s, ok
}

func (r *asRecorder) isDynamic(clientID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dynamic[clientID]
}
