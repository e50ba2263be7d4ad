package hub

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/registry"
)

// codeLimited is the JSON-RPC error of a request over its caller's limits
// inside a session (outside one it is HTTP 429): in the range JSON-RPC
// leaves to servers.
const codeLimited = -32029

// callSlots counts each caller's tool calls in progress on this replica.
type callSlots struct {
	mu sync.Mutex
	n  map[string]int
}

// acquire takes one of a caller's max slots; release gives it back and may
// be called more than once.
func (cs *callSlots) acquire(id string, max int) (release func(), ok bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.n == nil {
		cs.n = map[string]int{}
	}
	if cs.n[id] >= max {
		return nil, false
	}
	cs.n[id]++
	var once sync.Once
	return func() {
		once.Do(func() {
			cs.mu.Lock()
			defer cs.mu.Unlock()
			if cs.n[id]--; cs.n[id] == 0 {
				delete(cs.n, id)
			}
		})
	}, true
}

// callerLimits is a caller's limits: its own, else the registry's.
func callerLimits(c Caller, l registry.Limits) (registry.Rate, int) {
	rate, calls := c.Rate, c.ConcurrentCalls
	if rate.IsZero() {
		rate = l.Rate
	}
	if calls == 0 {
		calls = l.ConcurrentCalls
	}
	return rate, calls
}

// noLimit is the release of a request that took no slot.
func noLimit() {}

// admit takes one request of its caller from the caller's rate limit and,
// for a tool call, one of its concurrent calls. It answers a request over
// either itself: 429 with Retry-After for a request outside a session, a
// JSON-RPC error (codeLimited) for one inside (inSession). release gives
// the call's slot back; it may be called more than once. A limiter that
// cannot be reached lets the request through: limits guard the upstreams'
// share, and the hub says so in its log.
func (e *edge) admit(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, inSession bool) (release func(), ok bool) {
	c := callerOf(r.Context())
	if c.ID == "replica" {
		return noLimit, true
	}
	who, subject := c.ID, c.principal()
	if subject == "" {
		who, subject = "anonymous", "anonymous" // auth is off: everyone is one caller
	}
	rate, calls := callerLimits(c, e.servers.registry().Hub.Limits)
	if rate.IsZero() && calls == 0 {
		return noLimit, true // the common case: nothing to count
	}
	refuse := func(wait time.Duration, why string) {
		e.logRefusal(who, why)
		msg := fmt.Sprintf("Too Many Requests: %s %s; retry in %s", who, why, wait.Round(time.Millisecond))
		if inSession {
			writeRPCError(w, http.StatusOK, m.ID, jsonrpc.NewError(codeLimited, msg))
			return
		}
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		writeRPCError(w, http.StatusTooManyRequests, m.ID, jsonrpc.NewError(codeLimited, msg))
	}
	if !rate.IsZero() && e.limiter != nil {
		wait, err := e.limiter.Take(subject, rate.PerSecond(), rate.Burst)
		switch {
		case err != nil:
			e.limiterDown(err)
		case wait > 0:
			refuse(wait, "may make "+rate.String()+" requests")
			return nil, false
		}
	}
	e.flushRefusals(who)
	if calls == 0 || m.Method != "tools/call" {
		return noLimit, true
	}
	// A stateless retry of this caller's call that asked for input goes on
	// with the slot the call holds while it waits. (In a session,
	// requestState means nothing: the call is a new one.)
	if state, _ := jsonrpc.StringMember(m.Params, "requestState"); !inSession && state != "" && e.sessions.parked.owns(state, c.principal()) {
		return noLimit, true
	}
	release, ok = e.acquireSlot(subject, calls)
	if !ok {
		refuse(time.Second, fmt.Sprintf("may have %d tool calls in progress at once", calls))
		return nil, false
	}
	return release, true
}

// acquireSlot takes one of a caller's call slots: across the team hub's
// replicas when it is one (falling back to this replica's own count, and
// saying so, when the store cannot be reached), else in this hub.
func (e *edge) acquireSlot(subject string, max int) (func(), bool) {
	if e.shared != nil {
		release, ok, err := e.shared.AcquireSlot(subject, max)
		if err == nil {
			return release, ok
		}
		if e.throttle(&e.slotsLogged) {
			e.log.Warn("calls in progress are counted on this replica alone: the store cannot be reached (logged at most every 10 s)", "err", err)
		}
	}
	return e.slots.acquire(subject, max)
}

// limiterDown logs that rate limits are not applied, at most every 10 s.
func (e *edge) limiterDown(err error) {
	if e.throttle(&e.limiterLogged) {
		e.log.Warn("rate limits are not applied: the store cannot be reached (logged at most every 10 s)", "err", err)
	}
}

// throttle reports whether a line logged at most every 10 s is due, by
// the unix nanoseconds in last.
func (e *edge) throttle(last *atomic.Int64) bool {
	now := time.Now().UnixNano()
	prev := last.Load()
	return now-prev >= int64(10*time.Second) && last.CompareAndSwap(prev, now)
}

// refusalLogEvery is how often the refusals of one caller over its limits
// are logged at most: a runaway agent makes thousands.
const refusalLogEvery = 10 * time.Second

// logRefusal logs a refusal over a caller's limits: the first, then at
// most one line per refusalLogEvery, counting those in between.
func (e *edge) logRefusal(subject, why string) {
	e.refusalsMu.Lock()
	if e.refusals == nil {
		e.refusals = map[string]*refusalLog{}
	}
	l := e.refusals[subject]
	if l == nil {
		l = &refusalLog{}
		e.refusals[subject] = l
	}
	now := time.Now()
	if now.Sub(l.logged) < refusalLogEvery {
		l.since++
		e.refusalsMu.Unlock()
		return
	}
	more := l.since
	l.logged, l.since = now, 0
	e.refusalsMu.Unlock()
	e.log.Warn("refused a request over its caller's limits", "caller", subject, "why", why, "refused_since_last_line", more)
}

// flushRefusals logs, at a caller's request that is let through, the
// count of its refusals not logged yet once refusalLogEvery has passed
// since the last line about them: the last of a burst is counted too.
func (e *edge) flushRefusals(who string) {
	e.refusalsMu.Lock()
	l := e.refusals[who]
	if l == nil || l.since == 0 || time.Since(l.logged) < refusalLogEvery {
		e.refusalsMu.Unlock()
		return
	}
	more := l.since
	l.logged, l.since = time.Now(), 0
	e.refusalsMu.Unlock()
	e.log.Warn("refused requests over their caller's limits", "caller", who, "refused_since_last_line", more)
}

// refusalLog is when a caller's refusals were last logged, and how many
// came since.
type refusalLog struct {
	logged time.Time
	since  int
}

// limitState is the edge's part of the limits.
type limitState struct {
	limiter       Limiter
	shared        SlotKeeper // the team hub's count of calls in progress; nil for a hub alone
	slots         callSlots
	limiterLogged atomic.Int64
	checkLogged   atomic.Int64 // for credentials that could not be checked
	slotsLogged   atomic.Int64 // for a team's call count that could not be reached
	refusalsMu    sync.Mutex
	refusals      map[string]*refusalLog
}
