package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/textdist"
)

// JSON-RPC codes mcphub uses beyond the standard ones.
const (
	codeServerError      = -32000
	codeRequestTimeout   = -32001
	codeResourceNotFound = -32002
)

// errTimeout marks a forwarded request that ran out of its timeout.
var errTimeout = errors.New("upstream timeout")

// timeoutError is the cause of a forwarded request's deadline. It formats
// its message only when someone reads it, not on every request.
type timeoutError struct {
	server, method string
	timeout        time.Duration
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("%v: server %s did not answer %s within %s; the request was cancelled upstream", errTimeout, e.server, e.method, e.timeout)
}

func (e *timeoutError) Unwrap() error { return errTimeout }

// rpcError turns an error into what the client sees: the JSON-RPC error and,
// for a JSON reply on a per-server endpoint, the HTTP status (seed 002).
func rpcError(err error, endpoint string) (*jsonrpc.Error, int) {
	var rpcErr *jsonrpc.Error
	var unavailable interface{ Unavailable() bool }
	var tooLarge interface{ TooLarge() bool }
	status := http.StatusOK
	var e *jsonrpc.Error
	switch {
	case errors.As(err, &rpcErr):
		return rpcErr, http.StatusOK
	case errors.Is(err, errTimeout):
		e, status = jsonrpc.NewError(codeRequestTimeout, err.Error()), http.StatusGatewayTimeout
	case errors.As(err, &tooLarge) && tooLarge.TooLarge():
		e, status = jsonrpc.NewError(codeServerError, err.Error()), http.StatusBadGateway
	case errors.Is(err, errUnavailable), errors.As(err, &unavailable) && unavailable.Unavailable():
		e, status = jsonrpc.NewError(codeServerError, err.Error()), http.StatusServiceUnavailable
	case errors.Is(err, context.Canceled), errors.Is(err, errSessionEnded):
		e = jsonrpc.NewError(codeServerError, "request cancelled")
	default:
		e, status = jsonrpc.NewError(jsonrpc.CodeInternalError, err.Error()), http.StatusBadGateway
	}
	if !serverEndpoint(endpoint) {
		status = http.StatusOK
	}
	return e, status
}

// unknownName is the error for a tool or prompt name the view does not have,
// naming the closest ones it does.
func unknownName(kind, name string, names []string) *jsonrpc.Error {
	msg := fmt.Sprintf("unknown %s %q", kind, name)
	if close := textdist.Suggest(name, names, 3); len(close) > 0 {
		msg += "; did you mean " + strings.Join(close, ", ") + "?"
	}
	return jsonrpc.NewError(jsonrpc.CodeInvalidParams, msg)
}

func mapKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// errUnavailable is the hub's view of an upstream that cannot take a call.
var errUnavailable = errors.New("server unavailable")

// describeUnavailable says why a server cannot take a call now.
func describeUnavailable(name string, st UpstreamStatus) error {
	msg := fmt.Sprintf("server %s is %s", name, st.State)
	if st.LastError != "" {
		msg += ": " + st.LastError
	}
	return fmt.Errorf("%w: %s", errUnavailable, msg)
}
