package hubclient

import (
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// Fail turns an error of a request on the session into what a caller
// reports: the transport's sentence when the hub could not be reached, the
// hub's reason when it refused the request, its message for a JSON-RPC
// error; never a body. what says what the request was for ("call
// github__create_issue").
func (s *Session) Fail(what string, err error) error {
	if p := s.hubErr(err); p != nil {
		var he *HubError
		if errors.As(p, &he) && he.Status != http.StatusUnauthorized && !isRedirect(he.Status) {
			return fmt.Errorf("%s: %w", what, p)
		}
		return p
	}
	return fmt.Errorf("%s: %w", what, CleanErr(err))
}

// isRedirect reports whether an HTTP status is a redirect.
func isRedirect(status int) bool { return status >= 300 && status < 400 }

// hubErr is the sentence for a failure below JSON-RPC: a hub that could not
// be reached (ErrNoHub), a failed connection (a TLS mismatch), a refused
// token, a redirect, or another refusal with the hub's reason. nil for any
// other error.
func (s *Session) hubErr(err error) error {
	t := s.target
	redirect, netErr := s.wire.seen()
	var he *client.HTTPError
	var op *net.OpError
	switch {
	case errors.As(err, new(*jsonrpc.Error)):
		return nil // the hub's answer, not a failure to reach it
	case errors.As(err, new(*client.AuthRequiredError)):
		return t.TokenRefused()
	case errors.As(err, &he) && he.Status == http.StatusUnauthorized:
		return t.TokenRefused()
	case he != nil && isRedirect(he.Status):
		msg := fmt.Sprintf("the hub at %s answered HTTP %d", t.Listen, he.Status)
		if redirect != nil && redirect.Host != "" {
			msg += fmt.Sprintf(", a redirect to %s://%s", redirect.Scheme, redirect.Host)
		}
		return &HubError{Status: he.Status, msg: msg + "; mcphub never redirects, so something else answers there: check [hub] listen (see mcphub status)"}
	case he != nil:
		// The connection keeps the start of the body, which holds the
		// hub's reason.
		return t.AnswerError(he.Status, []byte(he.Body))
	case netErr == nil:
		return nil
	case errors.As(netErr, &op) && op.Op == "dial":
		return fmt.Errorf("%w at %s (start one with: mcphub serve)", ErrNoHub, t.Listen)
	case t.TLSCert != "":
		return fmt.Errorf("no HTTPS connection with the hub at %s: %w; [hub] tls_cert must be the certificate the running hub serves (see mcphub status)", t.Listen, netErr)
	}
	return fmt.Errorf("the hub at %s did not answer: %w; see whether it still runs with: mcphub status", t.Listen, netErr)
}

// CleanErr is err as a user reads it: a JSON-RPC error is its message (the
// hub's sentence), without the method and code around it.
func CleanErr(err error) error {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return errors.New(we.Message)
	}
	return err
}

// RPCCode is the JSON-RPC error code of err, 0 when it carries none: a
// caller tells "no such tool" (invalid params) from other refusals by it.
func RPCCode(err error) int {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return int(we.Code)
	}
	return 0
}
