package hub

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
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

// fanout is the hub's part that delivers what belongs to no call: the
// coalesced list_changed of every view whose lists changed, the
// notifications and server-to-client requests upstreams send outside a call,
// and the log level each upstream is asked for.
type fanout struct {
	ctx      context.Context
	delay    time.Duration // the window list_changed is coalesced over
	sessions *sessionSet
	servers  *serverSet

	mu           sync.Mutex
	pending      map[string]map[string]bool // endpoint → list_changed methods awaiting the window
	pendingSince map[string]time.Time       // endpoint → when its latest change happened
	timer        *time.Timer

	levelMu  sync.Mutex
	upLevels map[Upstream]string // level last sent to each running upstream
	// lastLevel is the level last applied and levelsAt the generation of
	// the serverSet's entries it was applied to: with the same upstreams
	// and the same level there is nothing to send, and nothing to look at.
	lastLevel string
	levelsAt  uint64
}

func newFanout(ctx context.Context, delay time.Duration) *fanout {
	return &fanout{ctx: ctx, delay: delay, pending: map[string]map[string]bool{}, pendingSince: map[string]time.Time{}, upLevels: map[Upstream]string{}}
}

// diff schedules list_changed for the lists of an endpoint whose exposed
// items changed. Nothing is sent when a rebuild changed nothing a client of
// that endpoint sees.
func (f *fanout) diff(endpoint string, old, new *catalog) {
	var changed []string
	for _, k := range listKinds {
		if old.digest[k.method] != new.digest[k.method] {
			changed = append(changed, k.method)
		}
	}
	if len(changed) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	set := f.pending[endpoint]
	if set == nil {
		set = map[string]bool{}
		f.pending[endpoint] = set
	}
	for _, m := range changed {
		set[listChangedMethods[m]] = true
	}
	f.pendingSince[endpoint] = time.Now()
	if f.timer == nil {
		f.timer = time.AfterFunc(f.delay, f.flush)
	}
}

// flush sends the coalesced list_changed notifications of the window that
// just ended: one per kind to every session of each endpoint whose view
// changed.
func (f *fanout) flush() {
	f.mu.Lock()
	pending, since := f.pending, f.pendingSince
	f.pending, f.pendingSince = map[string]map[string]bool{}, map[string]time.Time{}
	f.timer = nil
	f.mu.Unlock()
	if f.ctx.Err() != nil {
		return
	}
	for _, s := range f.sessions.list() {
		if s.created.After(since[s.endpoint]) {
			continue // it started after the change and saw the new lists
		}
		methods := pending[s.endpoint]
		for _, m := range slices.Sorted(maps.Keys(methods)) {
			s.deliver(jsonrpc.NewNotification(m, nil).Encode())
		}
	}
	for _, l := range f.sessions.listenersOf("") {
		if l.created.After(since[l.endpoint]) {
			continue
		}
		for _, m := range slices.Sorted(maps.Keys(pending[l.endpoint])) {
			if l.methods[m] {
				l.offer(jsonrpc.NewNotification(m, nil))
			}
		}
	}
}

// stop cancels a pending window.
func (f *fanout) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.timer != nil {
		f.timer.Stop()
	}
}

// notification routes a notification that belongs to no call.
func (f *fanout) notification(server, sessionID string, msg *jsonrpc.Message) {
	switch msg.Method {
	case "notifications/resources/updated":
		uri, _ := jsonrpc.StringMember(msg.Params, "uri")
		data := msg.Encode()
		for _, s := range f.sessions.of(server, sessionID) {
			if s.subscribed(uri) {
				s.deliver(data)
			}
		}
		if sessionID == "" {
			for _, l := range f.sessions.listenersOf(server) {
				if l.uris[uri] {
					l.offer(msg)
				}
			}
		}
	case "notifications/message":
		level, _ := jsonrpc.StringMember(msg.Params, "level")
		data := msg.Encode()
		for _, s := range f.sessions.of(server, sessionID) {
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
		for _, s := range f.sessions.of(server, sessionID) {
			if s.endpoint == server {
				s.deliver(data)
			}
		}
	}
}

// request routes a server-to-client request that belongs to no call: to its
// own session for a per-session connection, else to the most recently active
// session that sees the server and declared the capability.
func (f *fanout) request(ctx context.Context, server, sessionID, method string, params json.RawMessage) (json.RawMessage, error) {
	var best *session
	for _, s := range f.sessions.of(server, sessionID) {
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

// applyLevels sets every upstream to the lowest level any session, or any
// stateless request in flight, wants.
func (f *fanout) applyLevels() {
	// Computed and applied under one lock: two changes at once must not
	// leave the older level applied last.
	f.levelMu.Lock()
	defer f.levelMu.Unlock()
	want := f.sessions.statelessLevel()
	for _, s := range f.sessions.list() {
		l := s.level()
		if l == "" {
			l = defaultLogLevel
		}
		if want == "" || levelRank(l) < levelRank(want) {
			want = l
		}
	}
	// Levels are remembered per upstream, not per name: a replaced
	// connection is a new upstream and must be told.
	if want == "" {
		// Nobody wants messages: the servers keep the level they have,
		// unless one below the default was asked for by requests that
		// have ended, which would only cost traffic now.
		if f.lastLevel == "" || levelRank(f.lastLevel) >= levelRank(defaultLogLevel) {
			return
		}
		want = defaultLogLevel
	}
	running, gen := f.servers.upstreamsSince(f.levelsAt, want == f.lastLevel)
	if running == nil {
		return // the same upstreams were told this level
	}
	live := make(map[Upstream]string, len(running))
	for _, up := range running {
		if f.upLevels[up] != want {
			up.SetLogLevel(want)
		}
		live[up] = want
	}
	f.upLevels, f.lastLevel, f.levelsAt = live, want, gen
}
