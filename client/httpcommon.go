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

	"github.com/mcphub/mcphub/oauth"
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
		for _, ch := range oauth.ParseChallenges(v) {
			if strings.EqualFold(ch.Scheme, "Bearer") {
				return &AuthRequiredError{
					Method: method, URL: url, Status: resp.StatusCode, Scheme: ch.Scheme,
					Realm: ch.Params["realm"], ResourceMetadata: ch.Params["resource_metadata"],
					Scope: ch.Params["scope"], ErrorCode: ch.Params["error"],
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
		for _, ch := range oauth.ParseChallenges(v) {
			if strings.EqualFold(ch.Scheme, "Bearer") && ch.Params["error"] == "insufficient_scope" {
				return cmp.Or(ch.Params["scope"], "*")
			}
		}
	}
	return ""
}
