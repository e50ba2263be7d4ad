package hub

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/registry"
)

// Upstream is one registry server as the hub uses it: a supervised connection
// (or, with share = "session", one per client session) that the hub routes
// requests through. Implementations must be safe for concurrent use.
type Upstream interface {
	// Start begins connecting in the background and returns at once; the
	// upstream keeps itself connected until Close.
	Start(ctx context.Context)
	// Close stops the upstream: in-flight calls fail, processes stop.
	Close() error

	// Call forwards a request made by session and returns its raw result.
	// params is sent as it is. The upstream mints its own request id and
	// progress token, relays what belongs to the call to peer, and sends
	// notifications/cancelled upstream when ctx ends first. An upstream
	// JSON-RPC error is returned as *jsonrpc.Error. sessionEra asks, of a
	// server that speaks both eras (UpstreamStatus.SessionProtocol), for
	// its session-era connection, which relays a session-era client's
	// call untranslated; otherwise the call takes the shared connection.
	Call(ctx context.Context, session string, sessionEra bool, method string, params json.RawMessage, peer jsonrpc.Peer) (json.RawMessage, error)
	// Notify forwards a client notification (such as
	// notifications/roots/list_changed) from session.
	Notify(ctx context.Context, session string, method string, params json.RawMessage) error
	// SetLogLevel asks the upstream to send log messages at level and above
	// (the lowest level any session wants); it is re-applied on reconnect.
	SetLogLevel(level string)
	// SessionClosed tells the upstream a client session ended, so a
	// per-session connection can be closed.
	SessionClosed(session string)

	// Initialize returns the current connection's raw initialize result,
	// nil while not connected.
	Initialize() json.RawMessage
	// List returns the items the server offers for a list method
	// (tools/list, prompts/list, resources/list, resources/templates/list)
	// as last fetched, in the server's order.
	List(method string) []json.RawMessage
	// Status reports the upstream's state for health and `mcphub list`.
	Status() UpstreamStatus

	// Adopt finishes, after a hub restart, a request the previous hub had
	// sent upstream (see jsonrpc.Peer.Forwarded): the transport resumes
	// the upstream stream the result travels on and done receives it. It
	// reports false when it cannot; the hub then answers the client with
	// an error instead.
	Adopt(upstreamID json.RawMessage, hubToken string, progressToken json.RawMessage, peer jsonrpc.Peer, done func(json.RawMessage, error)) bool
}

// UpstreamStatus is what an upstream reports about itself.
type UpstreamStatus struct {
	State     string
	Transport string
	PID       int
	Protocol  string // the revision the connection speaks
	// SessionProtocol is set for a server that speaks both eras: the
	// revision of the session-era connection its session-era clients'
	// calls take, so the hub relays them untranslated. "" when the server
	// is spoken to in Protocol alone.
	SessionProtocol string
	Since           time.Time // when the current connection was established
	LastError       string
	Restarts        int
}

// UpstreamEvents is how upstreams tell the hub about what belongs to no call.
// The hub hands it to its NewUpstream factory for each server.
type UpstreamEvents struct {
	// Changed reports that the server's state or one of its lists changed.
	Changed func()
	// Notification delivers a notification that belongs to no call:
	// resources/updated, log messages, list_changed. session is the client
	// session it belongs to for a per-session connection, "" for a shared one.
	Notification func(session string, msg *jsonrpc.Message)
	// Request delivers a server-to-client request that belongs to no call;
	// session as for Notification.
	Request func(ctx context.Context, session string, method string, params json.RawMessage) (json.RawMessage, error)
}

// TakeoverFunc creates an Upstream that resumes the upstream session the
// replica named from kept with a server, only to finish, through Adopt,
// the calls of a session taken over from it; nil when there is none to
// resume (a stdio server, no stored state). It is started once its calls
// are adopted and closed once they are answered.
type TakeoverFunc func(spec *registry.Server, hub registry.Hub, from string) Upstream

// NewUpstreamFunc creates the Upstream for one registry server.
type NewUpstreamFunc func(spec *registry.Server, hub registry.Hub, events UpstreamEvents) Upstream
