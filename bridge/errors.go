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

// tooLargeError reports a result over MaxResponseBytes.
type tooLargeError struct{ msg string }

func (e *tooLargeError) Error() string  { return e.msg }
func (e *tooLargeError) TooLarge() bool { return true }

// callError wraps a connection failure during a call so the hub sees an
// unavailable upstream; the call is never replayed.
func callError(name string, err error) error {
	var rpcErr *jsonrpc.Error
	switch {
	case errors.As(err, &rpcErr), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, client.ErrClosed), errors.Is(err, client.ErrSessionExpired), errors.Is(err, client.ErrStreamFailed):
		return &unavailableError{fmt.Sprintf("server %s failed while handling the request (it is not retried): %v", name, err)}
	}
	return err
}
