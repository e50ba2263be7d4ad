package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

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
	a.noteStatus(resp.StatusCode)
	ch := challengeOf(resp)
	if ch == nil || (req.Body != nil && req.Body != http.NoBody && req.GetBody == nil) {
		return resp, nil
	}
	retry, err := a.answer(ctx, resp, ch, gen)
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
	if err == nil {
		a.noteStatus(resp.StatusCode)
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
	// key tells distinct refusals apart: the status and the Bearer
	// challenge's error, scopes (in any order) and resource metadata; not
	// its free text, which may differ on every answer.
	key string
	// scopes are the scopes the challenge names.
	scopes []string
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
	var bearer map[string]string
	for _, v := range values {
		for _, c := range parseChallenges(v) {
			if bearer == nil && strings.EqualFold(c.scheme, "Bearer") {
				bearer = c.params
				if bearer == nil {
					bearer = map[string]string{}
				}
			}
		}
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized && (bearer != nil || len(values) == 0):
	case resp.StatusCode == http.StatusForbidden && bearer["error"] == "insufficient_scope":
	default:
		return nil
	}
	scopes := strings.Fields(bearer["scope"])
	slices.Sort(scopes)
	key := strings.Join([]string{fmt.Sprint(resp.StatusCode), bearer["error"], strings.Join(scopes, " "), bearer["resource_metadata"]}, "\n")
	return &authChallenge{status: resp.StatusCode, values: values, key: key, scopes: scopes}
}

