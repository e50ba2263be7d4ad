package client

import (
	"cmp"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// maxIdlePerUpstream is how many kept-alive connections one upstream's pool
// holds: one per call in flight for as many concurrent calls as a busy hub
// sends one server, so calls reuse connections instead of dialling. Beyond
// it, a connection closes once its call is done.
const maxIdlePerUpstream = 64

// newTransport returns the HTTP transport of one upstream connection:
// proxies from the environment (HTTP_PROXY, HTTPS_PROXY, NO_PROXY), HTTP/2
// where a TLS server offers it, a kept-alive pool sized for concurrent
// calls, and no response-header timeout, since a tools/call may take
// minutes before its headers (SSE streams have idle timeouts instead).
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          maxIdlePerUpstream,
		MaxIdleConnsPerHost:   maxIdlePerUpstream,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// do sends an upstream request. net/http's errors repeat the whole URL,
// query included, where some servers take an API key; the URL is dropped
// here, and callers name it redacted. They may also quote what the server
// sent (a malformed status line, say), so they are scrubbed.
func (c *Conn) do(req *http.Request) (*http.Response, error) {
	resp, err := c.hc.Do(req)
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return resp, c.scrubErr(err)
}

// eofWatch notes whether a reader has reached its end.
type eofWatch struct {
	r   io.Reader
	eof bool
}

func (w *eofWatch) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if err == io.EOF {
		w.eof = true
	}
	return n, err
}

// setHeaders adds the registry's headers to an upstream request.
func (c *Conn) setHeaders(h http.Header) {
	for k, v := range c.cfg.Headers {
		h.Set(k, v)
	}
}

// bodyShow is how much of an upstream's error body an HTTPError shows.
const bodyShow = 512

// bodyExcerpt reads the start of an error body for the user to see,
// redacted of secrets. More is read than shown, so that a secret the
// reading cut is masked whole.
func (c *Conn) bodyExcerpt(r io.Reader) string {
	const max = 4 << 10
	b, _ := io.ReadAll(io.LimitReader(r, max+1))
	cut := len(b) > max
	if cut {
		b = b[:max]
	}
	return c.excerpt(strings.TrimSpace(string(b)), cut, bodyShow)
}

// backoff computes reconnect delays: the server's retry value when it sent
// one, used exactly as the spec demands; otherwise exponential from base,
// doubled per attempt, capped, with jitter so many clients do not reconnect
// in step.
type backoff struct {
	base, max time.Duration
	attempt   int
	server    time.Duration // the last retry: value, 0 if none
}

func (b *backoff) next() time.Duration {
	b.attempt++
	if b.server > 0 {
		return b.server
	}
	d := b.base << min(b.attempt-1, 16)
	if d > b.max || d <= 0 {
		d = b.max
	}
	return d/2 + rand.N(d/2+1)
}

// progress resets the attempt budget: the stream delivered something.
func (b *backoff) progress() { b.attempt = 0 }

// sleepCtx waits for d or until ctx ends, reporting whether the full wait
// happened.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// idleReader ends a stream that has been silent for too long: every Read
// that returns bytes pushes the deadline back; when it passes, cancel is
// called, which aborts the request and so the pending Read.
type idleReader struct {
	r     io.Reader
	timer *time.Timer
	idle  time.Duration
}

func (i *idleReader) Read(p []byte) (int, error) {
	n, err := i.r.Read(p)
	if n > 0 {
		i.timer.Reset(i.idle)
	}
	return n, err
}

// doneState is the closed-once "transport can carry nothing more" signal
// shared by the HTTP transports.
type doneState struct {
	once sync.Once
	ch   chan struct{}
	mu   sync.Mutex
	e    error
}

func newDoneState() doneState { return doneState{ch: make(chan struct{})} }

func (d *doneState) finish(err error) {
	d.once.Do(func() {
		d.mu.Lock()
		d.e = err
		d.mu.Unlock()
		close(d.ch)
	})
}

func (d *doneState) done() <-chan struct{} { return d.ch }

func (d *doneState) err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.e
}

// authRequired returns the AuthRequiredError for a 401 answer that carries
// a Bearer challenge, and nil for any other answer. method and url
// (redacted) name the request.
func authRequired(resp *http.Response, method, url string) *AuthRequiredError {
	if resp.StatusCode != http.StatusUnauthorized {
		return nil
	}
	for _, v := range resp.Header.Values("WWW-Authenticate") {
		for _, ch := range parseChallenges(v) {
			if strings.EqualFold(ch.scheme, "Bearer") {
				return &AuthRequiredError{
					Method: method, URL: url, Status: resp.StatusCode, Scheme: ch.scheme,
					Realm: ch.params["realm"], ResourceMetadata: ch.params["resource_metadata"],
					Scope: ch.params["scope"], ErrorCode: ch.params["error"],
				}
			}
		}
	}
	return nil
}

// insufficientScope returns the scope a 403's Bearer challenge says the
// token lacks (error="insufficient_scope"), "" for any other answer; "*"
// when the challenge names none.
func insufficientScope(resp *http.Response) string {
	if resp.StatusCode != http.StatusForbidden {
		return ""
	}
	for _, v := range resp.Header.Values("WWW-Authenticate") {
		for _, ch := range parseChallenges(v) {
			if strings.EqualFold(ch.scheme, "Bearer") && ch.params["error"] == "insufficient_scope" {
				return cmp.Or(ch.params["scope"], "*")
			}
		}
	}
	return ""
}

