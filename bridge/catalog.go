package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// listMethods are the lists a link fetches, by the capability that offers
// them.
var listMethods = []struct{ capability, method, changed string }{
	{"tools", "tools/list", "notifications/tools/list_changed"},
	{"prompts", "prompts/list", "notifications/prompts/list_changed"},
	{"resources", "resources/list", "notifications/resources/list_changed"},
	{"resources", "resources/templates/list", "notifications/resources/list_changed"},
}

// fetchLists gets every list the server's capabilities offer.
func (l *link) fetchLists(ctx context.Context, conn upstreamConn, caps json.RawMessage) (map[string][]json.RawMessage, error) {
	lists := map[string][]json.RawMessage{}
	for _, lm := range listMethods {
		if _, ok := jsonrpc.Member(caps, lm.capability); !ok {
			continue
		}
		items, err := l.fetchList(ctx, conn, lm.method)
		if err != nil {
			return nil, err
		}
		lists[lm.method] = items
	}
	return lists, nil
}

func (l *link) fetchList(ctx context.Context, conn upstreamConn, method string) ([]json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, l.srv.cfg.RequestTimeout)
	defer cancel()
	items, err := conn.ListAll(ctx, method)
	// A server that declares a capability but answers its list with a
	// JSON-RPC error offers nothing there; it is no reason to drop the
	// connection.
	var e *jsonrpc.Error
	if errors.As(err, &e) {
		l.logger().Warn("the server refused a list it declared", "method", method, "err", e.Message)
		return nil, nil
	}
	return items, err
}

// refresh refetches the lists a list_changed notification covers.
func (l *link) refresh(changed string) {
	conn := l.current()
	if conn == nil {
		return
	}
	for _, lm := range listMethods {
		if lm.changed != changed {
			continue
		}
		items, err := l.fetchList(l.ctx, conn, lm.method)
		if err != nil {
			l.logger().Warn("could not refresh a list", "method", lm.method, "err", err)
			continue
		}
		l.mu.Lock()
		l.lists[lm.method] = items
		l.mu.Unlock()
	}
	l.changed()
}

// applyLogLevel sends logging/setLevel when the server logs and the level
// differs from what it was last sent.
func (l *link) applyLogLevel(level string) {
	l.mu.Lock()
	conn, init, last := l.conn, l.init, l.level
	if conn == nil || last == level {
		l.mu.Unlock()
		return
	}
	caps, _ := jsonrpc.Member(init, "capabilities")
	if _, ok := jsonrpc.Member(caps, "logging"); !ok {
		l.mu.Unlock()
		return
	}
	l.level = level
	l.mu.Unlock()
	l.srv.group.Go(func() {
		ctx, cancel := context.WithTimeout(l.ctx, l.srv.cfg.RequestTimeout)
		defer cancel()
		params := fmt.Appendf(nil, `{"level":%s}`, jsonrpc.Quote(level))
		if _, err := conn.Call(ctx, "logging/setLevel", params); err != nil {
			l.logger().Debug("logging/setLevel failed", "err", err)
		}
	})
}

// initResult is the last known initialize result: of the current
// connection, of the last one while reconnecting, or from the cache before
// the first.
func (l *link) initResult() json.RawMessage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.init
}

func (l *link) list(method string) []json.RawMessage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lists[method]
}

// catalog copies the initialize result and lists, for the cache.
func (l *link) catalog() Cache {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := Cache{Init: l.init, Lists: make(map[string][]json.RawMessage, len(l.lists))}
	for m, items := range l.lists {
		c.Lists[m] = items
	}
	return c
}
