package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// initialize creates a session and answers initialize itself: the
// negotiated version, the capabilities of the endpoint's view, mcphub's
// serverInfo and the upstreams' instructions.
func (h *Hub) initialize(w http.ResponseWriter, r *http.Request, endpoint string, m *jsonrpc.Message) {
	requested, _ := jsonrpc.StringMember(m.Params, "protocolVersion")
	caps, _ := jsonrpc.Member(m.Params, "capabilities")
	info, _ := jsonrpc.Member(m.Params, "clientInfo")
	version := jsonrpc.NegotiateVersion(requested)

	// Wait for servers that are still starting, so the capabilities and
	// lists the client sees are whole.
	select {
	case <-h.warm:
	case <-r.Context().Done():
		return
	}
	s := newSession(h.ctx, endpoint, version, info, caps)
	h.mu.Lock()
	// The caps are checked under the same lock that adds the session, so
	// concurrent initializes cannot overshoot them.
	if msg := h.capExceededLocked(endpoint); msg != "" || h.ctx.Err() != nil {
		h.mu.Unlock()
		s.close()
		if msg == "" {
			msg = "mcphub is shutting down"
		}
		h.log.Warn("refused a session", "endpoint", endpointName(endpoint), "reason", msg)
		httpError(w, http.StatusServiceUnavailable, "Service Unavailable: "+msg)
		return
	}
	h.sessions[s.id] = s
	h.mu.Unlock()
	h.saveSession(s, true)
	h.applyLogLevels()
	name, _ := jsonrpc.StringMember(info, "name")
	h.log.Info("session started", "session", s.id, "endpoint", endpointName(endpoint), "client", name, "protocol", version)

	w.Header().Set("Mcp-Session-Id", s.id)
	w.Header().Set("Content-Type", "application/json")
	w.Write(jsonrpc.NewResponse(m.ID, h.initializeResult(endpoint, version)).Encode())
}

// maxSessions bounds the sessions of /mcp.
var maxSessions = 1000

// capExceededLocked says why a new session on endpoint would exceed a cap,
// "" when it would not; h.mu is held.
func (h *Hub) capExceededLocked(endpoint string) string {
	n := h.countSessionsLocked(endpoint)
	if endpoint == "" && n >= maxSessions {
		return fmt.Sprintf("/mcp already has %d sessions; end unused ones (mcphub sessions rm ID) or wait for them to expire", n)
	}
	if limit := h.reg.Hub.MaxSessionsPerServer; endpoint != "" && n >= limit {
		return fmt.Sprintf("/%s/mcp already has %d sessions, its cap ([hub] max_sessions_per_server = %d)", endpoint, n, limit)
	}
	return ""
}

func (h *Hub) countSessionsLocked(endpoint string) int {
	n := 0
	for _, s := range h.sessions {
		if s.endpoint == endpoint {
			n++
		}
	}
	return n
}

// initializeResult builds the initialize result of an endpoint's view.
func (h *Hub) initializeResult(endpoint, version string) json.RawMessage {
	if endpoint != "" {
		if e := h.server(endpoint); e != nil {
			if raw := e.up.Initialize(); raw != nil {
				return passThroughInitialize(raw, version)
			}
		}
	}
	type upstreamInit struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
		Instructions string                     `json:"instructions"`
	}
	var subscribe, completions bool
	var instructions []string
	for _, e := range h.serversSorted() {
		if endpoint != "" && e.spec.Name != endpoint {
			continue
		}
		raw := e.up.Initialize()
		if raw == nil {
			continue
		}
		var ui upstreamInit
		json.Unmarshal(raw, &ui)
		if res, ok := ui.Capabilities["resources"]; ok {
			if v, ok := jsonrpc.Member(res, "subscribe"); ok && string(v) == "true" {
				subscribe = true
			}
		}
		if _, ok := ui.Capabilities["completions"]; ok {
			completions = true
		}
		if ui.Instructions != "" {
			instructions = append(instructions, "## "+e.spec.Name+"\n"+strings.TrimSpace(ui.Instructions))
		}
	}
	capsJSON := `{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true`
	if subscribe {
		capsJSON += `,"subscribe":true`
	}
	capsJSON += `},"logging":{}`
	if completions {
		capsJSON += `,"completions":{}`
	}
	capsJSON += `}`
	out := fmt.Appendf(nil, `{"protocolVersion":%s,"capabilities":%s,"serverInfo":{"name":"mcphub","version":%s}`,
		jsonrpc.Quote(version), capsJSON, jsonrpc.Quote(h.opts.Version))
	if len(instructions) > 0 {
		text := "mcphub serves the tools, prompts and resources of several MCP servers. Their own instructions follow.\n\n" +
			strings.Join(instructions, "\n\n")
		out = append(out, `,"instructions":`...)
		out = jsonrpc.AppendString(out, text)
	}
	return append(out, '}')
}

