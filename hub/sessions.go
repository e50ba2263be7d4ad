package hub

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/internal/goroutines"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// sessionSet is the hub's part that owns the client sessions: the table of
// live sessions with its caps, their streams, and serving their POST, GET
// and DELETE requests once the edge has checked them (endpoint.go). It hands
// each request to the router and ends sessions cleanly: calls cancelled,
// subscriptions released, per-session upstreams closed.
type sessionSet struct {
	ctx       context.Context
	log       *slog.Logger
	version   string        // mcphub's version, as serverInfo
	heartbeat time.Duration // idle interval of SSE streams
	servers   *serverSet
	router    *router
	fanout    *fanout
	store     *persister // nil without a store
	// group runs the hub's background work (subscription renewals).
	group *goroutines.Group
	// takeoverUp makes the upstream that finishes a taken-over session's
	// calls (Options.Takeover); nil when there is none. takeMu runs the
	// batches of takeovers one at a time.
	takeoverUp TakeoverFunc
	takeMu     sync.Mutex

	mu   sync.RWMutex
	byID map[string]*session

	// listeners are the open subscriptions/listen streams of stateless
	// clients (see listen).
	lmu       sync.Mutex
	listeners map[*listener]struct{}

	// parked are stateless calls waiting for their client's input.
	parked parkedCalls

	// levels counts the stateless requests in flight by the log level
	// their _meta asks for (guarded by lmu).
	levels map[string]int

	// calls are the goroutines that run calls answered on an SSE stream:
	// they outlive their HTTP request, and closeAll waits for them.
	calls goroutines.Group

	bufOnce sync.Once
	buf     *buffers
}

// buffers returns the memory accounting of the sessions' streams.
func (set *sessionSet) buffers() *buffers {
	set.bufOnce.Do(func() {
		set.buf = &buffers{limits: func() (int64, int64) {
			h := set.servers.registry().Hub
			return h.StreamBufferBytes, h.BufferBytes
		}}
	})
	return set.buf
}

// sweepInterval is how often idle sessions and old events are swept.
var sweepInterval = time.Minute

// errSessionCap is why a new session was refused.
type errSessionCap struct{ msg string }

func (e *errSessionCap) Error() string { return e.msg }

// add registers a new session. At its endpoint's cap ([hub] max_sessions
// for /mcp, max_sessions_per_server for /{server}/mcp) the least recently
// active session that is not in use (no open stream, no request in flight)
// is ended to make room: its client gets 404 on its next request and
// initializes again, as the spec intends for a session the server has let
// go. Only when every session is in use is the new one refused. The cap is
// checked under the lock that adds the session, so concurrent initializes
// cannot overshoot it.
func (set *sessionSet) add(s *session) error {
	h := set.servers.registry().Hub
	limit, setting := h.MaxSessions, "max_sessions"
	if serverEndpoint(s.endpoint) {
		limit, setting = h.MaxSessionsPerServer, "max_sessions_per_server"
	}
	set.mu.Lock()
	if set.ctx.Err() != nil {
		set.mu.Unlock()
		return &errSessionCap{"mcphub is shutting down"}
	}
	var evicted []*session
	for n := set.countLocked(s.endpoint); n >= limit; n-- {
		victim := set.idlestLocked(s.endpoint)
		if victim == nil {
			set.mu.Unlock()
			set.finishEnd(evicted, "evicted")
			return &errSessionCap{fmt.Sprintf("%s already has %d sessions in use, its cap ([hub] %s = %d); end unused ones (mcphub sessions rm ID) or raise the cap",
				endpointName(s.endpoint), n, setting, limit)}
		}
		delete(set.byID, victim.id)
		evicted = append(evicted, victim)
	}
	s.buf = set.buffers()
	set.byID[s.id] = s
	set.mu.Unlock()
	set.finishEnd(evicted, "evicted")
	return nil
}

// idlestLocked returns the endpoint's least recently active session that is
// not in use, nil when every one is; set.mu is held.
func (set *sessionSet) idlestLocked(endpoint string) *session {
	var idlest *session
	var seen int64
	for _, s := range set.byID {
		if s.endpoint != endpoint {
			continue
		}
		if last := s.lastSeen.Load(); (idlest == nil || last < seen) && !s.busy() {
			idlest, seen = s, last
		}
	}
	return idlest
}

func (set *sessionSet) countLocked(endpoint string) int {
	n := 0
	for _, s := range set.byID {
		if s.endpoint == endpoint {
			n++
		}
	}
	return n
}

// count reports the live sessions of an endpoint.
func (set *sessionSet) count(endpoint string) int {
	set.mu.RLock()
	defer set.mu.RUnlock()
	return set.countLocked(endpoint)
}

// get returns a live session, nil for an unknown id.
func (set *sessionSet) get(id string) *session {
	set.mu.RLock()
	defer set.mu.RUnlock()
	return set.byID[id]
}

// list returns the live sessions.
func (set *sessionSet) list() []*session {
	set.mu.RLock()
	defer set.mu.RUnlock()
	out := make([]*session, 0, len(set.byID))
	for _, s := range set.byID {
		out = append(out, s)
	}
	return out
}

// len counts the live sessions.
func (set *sessionSet) len() int {
	set.mu.RLock()
	defer set.mu.RUnlock()
	return len(set.byID)
}

