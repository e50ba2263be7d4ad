package bridge

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// unavailableError reports a server that cannot take a call now. The hub
// recognises it by its Unavailable method.
type unavailableError struct{ msg string }

func (e *unavailableError) Error() string     { return e.msg }
func (e *unavailableError) Unavailable() bool { return true }

// tooLargeError reports a result over MaxResponseBytes, or a response
// the client refused as over its size limit.
type tooLargeError struct{ msg string }

func (e *tooLargeError) Error() string  { return e.msg }
func (e *tooLargeError) TooLarge() bool { return true }

// callError wraps a connection failure during a call so the hub sees an
// unavailable upstream; the call is never replayed. A response over the
// client's size limit is reported as too large, even when it also cost the
// connection (the legacy transport's one stream).
func callError(name string, err error) error {
	var rpcErr *jsonrpc.Error
	switch {
	case errors.As(err, &rpcErr), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, client.ErrMessageTooLarge):
		return &tooLargeError{fmt.Sprintf("server %s: %v (the limit is [hub] max_response_bytes)", name, err)}
	case errors.Is(err, client.ErrClosed), errors.Is(err, client.ErrSessionExpired), errors.Is(err, client.ErrStreamFailed):
		return &unavailableError{fmt.Sprintf("server %s failed while handling the request (it is not retried): %v", name, err)}
	}
	var he *client.HTTPError
	if errors.As(err, &he) && he.Scope != "" {
		// The hub never opens a browser: the user signs in again, and
		// mcphub login asks for the scope this refusal wanted.
		return fmt.Errorf("server %s: %w; run mcphub login %s", name, err, name)
	}
	return err
}
