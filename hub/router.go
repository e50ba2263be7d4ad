package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
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

// route answers one client request: what the hub owns itself (ping, the
// merged lists, logging/setLevel) here, the rest by name or URI to the server
// that owns it.
func (h *Hub) route(ctx context.Context, s *session, m *jsonrpc.Message, peer jsonrpc.Peer) (json.RawMessage, error) {
	switch m.Method {
	case "ping":
		return json.RawMessage(`{}`), nil
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
		return h.list(ctx, s, m)
	case "logging/setLevel":
		level, _ := jsonrpc.StringMember(m.Params, "level")
		if levelRank(level) < 0 {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid log level %q; use one of %s", level, strings.Join(logLevels, ", "))
		}
		s.mu.Lock()
		s.logLevel = level
		s.mu.Unlock()
		h.saveSession(s, false)
		h.applyLogLevels()
		return json.RawMessage(`{}`), nil
	case "tools/call":
		return h.callNamed(ctx, s, m, peer, "tool")
	case "prompts/get":
		return h.callNamed(ctx, s, m, peer, "prompt")
	case "resources/read":
		uri, _ := jsonrpc.StringMember(m.Params, "uri")
		server, err := h.resourceOwner(s, uri)
		if err != nil {
			return nil, err
		}
		return h.forward(ctx, s, server, m.Method, m.Params, peer)
	case "resources/subscribe", "resources/unsubscribe":
		return h.subscribe(ctx, s, m)
	case "completion/complete":
		return h.complete(ctx, s, m, peer)
	case "initialize":
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "the session is already initialized")
	}
	return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "method not found: %s", m.Method)
}

// list answers a merged list call from the session's view. While servers are
// still starting it waits (up to the warmup period) so a client that
// connects with the hub sees their items.
func (h *Hub) list(ctx context.Context, s *session, m *jsonrpc.Message) (json.RawMessage, error) {
	select {
	case <-h.warm:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	c := h.view(s.endpoint)
	if c == nil {
		return nil, describeUnavailable(s.endpoint, UpstreamStatus{State: "removed"})
	}
	cursor, _ := jsonrpc.StringMember(m.Params, "cursor")
	items, next, err := c.page(m.Method, cursor)
	if err != nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid cursor: pass back a nextCursor exactly as received")
	}
	member := listMember(m.Method)
	out := make([]byte, 0, 64+len(items)*256)
	out = append(out, '{')
	out = jsonrpc.AppendString(out, member)
	out = append(out, ":["...)
	for i, it := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, it...)
	}
	out = append(out, ']')
	if next != "" {
		out = append(out, `,"nextCursor":`...)
		out = jsonrpc.AppendString(out, next)
	}
	return append(out, '}'), nil
}

// callNamed routes tools/call or prompts/get by its exposed name, rewriting
// only the name member; the arguments travel as the client sent them.
func (h *Hub) callNamed(ctx context.Context, s *session, m *jsonrpc.Message, peer jsonrpc.Peer, kind string) (json.RawMessage, error) {
	name, _ := jsonrpc.StringMember(m.Params, "name")
	c := h.view(s.endpoint)
	if c == nil {
		return nil, describeUnavailable(s.endpoint, UpstreamStatus{State: "removed"})
	}
	var (
		entry named
		ok    bool
		names []string
	)
	if kind == "tool" {
		entry, ok = c.tool(name)
		names = mapKeys(c.toolIndex)
	} else {
		entry, ok = c.prompt(name)
		names = mapKeys(c.promptIndex)
	}
	if !ok {
		return nil, unknownName(kind, name, names)
	}
	params := m.Params
	if entry.name != name {
		var err error
		if params, err = jsonrpc.SetMember(params, "name", jsonrpc.Quote(entry.name)); err != nil {
			return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "params must be an object")
		}
	}
	return h.forward(ctx, s, entry.server, m.Method, params, peer)
}

// forward sends a request to a server with the right timeout: call_timeout
// for tools/call, request_timeout otherwise.
func (h *Hub) forward(ctx context.Context, s *session, server, method string, params json.RawMessage, peer jsonrpc.Peer) (json.RawMessage, error) {
	e := h.server(server)
	if e == nil {
		return nil, describeUnavailable(server, UpstreamStatus{State: "removed"})
	}
	timeout := h.registry().Hub.RequestTimeout
	if method == "tools/call" {
		timeout = e.spec.CallTimeout
	}
	if sp, ok := peer.(*sessionPeer); ok {
		sp.server = server
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, &timeoutError{server: server, method: method, timeout: timeout})
	defer cancel()
	res, err := e.up.Call(ctx, s.id, method, params, peer)
	if err != nil && ctx.Err() != nil && errors.Is(context.Cause(ctx), errTimeout) {
		return nil, context.Cause(ctx)
	}
	return res, err
}

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

// resourceOwner finds the server whose resource or template covers uri.
func (h *Hub) resourceOwner(s *session, uri string) (string, error) {
	if uri == "" {
		return "", jsonrpc.NewError(jsonrpc.CodeInvalidParams, "params.uri is required")
	}
	c := h.view(s.endpoint)
	if c != nil {
		if server, ok := c.resourceServer(uri); ok {
			return server, nil
		}
	}
	return "", jsonrpc.NewError(codeResourceNotFound, "Resource not found: no server offers "+uri).
		WithData(fmt.Appendf(nil, `{"uri":%s}`, jsonrpc.Quote(uri)))
}

