package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Sentinel errors of the client room. The hub turns them into JSON-RPC codes
// and HTTP statuses; nothing here knows about either.
var (
	// ErrClosed is returned by calls on a connection that was closed, and
	// wraps the error of calls that were pending when it was.
	ErrClosed = errors.New("connection closed")
	// ErrSessionExpired is returned for calls that were already sent on an
	// upstream HTTP session that the server then reported gone (404). Calls
	// not yet sent are retried on a fresh session instead.
	ErrSessionExpired = errors.New("upstream session expired")
	// ErrNotStarted is returned by calls made before Start succeeded.
	ErrNotStarted = errors.New("connection not started")
	// ErrVersion means the server answered initialize with a protocol
	// version mcphub does not speak.
	ErrVersion = errors.New("unsupported protocol version")
	// ErrNoSessionEra means a connection made with Config.SessionEra found
	// a server that does not keep sessions: it refused initialize, or
	// answered it over HTTP without a session id.
	ErrNoSessionEra = errors.New("the server keeps no session-era sessions")
	// ErrMessageTooLarge means a line or event from the upstream exceeded
	// the configured size bound.
	ErrMessageTooLarge = errors.New("upstream message too large")
	// ErrStreamFailed means a resumable stream could not be resumed within
	// its retry budget.
	ErrStreamFailed = errors.New("upstream stream failed")
)

// ExitError reports that a stdio server process ended. Every call pending at
// that moment fails with it.
type ExitError struct {
	// Status describes how the process ended, e.g. "exit status 1" or
	// "signal: killed".
	Status string
	// Stderr holds the last lines the process wrote to its standard error.
	Stderr []string
}

func (e *ExitError) Error() string {
	msg := "server process exited (" + e.Status + ")"
	if len(e.Stderr) > 0 {
		msg += "; last stderr: " + strings.Join(e.Stderr, " | ")
	}
	return msg
}

// Is makes errors.Is(err, ErrClosed) true for an exited process.
func (e *ExitError) Is(target error) bool { return target == ErrClosed }

// NoAnswerError reports that a server did not answer initialize before the
// deadline of Start's context. errors.Is(err, context.DeadlineExceeded)
// holds for it.
type NoAnswerError struct {
	// Waited is how long mcphub waited for the answer.
	Waited time.Duration
	// Stderr holds the last lines a stdio server wrote to its standard
	// error, redacted; nil for a remote server.
	Stderr []string
	// Err is the error the wait ended with.
	Err error
}

func (e *NoAnswerError) Error() string {
	msg := "no answer within " + e.Waited.String()
	if e.Err != nil && e.Err.Error() != context.DeadlineExceeded.Error() {
		msg += " (" + e.Err.Error() + ")"
	}
	if len(e.Stderr) > 0 {
		msg += "; last stderr: " + strings.Join(e.Stderr, " | ")
	}
	return msg
}

// Unwrap returns the error the wait ended with.
func (e *NoAnswerError) Unwrap() error { return e.Err }

// HTTPError reports an upstream HTTP status mcphub could not use.
type HTTPError struct {
	Method string
	URL    string
	Status int
	// Body is the start of the response body, for the user to read.
	Body string
	// Scope is, for a 403 whose Bearer challenge says insufficient_scope,
	// the scope the token lacks ("*" when the challenge names none): a
	// new sign-in can fix the refusal.
	Scope string
}

func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("%s %s: HTTP %d", e.Method, e.URL, e.Status)
	if e.Scope != "" {
		msg += ": the token lacks the scope the request needs"
		if e.Scope != "*" {
			msg += " (" + e.Scope + ")"
		}
	}
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// AuthRequiredError reports that a remote server refused a request for
// want of sign-in: HTTP 401 with a Bearer challenge (WWW-Authenticate), or,
// when a sign-in was attempted and failed, 403 insufficient_scope too. It
// wants an OAuth access token that the connection does not have, or one
// that is no longer good or grants too little. Retrying with the same
// headers cannot help; someone has to sign in (for mcphub, the login
// command names the server).
//
// Its text names the request and the status, and why the sign-in failed
// when one was attempted (secrets masked): neither the challenge's values
// nor the response body, which are the server's words and may quote
// credentials. The parsed values are for the code that signs in.
// errors.As also finds the status as an *HTTPError (without a body), and
// Err when there is one.
type AuthRequiredError struct {
	// Method and URL (redacted) name the request; both are empty when the
	// error reports a failed sign-in, whose error around it names the
	// request.
	Method string
	URL    string
	Status int
	// Scheme is the challenge's scheme as the server spelled it (Bearer in
	// any case).
	Scheme string
	// Realm, ResourceMetadata (RFC 9728: where the protected resource
	// metadata is), Scope and ErrorCode (RFC 6750's error parameter, e.g.
	// invalid_token) are the challenge's parameters; "" when absent.
	Realm            string
	ResourceMetadata string
	Scope            string
	ErrorCode        string
	// Err is why signing in failed, nil when the connection did not try
	// (it has no way to ask the user: OAuthConfig.Fetch is nil).
	Err error
}

func (e *AuthRequiredError) Error() string {
	var b strings.Builder
	if e.Method != "" {
		fmt.Fprintf(&b, "%s %s: ", e.Method, e.URL)
	}
	fmt.Fprintf(&b, "HTTP %d %s: sign-in required: ", e.Status, http.StatusText(e.Status))
	if e.Status == http.StatusForbidden {
		b.WriteString("the server asks for a token that grants more")
	} else {
		b.WriteString("the server asks for a valid Bearer token")
	}
	if e.Err != nil {
		b.WriteString(" (signing in failed: " + e.Err.Error() + ")")
	}
	return b.String()
}

// Unwrap presents the refusal as the HTTPError it also is, so code that
// tells failures apart by status keeps working, and as Err. The body is
// left out.
func (e *AuthRequiredError) Unwrap() []error {
	errs := []error{&HTTPError{Method: e.Method, URL: e.URL, Status: e.Status}}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}
