package oauth

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
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
	a    *Authorizer
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
		for _, c := range ParseChallenges(v) {
			if bearer == nil && strings.EqualFold(c.Scheme, "Bearer") {
				bearer = c.Params
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

// drain reads what is left of a small body and closes it, so that the
// connection can be reused.
func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// SignInError reports a request refused for want of sign-in (401, or 403
// insufficient_scope) when signing in failed: the refusal, and why the
// sign-in failed (secrets masked). A refusal the Authorizer does not try
// to answer (it cannot sign in, or the refusal had its sign-ins) is not an
// error: the response comes back as the server sent it.
type SignInError struct {
	// Status is the refusal's HTTP status.
	Status int
	// Bearer is the refusal's Bearer challenge; nil when it carried none
	// (a server of the 2025-03-26 revision may send none with a 401).
	Bearer *Challenge
	// Err is why signing in failed.
	Err error
}

func (e *SignInError) Error() string {
	return fmt.Sprintf("HTTP %d %s: signing in failed: %v", e.Status, http.StatusText(e.Status), e.Err)
}

// Unwrap is why signing in failed, for errors.Is and errors.As.
func (e *SignInError) Unwrap() error { return e.Err }

// challengeError is the SignInError for a sign-in that failed with err.
// Its request is named by the transport's own error around it.
func challengeError(ch *authChallenge, err error) *SignInError {
	e := &SignInError{Status: ch.status, Err: err}
	for _, v := range ch.values {
		for _, c := range ParseChallenges(v) {
			if strings.EqualFold(c.Scheme, "Bearer") {
				e.Bearer = &c
				return e
			}
		}
	}
	return e
}

// sameOrigin reports whether u is on the server's origin (scheme, host and
// port), the only one its token may be sent to.
func (a *Authorizer) sameOrigin(u *url.URL) bool {
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