// challenge is one authentication challenge of a WWW-Authenticate header:
// its scheme and its parameters, names in lower case.
type challenge struct {
	scheme string
	params map[string]string
}

// parseChallenges reads a WWW-Authenticate value (RFC 9110 §11.6.1): one or
// more comma-separated challenges, each a scheme and then either a token68
// (skipped) or name=value parameters, a value being a token or a quoted
// string. Servers bend the grammar, so it reads leniently: an unquoted value
// may hold token68's '/' and '=' ("uri=/path", "key=abc=="), and what it
// cannot read at all is skipped up to the next comma outside quotes, so a
// challenge it does not understand never hides the one after it.
//
// The go-sdk's oauthex.ParseWWWAuthenticate (v1.8.0) reads the same grammar
// but fails the whole header on one challenge it cannot read: of the 14
// header shapes in TestParseChallenges it loses the Bearer challenge of 2
// (`Foo @@"x, y"@@, Bearer` and an unterminated quote), which would turn a
// server asking for sign-in into a retry loop. When the OAuth client needs
// the challenge's parameters in full, oauthex's discovery takes over from
// there; detecting the challenge stays here.
func parseChallenges(h string) []challenge {
	s := &hdrScanner{s: h}
	var out []challenge
	for {
		from := s.i
		s.skip(" \t,")
		if s.i == len(s.s) {
			return out
		}
		// A new challenge starts the value or follows a comma; a
		// parameter may follow either, or its scheme directly.
		canStart := len(out) == 0 || strings.IndexByte(s.s[from:s.i], ',') >= 0
		name := s.token()
		if name == "" {
			s.skipItem()
			continue
		}
		s.skip(" \t")
		if s.next('=') {
			if len(out) == 0 {
				// A parameter before any scheme belongs to nothing.
				s.skipItem()
				continue
			}
			s.skip(" \t")
			val, ok := s.value()
			if ok {
				out[len(out)-1].params[strings.ToLower(name)] = val
			}
			if !ok || !s.itemEnd() {
				s.skipItem()
			}
			continue
		}
		if !canStart {
			// Two words in a row where a parameter was due.
			s.skipItem()
			continue
		}
		out = append(out, challenge{scheme: name, params: map[string]string{}})
		if !s.itemEnd() {
			s.token68()
		}
	}
}

// hdrScanner walks a header value.
type hdrScanner struct {
	s string
	i int
}

// skip passes over any of the bytes in set.
func (s *hdrScanner) skip(set string) {
	for s.i < len(s.s) && strings.IndexByte(set, s.s[s.i]) >= 0 {
		s.i++
	}
}

// next consumes b if it comes next.
func (s *hdrScanner) next(b byte) bool {
	if s.i < len(s.s) && s.s[s.i] == b {
		s.i++
		return true
	}
	return false
}

// itemEnd passes over blanks and reports whether a comma or the end comes
// next.
func (s *hdrScanner) itemEnd() bool {
	s.skip(" \t")
	return s.i == len(s.s) || s.s[s.i] == ','
}

// skipItem passes over what cannot be read, up to the next comma outside a
// quoted string or the end.
func (s *hdrScanner) skipItem() {
	for s.i < len(s.s) && s.s[s.i] != ',' {
		if s.s[s.i] == '"' {
			s.quoted()
			continue
		}
		s.i++
	}
}

// token reads an RFC 9110 token, "" when none starts here.
func (s *hdrScanner) token() string {
	start := s.i
	for s.i < len(s.s) && isTokenChar(s.s[s.i]) {
		s.i++
	}
	return s.s[start:s.i]
}

// token68 passes over a token68 ("YII+/abc==") that ends its challenge and
// reports whether there was one; otherwise it consumes nothing.
func (s *hdrScanner) token68() bool {
	mark := s.i
	for s.i < len(s.s) && isToken68Char(s.s[s.i]) {
		s.i++
	}
	if s.i > mark {
		s.skip("=")
		if s.itemEnd() {
			return true
		}
	}
	s.i = mark
	return false
}

// value reads a parameter's value: a quoted string (backslash escapes
// undone) or an unquoted run of token and token68 characters. ok is false
// when neither starts here.
func (s *hdrScanner) value() (string, bool) {
	if s.i < len(s.s) && s.s[s.i] == '"' {
		return s.quoted(), true
	}
	start := s.i
	for s.i < len(s.s) && (isTokenChar(s.s[s.i]) || isToken68Char(s.s[s.i]) || s.s[s.i] == '=') {
		s.i++
	}
	return s.s[start:s.i], s.i > start
}

// quoted reads the quoted string that starts here, backslash escapes
// undone; an unterminated one runs to the end.
func (s *hdrScanner) quoted() string {
	s.i++ // the opening quote
	var b strings.Builder
	for s.i < len(s.s) {
		c := s.s[s.i]
		s.i++
		switch {
		case c == '"':
			return b.String()
		case c == '\\' && s.i < len(s.s):
			b.WriteByte(s.s[s.i])
			s.i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// isToken68Char reports whether c may appear in a token68 before its
// trailing '=' (RFC 9110 §11.2).
func isToken68Char(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("-._~+/", c) >= 0
}
