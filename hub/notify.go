package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// listChangedMethods maps each list to the notification announcing a change.
var listChangedMethods = map[string]string{
	"tools/list":               "notifications/tools/list_changed",
	"prompts/list":             "notifications/prompts/list_changed",
	"resources/list":           "notifications/resources/list_changed",
	"resources/templates/list": "notifications/resources/list_changed",
}

// diffCatalogs schedules list_changed for the lists of an endpoint whose
// exposed items changed. Nothing is sent when a rebuild changed nothing a
// client of that endpoint sees.
func (h *Hub) diffCatalogs(endpoint string, old, new *catalog) {
	var changed []string
	for _, k := range listKinds {
		if old.digest[k.method] != new.digest[k.method] {
			changed = append(changed, k.method)
		}
	}
	if len(changed) == 0 {
		return
	}
	h.notifyMu.Lock()
	defer h.notifyMu.Unlock()
	set := h.pending[endpoint]
	if set == nil {
		set = map[string]bool{}
		h.pending[endpoint] = set
	}
	for _, m := range changed {
		set[listChangedMethods[m]] = true
	}
	h.pendingSince[endpoint] = time.Now()
	if h.timer == nil {
		h.timer = time.AfterFunc(h.opts.ListChangedDelay, h.flushListChanged)
	}
}

// flushListChanged sends the coalesced list_changed notifications of the
// window that just ended: one per kind to every session of each endpoint
// whose view changed.
func (h *Hub) flushListChanged() {
	h.notifyMu.Lock()
	pending, since := h.pending, h.pendingSince
	h.pending, h.pendingSince = map[string]map[string]bool{}, map[string]time.Time{}
	h.timer = nil
	h.notifyMu.Unlock()
	if h.ctx.Err() != nil {
		return
	}
	for _, s := range h.sessionList() {
		if s.created.After(since[s.endpoint]) {
			continue // it started after the change and saw the new lists
		}
		methods := pending[s.endpoint]
		for _, m := range slices.Sorted(maps.Keys(methods)) {
			s.deliver(jsonrpc.NewNotification(m, nil).Encode())
		}
	}
}

// sessionList returns the live sessions.
func (h *Hub) sessionList() []*session {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]*session, 0, len(h.sessions))
	for _, s := range h.sessions {
		out = append(out, s)
	}
	return out
}

// sessionsOf returns the sessions that see server: every /mcp session and the
// server's own /{server}/mcp sessions; for a per-session connection, just
// that session.
func (h *Hub) sessionsOf(server, sessionID string) []*session {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if sessionID != "" {
		if s := h.sessions[sessionID]; s != nil {
			return []*session{s}
		}
		return nil
	}
	var out []*session
	for _, s := range h.sessions {
		if s.endpoint == "" || s.endpoint == server {
			out = append(out, s)
		}
	}
	return out
}

// upstreamNotification routes a notification that belongs to no call.
func (h *Hub) upstreamNotification(server, sessionID string, msg *jsonrpc.Message) {
	switch msg.Method {
	case "notifications/resources/updated":
		uri, _ := jsonrpc.StringMember(msg.Params, "uri")
		data := msg.Encode()
		for _, s := range h.sessionsOf(server, sessionID) {
			s.mu.Lock()
			_, subscribed := s.subs[uri]
			s.mu.Unlock()
			if subscribed {
				s.deliver(data)
			}
		}
	case "notifications/message":
		level, _ := jsonrpc.StringMember(msg.Params, "level")
		data := msg.Encode()
		for _, s := range h.sessionsOf(server, sessionID) {
			if admits(s.level(), level) {
				s.deliver(data)
			}
		}
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		// The upstream refreshes its lists and reports Changed; the hub
		// then sends its own coalesced list_changed.
	default:
		// Other notifications pass through to the clients of the
		// server's own endpoint, which see it as it is; the merged view
		// has no place for them.
		data := msg.Encode()
		for _, s := range h.sessionsOf(server, sessionID) {
			if s.endpoint == server {
				s.deliver(data)
			}
		}
	}
}

// upstreamRequest routes a server-to-client request that belongs to no call:
// to its own session for a per-session connection, else to the most recently
// active session that sees the server and declared the capability.
func (h *Hub) upstreamRequest(ctx context.Context, server, sessionID, method string, params json.RawMessage) (json.RawMessage, error) {
	var best *session
	for _, s := range h.sessionsOf(server, sessionID) {
		if !s.caps.allows(method) {
			continue
		}
		if best == nil || s.lastSeen.Load() > best.lastSeen.Load() {
			best = s
		}
	}
	if best == nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "no client connected to mcphub can answer %s", method)
	}
	return best.request(ctx, method, params, best.deliver)
}

// allows reports whether the client declared the capability a
// server-to-client request needs.
func (c clientCaps) allows(method string) bool {
	switch method {
	case "sampling/createMessage":
		return c.sampling
	case "elicitation/create":
		return c.elicitation
	case "roots/list":
		return c.roots
	case "ping":
		return true
	}
	return false
}

// logLevels are the syslog severities MCP uses, least severe first.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// defaultLogLevel applies to sessions that never called logging/setLevel.
const defaultLogLevel = "info"

func levelRank(l string) int { return slices.Index(logLevels, l) }

// admits reports whether a session at level wants a message at msgLevel.
func admits(level, msgLevel string) bool {
	if level == "" {
		level = defaultLogLevel
	}
	r := levelRank(msgLevel)
	return r < 0 || r >= levelRank(level)
}

// applyLogLevels sets every upstream to the lowest level any session wants.
func (h *Hub) applyLogLevels() {
	want := ""
	for _, s := range h.sessionList() {
		l := s.level()
		if l == "" {
			l = defaultLogLevel
		}
		if want == "" || levelRank(l) < levelRank(want) {
			want = l
		}
	}
	if want == "" {
		return
	}
	h.mu.RLock()
	servers := make(map[string]Upstream, len(h.servers))
	for n, e := range h.servers {
		servers[n] = e.up
	}
	h.mu.RUnlock()
	h.logMu.Lock()
	defer h.logMu.Unlock()
	for n, up := range servers {
		if h.upLevels[n] != want {
			h.upLevels[n] = want
			up.SetLogLevel(want)
		}
	}
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