// of returns the sessions that see server: every /mcp session, the
// server's own /{server}/mcp sessions and those of the profiles that
// select it; for a per-session connection, just that session.
func (set *sessionSet) of(server, sessionID string) []*session {
	set.mu.RLock()
	defer set.mu.RUnlock()
	if sessionID != "" {
		if s := set.byID[sessionID]; s != nil {
			return []*session{s}
		}
		return nil
	}
	sees := set.servers.seers(server)
	var out []*session
	for _, s := range set.byID {
		if sees(s.endpoint) {
			out = append(out, s)
		}
	}
	return out
}

// end ends a session: its calls are cancelled, its subscriptions released,
// and per-session upstream connections closed.
func (set *sessionSet) end(s *session) {
	set.mu.Lock()
	_, live := set.byID[s.id]
	delete(set.byID, s.id)
	set.mu.Unlock()
	if !live {
		return // ended already: a DELETE, a sweep or a removed server got here first
	}
	set.finishEnd([]*session{s}, "ended")
}

// finishEnd ends sessions already taken out of the table: their calls are
// cancelled, their memory and stored state freed, their subscriptions and
// per-session upstreams released.
func (set *sessionSet) finishEnd(ended []*session, how string) {
	if len(ended) == 0 {
		return
	}
	for _, s := range ended {
		s.close()
		set.store.deleteSession(s.id)
		set.router.release(s)
		for _, e := range set.servers.of(s.endpoint) {
			e.up.SessionClosed(s.id)
		}
		set.log.Info("session "+how, "session", s.id, "endpoint", endpointName(s.endpoint))
	}
	set.fanout.applyLevels()
}

// endEndpoint ends every session of an endpoint: a server's own (the
// server was removed or disabled) or a profile's (the profile was removed).
func (set *sessionSet) endEndpoint(endpoint string) {
	for _, s := range set.list() {
		if s.endpoint == endpoint {
			set.end(s)
		}
	}
	for _, l := range set.listenersOf("") {
		if l.endpoint == endpoint {
			l.end()
		}
	}
}

// cutStreams cuts every stream being served; each client resumes its
// streams with Last-Event-ID, meeting the edge's checks again.
func (set *sessionSet) cutStreams() {
	for _, s := range set.list() {
		s.disconnectStreams()
	}
}

// takeAll empties the table, returning the sessions it held.
func (set *sessionSet) takeAll() map[string]*session {
	set.mu.Lock()
	defer set.mu.Unlock()
	all := set.byID
	set.byID = map[string]*session{}
	return all
}

// closeAll ends every session's calls and streams as the hub stops; nothing
// is deleted from the store, so the next run restores them.
func (set *sessionSet) closeAll() {
	for _, s := range set.takeAll() {
		s.close()
	}
	set.parked.stop()
	set.calls.Stop()
}

// sweep ends sessions idle past the TTL, records when the others were last
// seen, and trims stored events to their budget.
func (set *sessionSet) sweep() {
	h := set.servers.registry().Hub
	ttl := h.SessionTTL
	cutoff := time.Now().Add(-ttl)
	switch recreated, err := set.store.check(set.list()); {
	case err != nil:
		set.log.Error("could not check the session store", "err", err)
	case recreated:
		set.log.Error("the session store was deleted while mcphub ran; it was created anew and the live sessions saved in it again, without the events they had stored",
			"sessions", set.len())
	}
	for _, s := range set.list() {
		busy := s.busy()
		if time.Unix(0, s.lastSeen.Load()).Before(cutoff) && !busy {
			set.log.Info("session expired", "session", s.id, "idle_ttl", ttl)
			set.end(s)
			continue
		}
		if busy {
			// In use now (an open stream, a call in flight): the store
			// must not expire it as idle.
			s.touch()
		}
		set.store.saveSession(context.Background(), s, false)
	}
	if err := set.store.sweep(cutoff, h); err != nil {
		set.log.Error("could not sweep the store", "err", err)
	}
}

// runSweeper sweeps every sweepInterval, and whenever the store has taken
// enough events since the last sweep, until the hub stops.
func (set *sessionSet) runSweeper() {
	t := time.NewTicker(sweepInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			set.sweep()
		case <-set.store.kicked():
			set.sweep()
		case <-set.ctx.Done():
			return
		}
	}
}

// info lists the live sessions, oldest first.
func (set *sessionSet) info() []api.SessionInfo {
	now := time.Now()
	var out []api.SessionInfo
	for _, s := range set.list() {
		name, _ := jsonrpc.StringMember(s.clientInfo, "name")
		version, _ := jsonrpc.StringMember(s.clientInfo, "version")
		info := api.SessionInfo{ID: s.id, Endpoint: endpointName(s.endpoint), Client: name, ClientVersion: version, Protocol: s.version,
			AgeSeconds:  now.Sub(s.created).Round(time.Second).Seconds(),
			IdleSeconds: now.Sub(time.Unix(0, s.lastSeen.Load())).Round(time.Second).Seconds()}
		info.OpenStreams = s.openStreams()
		info.StoredEvents, info.StoredBytes = set.store.counts(s.id)
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].AgeSeconds > out[j].AgeSeconds })
	return out
}

// openStream creates a stream of a session: persisted, and primed for
// sessions that resume from a priming event.
func (set *sessionSet) openStream(s *session, post bool, requestID []byte) (*stream, error) {
	st, err := s.openStream(post)
	if err != nil {
		return nil, err
	}
	st.requestID = requestID
	set.store.bindStream(s, st)
	set.store.saveStream(s, st)
	if s.primes() {
		st.append(nil, false)
	}
	return st, nil
}
