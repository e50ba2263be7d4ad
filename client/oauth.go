package client

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/mcphub/mcphub/oauth"
)

// A remote server with Config.OAuth signs in through the oauth room: its
// Authorizer's transport carries every request of the connection. What is
// kept here is the wiring (the Authorizer gets the connection's URL,
// transport, logger, life, goroutines and secrets) and how its failures
// look to the rest of the client and to the hub: a failed sign-in is an
// AuthRequiredError, like a refusal the connection does not try to answer.

// signInErrors carries a connection's requests through the OAuth
// transport, turning a failed sign-in (*oauth.SignInError) into the
// AuthRequiredError the transports, the bridge and the CLI look for.
type signInErrors struct{ rt http.RoundTripper }

func (t signInErrors) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	var se *oauth.SignInError
	if err == nil || !errors.As(err, &se) {
		return resp, err
	}
	e := &AuthRequiredError{Status: se.Status, Err: se.Err}
	if ch := se.Bearer; ch != nil {
		e.Scheme, e.Realm, e.ResourceMetadata = ch.Scheme, ch.Params["realm"], ch.Params["resource_metadata"]
		e.Scope, e.ErrorCode = ch.Params["scope"], ch.Params["error"]
	}
	return nil, e
}

// HostPort is the host:port a URL (a server's, or a proxy's) is dialled
// at: its port, else its scheme's default (https 443, socks5 1080, else
// 80). The bridge's health check dials it; the rule is oauth.HostPort's,
// which the guard of the requests to authorization servers keeps to.
func HostPort(u *url.URL) string { return oauth.HostPort(u) }

// withOAuth returns hc with its transport wrapped in the OAuth transport;
// hc itself is left as it was.
func (c *Conn) withOAuth(hc *http.Client) *http.Client {
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	a, err := oauth.New(oauth.Options{URL: c.cfg.URL, Config: *c.cfg.OAuth, Base: base, Logger: c.log,
		Context: c.ctx, Go: c.goHandler, Scrub: c.scrub})
	if err != nil {
		c.authErr = fmt.Errorf("server %s: %w", c.cfg.Name, err)
		return hc
	}
	c.auth = a
	wrapped := *hc
	wrapped.Transport = signInErrors{a.Transport()}
	return &wrapped
}

// goHandler runs f as one of the goroutines Close waits for; ErrClosed
// once Close began.
func (c *Conn) goHandler(f func()) error {
	if !c.handlers.Go(f) {
		return ErrClosed
	}
	return nil
}
