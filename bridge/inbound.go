package bridge

import (
	"context"
	"encoding/json"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// The link is the client.Handler of each of its connections: what the
// upstream sends on its own initiative arrives here.

// HandleNotification routes a notification from the upstream (client.Handler).
func (l *link) HandleNotification(m *jsonrpc.Message, related json.RawMessage) {
	switch m.Method {
	case "notifications/progress":
		l.progress(m)
		return
	case "notifications/message":
		if c, _ := l.owner(related, true); c != nil {
			c.peer.Notify(m)
			return
		}
	}
	for _, lm := range listMethods {
		if m.Method == lm.changed {
			// The lists served are the shared connection's: a change the
			// session-era connection beside it hears of refetches them.
			target := l
			if l.era {
				target = l.srv.sharedLink()
			}
			l.srv.group.Go(func() { target.refresh(lm.changed) })
			break
		}
	}
	if l.srv.cfg.Notification != nil {
		l.srv.cfg.Notification(l.session, m)
	}
}

// progress hands a progress notification to the call whose minted token it
// carries, with the client's own token put back. Progress for a call that
// ended, or for a token the bridge never minted, is dropped: it belongs to
// no client.
func (l *link) progress(m *jsonrpc.Message) {
	tok, _ := jsonrpc.StringMember(m.Params, "progressToken")
	l.mu.Lock()
	c := l.tokens[tok]
	l.mu.Unlock()
	if c == nil || c.origToken == nil || c.peer == nil {
		return
	}
	params, err := jsonrpc.SetMember(m.Params, "progressToken", c.origToken)
	if err != nil {
		return
	}
	c.peer.Notify(jsonrpc.NewNotification(m.Method, params))
}

// HandleRequest routes a server-to-client request (client.Handler) to the
// client whose call caused it, or to the hub when it belongs to no call.
func (l *link) HandleRequest(ctx context.Context, m *jsonrpc.Message, related json.RawMessage) (json.RawMessage, error) {
	c, ambiguous := l.owner(related, false)
	if c != nil {
		return c.peer.Request(ctx, m.Method, m.Params)
	}
	if ambiguous {
		l.logger().Warn("refused a server request that could belong to several clients", "method", m.Method)
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError,
			"mcphub cannot tell which client %s is for: calls from several sessions are in flight on the shared connection to %s (set share = \"session\" for this server)",
			m.Method, l.srv.cfg.Name)
	}
	if l.srv.cfg.Request != nil {
		return l.srv.cfg.Request(ctx, l.session, m.Method, m.Params)
	}
	return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "no client can answer %s", m.Method)
}
