package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/internal/goroutines"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// router is the hub's part that answers client requests: a method table
// (routes) says, for each method, which members of params it routes on and
// which handler serves it. What the hub owns itself (ping, the merged lists,
// logging/setLevel, subscriptions) is answered here; the rest is forwarded by
// name or URI to the server that owns it. The next protocol revision's
// methods are added to the table.
type router struct {
	servers *serverSet
	store   *persister
	// levels re-applies the upstreams' log levels after a session's
	// level changed.
	levels func()

	mu   sync.Mutex
	subs map[string]int // "server\x00uri" → sessions subscribed
}

func newRouter(servers *serverSet, store *persister, levels func()) *router {
	return &router{servers: servers, store: store, levels: levels, subs: map[string]int{}}
}

// call is one client request on its way through the router: its session,
// the message, its params members decoded once, and where the upstream's
// messages about it go.
type call struct {
	s    *session
	m    *jsonrpc.Message
	p    params
	peer jsonrpc.Peer
}

// route is one row of the method table.
type route struct {
	// decode lists the params members the handler reads; they are decoded
	// in one pass before it runs.
	decode members
	serve  func(r *router, ctx context.Context, c *call) (json.RawMessage, error)
}

// routes is the method table of the session-era protocol.
var routes = map[string]route{
	"ping":                     {serve: (*router).ping},
	"tools/list":               {decode: mCursor, serve: (*router).list},
	"prompts/list":             {decode: mCursor, serve: (*router).list},
	"resources/list":           {decode: mCursor, serve: (*router).list},
	"resources/templates/list": {decode: mCursor, serve: (*router).list},
	"logging/setLevel":         {decode: mLevel, serve: (*router).setLevel},
	"tools/call":               {decode: mName, serve: (*router).callNamed},
	"prompts/get":              {decode: mName, serve: (*router).callNamed},
	"resources/read":           {decode: mURI, serve: (*router).readResource},
	"resources/subscribe":      {decode: mURI, serve: (*router).subscribe},
	"resources/unsubscribe":    {decode: mURI, serve: (*router).subscribe},
	"completion/complete":      {decode: mRef, serve: (*router).complete},
	"initialize":               {serve: (*router).reinitialize},
}

// route answers one client request through the method table.
func (r *router) route(ctx context.Context, s *session, m *jsonrpc.Message, peer jsonrpc.Peer) (json.RawMessage, error) {
	rt, ok := routes[m.Method]
	if !ok {
		return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "method not found: %s", m.Method)
	}
	return rt.serve(r, ctx, &call{s: s, m: m, p: decodeParams(m.Params, rt.decode), peer: peer})
}

func (r *router) ping(context.Context, *call) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}

func (r *router) reinitialize(context.Context, *call) (json.RawMessage, error) {
	return nil, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "the session is already initialized")
}

// setLevel records the session's log level and re-applies the upstreams'.
func (r *router) setLevel(_ context.Context, c *call) (json.RawMessage, error) {
	if levelRank(c.p.level) < 0 {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid log level %q; use one of %s", c.p.level, strings.Join(logLevels, ", "))
	}
	c.s.mu.Lock()
	c.s.logLevel = c.p.level
	c.s.mu.Unlock()
	r.store.saveSession(context.Background(), c.s, false)
	r.levels()
	return json.RawMessage(`{}`), nil
}

// view returns the catalog of a session's endpoint, or why there is none.
func (r *router) view(s *session) (*catalog, error) {
	if c := r.servers.view(s.endpoint); c != nil {
		return c, nil
	}
	return nil, describeUnavailable(s.endpoint, UpstreamStatus{State: "removed"})
}

// list answers a merged list call from the session's view. While servers are
// still starting it waits (up to the warmup period) so a client that
// connects with the hub sees their items.
func (r *router) list(ctx context.Context, c *call) (json.RawMessage, error) {
	if !r.servers.warmed(ctx) {
		return nil, ctx.Err()
	}
	view, err := r.view(c.s)
	if err != nil {
		return nil, err
	}
	items, next, err := view.page(c.m.Method, c.p.cursor)
	if err != nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid cursor: pass back a nextCursor exactly as received")
	}
	out := make([]byte, 0, 64+len(items)*256)
	out = append(out, '{')
	out = jsonrpc.AppendString(out, listMember(c.m.Method))
	out = append(out, ':')
	out = jsonrpc.AppendArray(out, items)
	if next != "" {
		out = append(out, `,"nextCursor":`...)
		out = jsonrpc.AppendString(out, next)
	}
	return append(out, '}'), nil
}