// subscribe records a session's subscription and forwards it upstream when
// it is the first for that URI (unsubscribe: when it is the last), so a
// shared upstream gets one subscription however many sessions want it.
func (h *Hub) subscribe(ctx context.Context, s *session, m *jsonrpc.Message) (json.RawMessage, error) {
	uri, _ := jsonrpc.StringMember(m.Params, "uri")
	server, err := h.resourceOwner(s, uri)
	if err != nil {
		return nil, err
	}
	on := m.Method == "resources/subscribe"
	s.mu.Lock()
	_, had := s.subs[uri]
	if on {
		s.subs[uri] = struct{}{}
	} else {
		delete(s.subs, uri)
	}
	s.mu.Unlock()
	if had == on {
		return json.RawMessage(`{}`), nil
	}
	h.saveSession(s, false)
	if !h.countSubscription(server, s.id, uri, on) {
		return json.RawMessage(`{}`), nil
	}
	return h.forward(ctx, s, server, m.Method, m.Params, nil)
}

// countSubscription keeps the number of sessions subscribed to a URI and
// reports whether the upstream must hear of this change. A per-session
// upstream always does.
func (h *Hub) countSubscription(server, session, uri string, on bool) bool {
	if e := h.server(server); e != nil && e.spec.Share == "session" {
		return true
	}
	key := server + "\x00" + uri
	h.subsMu.Lock()
	defer h.subsMu.Unlock()
	if on {
		h.subs[key]++
		return h.subs[key] == 1
	}
	h.subs[key]--
	if h.subs[key] <= 0 {
		delete(h.subs, key)
		return true
	}
	return false
}

// complete routes completion/complete by its reference: a prompt by its
// exposed name (rewritten to the server's own), a resource template by URI.
func (h *Hub) complete(ctx context.Context, s *session, m *jsonrpc.Message, peer jsonrpc.Peer) (json.RawMessage, error) {
	ref, ok := jsonrpc.Member(m.Params, "ref")
	if !ok {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "params.ref is required")
	}
	typ, _ := jsonrpc.StringMember(ref, "type")
	switch typ {
	case "ref/prompt":
		name, _ := jsonrpc.StringMember(ref, "name")
		c := h.view(s.endpoint)
		if c == nil {
			return nil, describeUnavailable(s.endpoint, UpstreamStatus{State: "removed"})
		}
		entry, ok := c.prompt(name)
		if !ok {
			return nil, unknownName("prompt", name, mapKeys(c.promptIndex))
		}
		params := m.Params
		if entry.name != name {
			newRef, err := jsonrpc.SetMember(ref, "name", jsonrpc.Quote(entry.name))
			if err == nil {
				params, err = jsonrpc.SetMember(params, "ref", newRef)
			}
			if err != nil {
				return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "malformed params")
			}
		}
		return h.forward(ctx, s, entry.server, m.Method, params, peer)
	case "ref/resource":
		uri, _ := jsonrpc.StringMember(ref, "uri")
		server, err := h.resourceOwner(s, uri)
		if err != nil {
			return nil, err
		}
		return h.forward(ctx, s, server, m.Method, m.Params, peer)
	}
	return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "unknown ref type %q", typ)
}

// clientNotification handles what a client notifies.
func (h *Hub) clientNotification(s *session, m *jsonrpc.Message) {
	switch m.Method {
	case "notifications/cancelled":
		id, _ := jsonrpc.Member(m.Params, "requestId")
		if !s.cancelCall(id) {
			h.log.Debug("cancellation for no in-flight request", "session", s.id, "rpc_id", string(id))
		}
	case "notifications/roots/list_changed":
		for _, e := range h.serversOf(s) {
			ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
			if err := e.up.Notify(ctx, s.id, m.Method, m.Params); err != nil {
				h.log.Debug("could not forward roots/list_changed", "server", e.spec.Name, "err", err)
			}
			cancel()
		}
	}
}

// serversOf returns the servers a session sees.
func (h *Hub) serversOf(s *session) []*serverEntry {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []*serverEntry
	for name, e := range h.servers {
		if s.endpoint == "" || s.endpoint == name {
			out = append(out, e)
		}
	}
	return out
}

// rpcError turns an error into what the client sees: the JSON-RPC error and,
// for a JSON reply on a per-server endpoint, the HTTP status (seed 002).
func (h *Hub) rpcError(err error, endpoint string) (*jsonrpc.Error, int) {
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
	if endpoint == "" {
		status = http.StatusOK
	}
	return e, status
}

// unknownName is the error for a tool or prompt name the view does not have,
// naming the closest ones it does.
func unknownName(kind, name string, names []string) *jsonrpc.Error {
	msg := fmt.Sprintf("unknown %s %q", kind, name)
	if close := closeMatches(name, names); len(close) > 0 {
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

// closeMatches suggests up to three names close to an unknown one: those
// containing it or contained in it, then those within a small edit distance.
func closeMatches(name string, names []string) []string {
	type scored struct {
		name string
		d    int
	}
	var cands []scored
	lname := strings.ToLower(name)
	for _, n := range names {
		ln := strings.ToLower(n)
		switch {
		case strings.HasSuffix(ln, lname) || strings.Contains(ln, lname) || strings.Contains(lname, ln):
			cands = append(cands, scored{n, 0})
		default:
			if d := textdist.Distance(lname, ln); d <= max(2, len(name)/4) {
				cands = append(cands, scored{n, d})
			}
		}
	}
	slices.SortStableFunc(cands, func(a, b scored) int { return a.d - b.d })
	var out []string
	for i := 0; i < len(cands) && i < 3; i++ {
		out = append(out, cands[i].name)
	}
	return out
}
