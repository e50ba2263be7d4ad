package jsonrpc

import (
	"context"
	"encoding/json"
)

// Peer is the downstream end of one routed request: where an upstream's
// messages about that request go. The hub makes one for each request it
// routes and the bridge delivers to it, after mapping ids and progress
// tokens back. It lives here, beside the message it carries, so that both
// rooms name the same type without importing each other.
type Peer interface {
	// Notify delivers a notification belonging to the call (progress with
	// the client's own token restored, log messages).
	Notify(msg *Message)
	// Request sends a server-to-client request (sampling, elicitation,
	// roots/list) to the client that made the call and waits for its
	// result. A JSON-RPC error from the client is returned as *Error.
	Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// Forwarded records where the call went upstream: the id the bridge
	// minted, the progress token it sent upstream in place of the client's
	// (hubToken), and the client's own progress token (nil when the call
	// has none), which progress is mapped back to. A restarted hub needs
	// them to adopt the call.
	Forwarded(upstreamID json.RawMessage, hubToken string, progressToken json.RawMessage)
}