// callNamed finds the tool (tools/call) or prompt (prompts/get) a call
// names in the session's view and forwards it to its server.
func (r *router) callNamed(ctx context.Context, c *call) (json.RawMessage, error) {
	view, err := r.view(c.s)
	if err != nil {
		return nil, err
	}
	kind, lookup, index := "tool", view.tool, view.toolIndex
	if c.m.Method == "prompts/get" {
		kind, lookup, index = "prompt", view.prompt, view.promptIndex
	} else if view.search != nil {
		if res, handled, err := r.searchCall(ctx, c, view); handled {
			return res, err
		}
	}
	entry, ok := lookup(c.p.name)
	if !ok {
		e := unknownName(kind, c.p.name, mapKeys(index))
		if why := r.notServing(c.s.endpoint, c.p.name); why != "" {
			e.Message += "; " + why
		} else if why := r.outsideProfile(c.s.endpoint, kind, c.p.name); why != "" {
			e.Message += "; " + why
		}
		return nil, e
	}
	return r.forwardNamed(ctx, c, c.p.name, entry, c.m.Params)
}

// notServing explains an unknown name that may belong to a server that is
// not connected: the server the name's prefix names on /mcp, or the
// endpoint's own server, with its state and last error (a child's exit
// status and stderr, an unset variable), so the client's user learns why
// the tool is missing and not just that it is.
func (r *router) notServing(endpoint, name string) string {
	reg := r.servers.registry()
	sep := reg.Hub.Separator
	// Views over several servers know a server by its prefix; a profile
	// without prefixes only when it has one server.
	byPrefix := !serverEndpoint(endpoint)
	of := r.servers.of(endpoint)
	if p, ok := endpointProfile(endpoint); ok {
		if prof := reg.Profile(p); prof != nil && !prof.Prefixed && len(of) == 1 {
			byPrefix = false
		}
	}
	for _, e := range of {
		if byPrefix && (e.spec.Prefix == "" || !strings.HasPrefix(name, e.spec.Prefix+sep)) {
			continue
		}
		st := e.up.Status()
		if st.State == api.StateConnected {
			continue
		}
		return describeUnavailable(e.spec.Name, st).Error()
	}
	return ""
}

// outsideProfile says, for a name a profile's session does not know, that
// the profile (all a caller limited to it may use) is what lacks it. It
// does not say whether the hub serves the name elsewhere: a caller limited
// to a profile learns nothing of what is outside it.
func (r *router) outsideProfile(endpoint, kind, name string) string {
	p, ok := endpointProfile(endpoint)
	if !ok {
		return ""
	}
	return fmt.Sprintf("this session is on profile %s, which offers no %s of that name; a %s outside it needs a key or a group with a profile that offers it", p, kind, kind)
}

// forwardNamed forwards a call on a tool or prompt that params name as
// exposed to its server, rewriting only the name member to the server's
// own and setting the arguments an override fixes; the other arguments
// travel as the client sent them.
func (r *router) forwardNamed(ctx context.Context, c *call, exposed string, entry named, params json.RawMessage) (json.RawMessage, error) {
	if entry.name != exposed {
		var err error
		if params, err = jsonrpc.SetMember(params, "name", jsonrpc.Quote(entry.name)); err != nil {
			return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "params must be an object")
		}
	}
	if len(entry.fixed) > 0 {
		var err error
		if params, err = fillArgs(params, entry.fixed); err != nil {
			return nil, err
		}
	}
	return r.forward(ctx, c.s, entry.server, c.m.Method, params, c.peer)
}

func (r *router) readResource(ctx context.Context, c *call) (json.RawMessage, error) {
	server, err := r.resourceOwner(c.s, c.p.uri)
	if err != nil {
		return nil, err
	}
	return r.forward(ctx, c.s, server, c.m.Method, c.m.Params, c.peer)
}

