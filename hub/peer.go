package hub

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// sessionPeer delivers what an upstream sends about one call to the session
// that made it: on the call's own SSE stream, or its standalone stream.
type sessionPeer struct {
	store  *persister // nil for a JSON reply, which is not resumable
	s      *session
	st     *stream     // the call's POST stream; nil for a JSON reply
	lazy   *lazyStream // or the reply that may become one
	server string      // set when the call is forwarded
	send   func([]byte)

	mu       sync.Mutex
	progress float64 // the last progress value passed on
	sent     bool
}

// advance reports whether a progress value moves the call forward. Progress
// must increase (the spec's rule), so a value already passed on is a
// duplicate, such as a resumed upstream stream replays after a restart, and
// is dropped: each notification reaches the client once.
func (p *sessionPeer) advance(params json.RawMessage) bool {
	raw, ok := jsonrpc.Member(params, "progress")
	var v float64
	if !ok || json.Unmarshal(raw, &v) != nil {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sent && v <= p.progress {
		return false
	}
	p.progress, p.sent = v, true
	return true
}

// Forwarded records where the call went upstream, so that a hub restart
// can still finish it (see Upstream.Adopt). Upstreams call it when they can.
func (p *sessionPeer) Forwarded(upstreamID json.RawMessage, hubToken string, progressToken json.RawMessage) {
	switch {
	case p.lazy != nil:
		p.lazy.forwarded(forwardInfo{server: p.server, upstreamID: upstreamID, hubToken: hubToken, progressToken: progressToken})
	default:
		p.store.saveCall(p.st, forwardInfo{server: p.server, upstreamID: upstreamID, hubToken: hubToken, progressToken: progressToken})
	}
}

func (p *sessionPeer) Notify(msg *jsonrpc.Message) {
	switch msg.Method {
	case "notifications/message":
		level, _ := jsonrpc.StringMember(msg.Params, "level")
		if !admits(p.s.level(), level) {
			return
		}
	case "notifications/progress":
		if !p.advance(msg.Params) {
			return
		}
	}
	p.send(msg.Encode())
}

func (p *sessionPeer) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if !p.s.caps.allows(method) {
		return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "the client did not declare the capability %s needs", method)
	}
	return p.s.request(ctx, method, params, p.send)
}