// passThroughInitialize answers a per-server endpoint with the upstream's own
// result (its capabilities, serverInfo and instructions) at the version the
// hub negotiated with this client, declaring logging, which the hub handles.
func passThroughInitialize(raw json.RawMessage, version string) json.RawMessage {
	out, err := jsonrpc.SetMember(raw, "protocolVersion", jsonrpc.Quote(version))
	if err != nil {
		return raw
	}
	if caps, ok := jsonrpc.Member(out, "capabilities"); ok {
		if _, has := jsonrpc.Member(caps, "logging"); !has {
			if c, err := jsonrpc.SetMember(caps, "logging", json.RawMessage(`{}`)); err == nil {
				if o, err := jsonrpc.SetMember(out, "capabilities", c); err == nil {
					out = o
				}
			}
		}
	}
	return out
}

// serversSorted returns the enabled servers by name.
func (h *Hub) serversSorted() []*serverEntry {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]*serverEntry, 0, len(h.servers))
	for _, e := range h.servers {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b *serverEntry) int { return strings.Compare(a.spec.Name, b.spec.Name) })
	return out
}

// endSession ends a session: its calls are cancelled, its subscriptions
// released, and per-session upstream connections closed.
func (h *Hub) endSession(s *session) {
	h.mu.Lock()
	delete(h.sessions, s.id)
	h.mu.Unlock()
	s.close()
	if h.writer != nil {
		h.writer.add(StoreOp{DeleteSession: s.id}, nil)
	}
	s.mu.Lock()
	uris := make([]string, 0, len(s.subs))
	for uri := range s.subs {
		uris = append(uris, uri)
	}
	s.subs = map[string]struct{}{}
	s.mu.Unlock()
	for _, uri := range uris {
		c := h.view(s.endpoint)
		if c == nil {
			continue
		}
		server, ok := c.resourceServer(uri)
		if !ok || !h.countSubscription(server, s.id, uri, false) {
			continue
		}
		if e := h.server(server); e != nil {
			ctx, cancel := context.WithTimeout(h.ctx, 5*time.Second)
			params := fmt.Appendf(nil, `{"uri":%s}`, jsonrpc.Quote(uri))
			if _, err := e.up.Call(ctx, s.id, "resources/unsubscribe", params, nil); err != nil {
				h.log.Debug("could not unsubscribe", "server", server, "err", err)
			}
			cancel()
		}
	}
	for _, e := range h.serversOf(s) {
		e.up.SessionClosed(s.id)
	}
	h.applyLogLevels()
	h.log.Info("session ended", "session", s.id, "endpoint", endpointName(s.endpoint))
}

// sessionPeer delivers what an upstream sends about one call to the session
// that made it: on the call's own SSE stream, or its standalone stream.
type sessionPeer struct {
	h      *Hub
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
// can still finish it (see Adopter). Upstreams call it when they can.
func (p *sessionPeer) Forwarded(upstreamID json.RawMessage, hubToken string, progressToken json.RawMessage) {
	switch {
	case p.lazy != nil:
		p.lazy.forwarded(forwardInfo{server: p.server, upstreamID: upstreamID, hubToken: hubToken, progressToken: progressToken})
	case p.h != nil:
		p.h.saveCall(p.st, p.server, upstreamID, hubToken, progressToken)
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

// Status reports the hub's state for /readyz, `mcphub status` and `list`.
func (h *Hub) Status() Status {
	h.mu.RLock()
	reg, regErr, merged, nsess := h.reg, h.regErr, h.merged, len(h.sessions)
	h.mu.RUnlock()
	st := Status{Version: h.opts.Version, URL: reg.Hub.URL("/mcp"), RegistryError: regErr, Sessions: nsess}
	for _, spec := range reg.Servers {
		ss := ServerStatus{Name: spec.Name, State: StateDisabled}
		if e := h.server(spec.Name); e != nil {
			us := e.up.Status()
			ss.State, ss.Transport, ss.PID, ss.LastError, ss.Restarts = us.State, us.Transport, us.PID, us.LastError, us.Restarts
			if !us.Since.IsZero() && us.State == StateConnected {
				ss.UptimeSeconds = time.Since(us.Since).Round(time.Second).Seconds()
			}
			ss.Tools, ss.Prompts, ss.Resources = len(e.up.List("tools/list")), len(e.up.List("prompts/list")), len(e.up.List("resources/list"))
			ss.Conflicts = merged.conflicts[spec.Name]
		}
		st.Servers = append(st.Servers, ss)
	}
	return st
}

// serveReady answers /readyz: 200 with the status while serving.
func (h *Hub) serveReady(w http.ResponseWriter, _ *http.Request) {
	status := http.StatusOK
	if h.ctx.Err() != nil {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, h.Status())
}
