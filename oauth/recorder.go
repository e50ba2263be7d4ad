package oauth

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"golang.org/x/oauth2"
)

// asRecorder carries the sign-in's own requests (discovery, registration,
// token requests) and notes what go-sdk does not tell: the issuer of the
// authorization server, from metadata that states the issuer its URL was
// built from; the client it registered; the resource and the client
// authentication of the code exchange; and the secrets that went over
// the wire. It only reads.
type asRecorder struct {
	base http.RoundTripper
	a    *Authorizer

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