// forward sends a request to a server with the right timeout: call_timeout
// for tools/call, request_timeout otherwise.
func (r *router) forward(ctx context.Context, s *session, server, method string, params json.RawMessage, peer jsonrpc.Peer) (json.RawMessage, error) {
	e := r.servers.get(server)
	if e == nil {
		return nil, describeUnavailable(server, UpstreamStatus{State: "removed"})
	}
	timeout := r.servers.registry().Hub.RequestTimeout
	if method == "tools/call" {
		timeout = e.spec.CallTimeout
	}
	if sp, ok := peer.(*sessionPeer); ok {
		sp.server = server
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, &timeoutError{server: server, method: method, timeout: timeout})
	defer cancel()
	st := e.up.Status()
	stateless := jsonrpc.EraOf(s.version) == jsonrpc.EraStateless
	if stateless && st.Protocol != jsonrpc.Version20260728 {
		// A session-era server negotiated once, with mcphub: the request's
		// protocol version and log level are not for it, what it says of
		// its client is.
		params = jsonrpc.StripHopMeta(params)
	}
	// The era is chosen once for the call and every round of it: a
	// session-era client's call takes a dual-era server's session-era
	// connection as it is, or is translated over the stateless one.
	// Subscriptions of both eras stay on the shared connection, counted
	// together, whose updates reach every subscriber.
	translate := sessionOverStateless(s, st)
	sessionEra := !stateless && !translate && method != "resources/subscribe" && method != "resources/unsubscribe"
	if !stateless && st.Protocol == jsonrpc.Version20260728 && len(s.caps.raw) > 0 {
		// A stateless server reads the client's capabilities in each
		// request and asks only for what that client can give: this
		// session's, not mcphub's. They go along even to a dual-era
		// server's session-era connection, whose server may read them
		// too, in case the call lands on a stateless one after all (a
		// session's own connection made while the server's eras were
		// unknown).
		if p, err := jsonrpc.SetMeta(params, jsonrpc.MetaClientCapabilities, s.caps.raw); err == nil {
			params = p
		}
	}
	res, err := e.up.Call(ctx, s.id, sessionEra, method, params, peer)
	// A session-era client never sees input_required, even from a
	// connection replaced by a stateless one during the call.
	if err == nil && !stateless && (translate || jsonrpc.InputRequired(res)) {
		res, err = r.fulfilInputs(ctx, e.up, s, method, params, peer, res)
	}
	if err != nil && ctx.Err() != nil && errors.Is(context.Cause(ctx), errTimeout) {
		return nil, context.Cause(ctx)
	}
	return res, err
}

// sessionOverStateless reports whether a session-era session's calls to
// a server are translated: the server is spoken to in 2026-07-28 alone. A
// server that speaks both eras takes them over its session-era connection
// as they are.
func sessionOverStateless(s *session, st UpstreamStatus) bool {
	return jsonrpc.EraOf(s.version) == jsonrpc.EraSession && st.Protocol == jsonrpc.Version20260728 && st.SessionProtocol == ""
}