// answer decides what a refusal calls for. retry says the request is to
// be sent again (resp is then drained and closed): the token changed since
// it went out, another process stored a newer one, or a sign-in succeeded.
// Otherwise resp is left for the caller, unless signing in failed: then it
// is closed and the error is an AuthRequiredError saying why.
func (a *authorizer) answer(ctx context.Context, resp *http.Response, ch *authChallenge, gen uint64) (bool, error) {
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

// countAttemptLocked counts a sign-in for the challenge key, unless it had
// its sign-ins; a.mu is held. Past maxAttemptKeys challenges the counts
// start over.
func (a *authorizer) countAttemptLocked(key string) bool {
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
func (a *authorizer) noteStatus(status int) {
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
func (a *authorizer) signIn(ctx context.Context, ch *authChallenge, gen uint64) error {
	res := a.flights.DoChan("sign-in", func() (any, error) {
		done := make(chan error, 1)
		if !a.c.handlers.Go(func() { done <- a.authorize(ch, gen) }) {
			return nil, ErrClosed
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
func (a *authorizer) authorize(ch *authChallenge, gen uint64) error {
	ctx := a.c.ctx
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
		a.c.log.Info("the server names another authorization server; registering with it")
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
	a.c.log.Warn("signing in failed", "err", err)
	return err
}

// authorizeWith runs one go-sdk sign-in presenting reuse (nil for none),
// and reports whether it got as far as sending the user to sign in.
func (a *authorizer) authorizeWith(ctx context.Context, ch *authChallenge, reuse *Grant) (fetched bool, err error) {
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

// asRecorder carries the sign-in's own requests (discovery, registration,
// token requests) and notes what go-sdk does not tell: the issuer of the
// authorization server, from metadata that states the issuer its URL was
// built from; the client it registered; the resource and the client
// authentication of the code exchange; and the secrets that went over
// the wire. It only reads.
type asRecorder struct {
	base http.RoundTripper
	a    *authorizer

	mu     sync.Mutex
	flight flightNotes // of the sign-in in progress, or the last one
}

type flightNotes struct {
	issuer, tokenURL string
	clientID         string // registered dynamically
	secretExpires    int64
	resource         string // sent with the code exchange
	style            oauth2.AuthStyle
	styled           bool
}

func (r *asRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var exchange, registration bool
	var resource string
	if req.Method == http.MethodPost {
		switch mediaType(req.Header.Get("Content-Type")) {
		case "application/x-www-form-urlencoded":
			req = publicClient(req)
			q := r.noteForm(req)
			exchange, resource = q.Get("grant_type") == "authorization_code", q.Get("resource")
		case "application/json":
			registration = true
		}
	}
	resp, err := r.base.RoundTrip(req)
	if err != nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp, err
	}
	switch {
	case req.Method == http.MethodGet:
		var m struct {
			Issuer string `json:"issuer"`
			Token  string `json:"token_endpoint"`
		}
		if iss := metadataIssuer(req.URL); iss != "" && peekJSON(resp, &m) && m.Issuer != "" && issuersEqual(m.Issuer, iss) {
			r.mu.Lock()
			r.flight.issuer, r.flight.tokenURL = m.Issuer, m.Token
			r.mu.Unlock()
		}
	case registration:
		var m struct {
			ClientID      string `json:"client_id"`
			ClientSecret  string `json:"client_secret"`
			SecretExpires int64  `json:"client_secret_expires_at"`
		}
		if peekJSON(resp, &m) && m.ClientID != "" {
			r.a.addSecrets(m.ClientSecret)
			r.mu.Lock()
			r.flight.clientID, r.flight.secretExpires = m.ClientID, m.SecretExpires
			r.mu.Unlock()
		}
	case exchange:
		_, _, basic := req.BasicAuth()
		r.mu.Lock()
		r.flight.resource, r.flight.styled = resource, true
		r.flight.style = oauth2.AuthStyleInParams
		if basic {
			r.flight.style = oauth2.AuthStyleInHeader
		}
		r.mu.Unlock()
	}
	return resp, nil
}

func mediaType(v string) string {
	t, _, _ := mime.ParseMediaType(v)
	return t
}

// metadataIssuer is the issuer an authorization server metadata URL was
// built from (RFC 8414 §3.1 path insertion, OpenID Connect's path
// appending); "" for a URL that is none of these.
func metadataIssuer(u *url.URL) string {
	origin := u.Scheme + "://" + u.Host
	for _, wk := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		if rest, ok := strings.CutPrefix(u.Path, wk); ok && (rest == "" || rest[0] == '/') {
			return origin + rest
		}
	}
	if rest, ok := strings.CutSuffix(u.Path, "/.well-known/openid-configuration"); ok {
		return origin + rest
	}
	return ""
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

// noteForm remembers the secrets of a token request and returns its form.
func (r *asRecorder) noteForm(req *http.Request) url.Values {
	if _, pw, ok := req.BasicAuth(); ok {
		if p, err := url.QueryUnescape(pw); err == nil {
			pw = p
		}
		r.a.addSecrets(pw)
	}
	if req.GetBody == nil {
		return nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil
	}
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, maxASBody))
	if err != nil {
		return nil
	}
	q, err := url.ParseQuery(string(b))
	if err != nil {
		return nil
	}
	for _, k := range []string{"code", "code_verifier", "refresh_token", "client_secret"} {
		r.a.addSecrets(q.Get(k))
	}
	return q
}

// publicClient rewrites a token request that authenticates a client
// without a secret by HTTP Basic with an empty password, as x/oauth2 does
// when go-sdk leaves the style to it (a pre-registered or reused public
// client): a public client does not authenticate (token endpoint auth
// method "none", RFC 6749 §2.3.1), it names itself with client_id in the
// body, and an authorization server that takes only "none" refuses the
// Basic header. Any other request is returned as it is.
func publicClient(req *http.Request) *http.Request {
	user, pw, ok := req.BasicAuth()
	if !ok || pw != "" || req.GetBody == nil {
		return req
	}
	body, err := req.GetBody()
	if err != nil {
		return req
	}
	b, err := io.ReadAll(io.LimitReader(body, maxASBody))
	body.Close()
	if err != nil {
		return req
	}
	q, err := url.ParseQuery(string(b))
	if err != nil {
		return req
	}
	if id, err := url.QueryUnescape(user); err == nil {
		user = id
	}
	if q.Get("client_id") == "" {
		q.Set("client_id", user)
	}
	form := q.Encode()
	out := req.Clone(req.Context())
	out.Header.Del("Authorization")
	out.Body, out.ContentLength = io.NopCloser(strings.NewReader(form)), int64(len(form))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(form)), nil }
	return out
}

// beginFlight starts noting one sign-in.
func (r *asRecorder) beginFlight() {
	r.mu.Lock()
	r.flight = flightNotes{}
	r.mu.Unlock()
}

// flightIssuer is the validated issuer of the sign-in in progress, "" while
// none is known.
func (r *asRecorder) flightIssuer() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.flight.issuer
}

func (r *asRecorder) notes() flightNotes {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.flight
}

// newOAuthTransport is the transport of the requests to authorization
// servers, whose addresses the MCP server chooses: proxies as the
// connection's (from the environment), and a dialer that refuses
// link-local (cloud metadata), multicast and unspecified addresses, and
// loopback or private ones unless the MCP server itself is on such an
// address. A proxy is dialled as configured.
func newOAuthTransport(conn http.RoundTripper, serverHost string) *http.Transport {
	g := &dialGuard{server: serverHost, proxies: map[string]bool{}}
	t := &http.Transport{
		DialContext:           g.dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	proxy := http.ProxyFromEnvironment
	if ct, ok := conn.(*http.Transport); ok {
		proxy = ct.Proxy
		if ct.TLSClientConfig != nil {
			t.TLSClientConfig = ct.TLSClientConfig.Clone()
		}
	}
	if proxy != nil {
		t.Proxy = func(req *http.Request) (*url.URL, error) {
			u, err := proxy(req)
			if u != nil {
				g.allowProxy(u)
			}
			return u, err
		}
	}
	return t
}

// dialGuard is the address check of newOAuthTransport.
type dialGuard struct {
	server string // the MCP server's host

	mu      sync.Mutex
	proxies map[string]bool // host:port of the proxies in use
}

func (g *dialGuard) allowProxy(u *url.URL) {
	g.mu.Lock()
	g.proxies[HostPort(u)] = true
	g.mu.Unlock()
}

// HostPort is the host:port a URL (a server's, or a proxy's) is dialled
// at: its port, else its scheme's default (https 443, socks5 1080, else 80).
func HostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "socks5", "socks5h":
			port = "1080"
		default:
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

func (g *dialGuard) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	g.mu.Lock()
	proxy := g.proxies[addr]
	g.mu.Unlock()
	if !proxy {
		d.ControlContext = g.control
	}
	return d.DialContext(ctx, network, addr)
}

// control runs before each connection is made, with the address it is
// made to (after name resolution).
func (g *dialGuard) control(ctx context.Context, _, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		host = address
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("authorization server address: %w", err)
	}
	ip = ip.Unmap()
	var ok bool
	switch {
	case ip.IsLoopback():
		ok = g.serverOn(ctx, netip.Addr.IsLoopback)
	case isPrivateIP(ip):
		ok = g.serverOn(ctx, isPrivateIP)
	default:
		ok = ip.IsGlobalUnicast()
	}
	if !ok {
		return fmt.Errorf("refusing to reach an authorization server at %s: not a public address", ip)
	}
	return nil
}

// cgnat is the shared address space of RFC 6598, private in all but name.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

func isPrivateIP(ip netip.Addr) bool { return ip.IsPrivate() || cgnat.Contains(ip) }

// serverOn reports whether the MCP server's host is an address of the
// kind is tells, or a name that resolves to one.
func (g *dialGuard) serverOn(ctx context.Context, is func(netip.Addr) bool) bool {
	h := strings.ToLower(g.server)
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return is(netip.IPv6Loopback())
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		return is(ip.Unmap())
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", h)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(ips, func(ip netip.Addr) bool { return is(ip.Unmap()) })
}