// resourceOwner finds the server whose resource or template covers uri.
func (r *router) resourceOwner(s *session, uri string) (string, error) {
	if uri == "" {
		return "", jsonrpc.NewError(jsonrpc.CodeInvalidParams, "params.uri is required")
	}
	if c := r.servers.view(s.endpoint); c != nil {
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
func (r *router) subscribe(ctx context.Context, c *call) (json.RawMessage, error) {
	server, err := r.resourceOwner(c.s, c.p.uri)
	if err != nil {
		return nil, err
	}
	on := c.m.Method == "resources/subscribe"
	c.s.mu.Lock()
	_, had := c.s.subs[c.p.uri]
	if on {
		c.s.subs[c.p.uri] = struct{}{}
	} else {
		delete(c.s.subs, c.p.uri)
	}
	c.s.mu.Unlock()
	if had == on {
		return json.RawMessage(`{}`), nil
	}
	r.store.saveSession(context.Background(), c.s, false)
	if !r.countSubscription(server, c.s.id, c.p.uri, on) {
		return json.RawMessage(`{}`), nil
	}
	return r.forward(ctx, c.s, server, c.m.Method, c.m.Params, nil)
}

// countSubscription keeps the number of sessions subscribed to a URI and
// reports whether the upstream must hear of this change. A session's own
// upstream connection (share = "session") always does; stateless clients
// (session "") share one connection and are counted.
func (r *router) countSubscription(server, session, uri string, on bool) bool {
	if e := r.servers.get(server); e != nil && e.spec.Share == "session" && session != "" {
		return true
	}
	key := server + "\x00" + uri
	r.mu.Lock()
	defer r.mu.Unlock()
	if on {
		r.subs[key]++
		return r.subs[key] == 1
	}
	r.subs[key]--
	if r.subs[key] <= 0 {
		delete(r.subs, key)
		return true
	}
	return false
}

// release drops an ended session's subscriptions, unsubscribing upstream
// where it was the last subscriber.
func (r *router) release(s *session) {
	uris := s.subscriptions()
	s.mu.Lock()
	s.subs = map[string]struct{}{}
	s.mu.Unlock()
	view, merged := r.servers.view(s.endpoint), r.servers.view("")
	for _, uri := range uris {
		// The session's view may have dropped the server since (a
		// profile edited to leave it out): every server is in /mcp.
		server, ok := "", false
		if view != nil {
			server, ok = view.resourceServer(uri)
		}
		if !ok {
			server, ok = merged.resourceServer(uri)
		}
		if !ok || !r.countSubscription(server, s.id, uri, false) {
			continue
		}
		if e := r.servers.get(server); e != nil {
			ctx, cancel := context.WithTimeout(r.servers.ctx, 5*time.Second)
			params := fmt.Appendf(nil, `{"uri":%s}`, jsonrpc.Quote(uri))
			if _, err := e.up.Call(ctx, s.id, false, "resources/unsubscribe", params, nil); err != nil {
				r.servers.log.Debug("could not unsubscribe", "server", server, "err", err)
			}
			cancel()
		}
	}
}

// complete routes completion/complete by its reference: a prompt by its
// exposed name (rewritten to the server's own), a resource template by URI.
func (r *router) complete(ctx context.Context, c *call) (json.RawMessage, error) {
	ref := c.p.ref
	if ref.raw == nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "params.ref is required")
	}
	switch ref.typ {
	case "ref/prompt":
		view, err := r.view(c.s)
		if err != nil {
			return nil, err
		}
		entry, ok := view.prompt(ref.name)
		if !ok {
			return nil, unknownName("prompt", ref.name, mapKeys(view.promptIndex))
		}
		params := c.m.Params
		if entry.name != ref.name {
			newRef, err := jsonrpc.SetMember(ref.raw, "name", jsonrpc.Quote(entry.name))
			if err == nil {
				params, err = jsonrpc.SetMember(params, "ref", newRef)
			}
			if err != nil {
				return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "malformed params")
			}
		}
		return r.forward(ctx, c.s, entry.server, c.m.Method, params, c.peer)
	case "ref/resource":
		server, err := r.resourceOwner(c.s, ref.uri)
		if err != nil {
			return nil, err
		}
		return r.forward(ctx, c.s, server, c.m.Method, c.m.Params, c.peer)
	}
	return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "unknown ref type %q", ref.typ)
}

// notify handles what a client notifies.
func (r *router) notify(s *session, m *jsonrpc.Message) {
	switch m.Method {
	case "notifications/cancelled":
		id, _ := jsonrpc.Member(m.Params, "requestId")
		if !s.cancelCall(id) {
			r.servers.log.Debug("cancellation for no in-flight request", "session", s.id, "rpc_id", string(id))
		}
	case "notifications/roots/list_changed":
		for _, e := range r.servers.of(s.endpoint) {
			ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
			if err := e.up.Notify(ctx, s.id, m.Method, m.Params); err != nil {
				r.servers.log.Debug("could not forward roots/list_changed", "server", e.spec.Name, "err", err)
			}
			cancel()
		}
	}
}

// resubscribe renews, once each server connects, the resource subscriptions
// that restored sessions hold; group owns the goroutines it starts.
func (r *router) resubscribe(sessions []*session, group *goroutines.Group) {
	type sub struct {
		s   *session
		uri string
	}
	byServer := map[string][]sub{}
	for _, s := range sessions {
		view := r.servers.view(s.endpoint)
		if view == nil {
			continue
		}
		for _, uri := range s.subscriptions() {
			if server, ok := view.resourceServer(uri); ok {
				byServer[server] = append(byServer[server], sub{s, uri})
			}
		}
	}
	for server, subs := range byServer {
		group.Go(func() {
			if !r.servers.waitConnected(server) {
				return
			}
			for _, sb := range subs {
				if !r.countSubscription(server, sb.s.id, sb.uri, true) {
					continue
				}
				params := fmt.Appendf(nil, `{"uri":%s}`, jsonrpc.Quote(sb.uri))
				if _, err := r.forward(r.servers.ctx, sb.s, server, "resources/subscribe", params, nil); err != nil {
					r.servers.log.Warn("could not renew a subscription after restart", "server", server, "uri", sb.uri, "err", err)
				}
			}
		})
	}
}
