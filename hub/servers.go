package hub

// The set of upstreams: the registry in force, one entry per enabled
// server, their start, warm-up, lookup and close, which endpoint sees which
// server, and the status rows of /api/status. rebuild.go builds the
// catalogs from these entries.

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/internal/goroutines"
	"github.com/mcphub/mcphub/internal/redact"
	"github.com/mcphub/mcphub/registry"
)

// serverSet is the hub's part that owns the upstreams: the registry in
// force, one Upstream per enabled server, and the catalogs built from them
// (the merged /mcp view and each server's own view). Catalogs are built off
// the request path by one rebuilder goroutine: a server whose state or
// lists changed is marked, and the rebuilder remakes only the marked
// servers' pieces and merges the views once per batch of changes (see
// buildViews), reporting each view's change through onDiff. Readers take
// the last published views without waiting for a build.
type serverSet struct {
	ctx         context.Context
	log         *slog.Logger
	newUpstream NewUpstreamFunc
	// events builds the callbacks an upstream reports through.
	events func(name string) UpstreamEvents
	// onDiff hears of every rebuilt view, old and new.
	onDiff func(endpoint string, old, new *catalog)
	// onSwap hears, without the lock, that upstreams were added or replaced.
	onSwap func()

	mu     sync.RWMutex
	reg    *registry.Registry
	regErr string // last registry error, when the running set is older
	// needsRestart names the [hub] settings of the registry in force that
	// the running hub could not apply (see needsRestart in apply.go).
	needsRestart []string
	entries      map[string]*serverEntry // enabled servers, by name
	members      uint64                  // counts changes to entries and reg, so a build knows to look at every server
	warm         chan struct{}           // closed once no server is starting, or after the warmup

	// views are the catalogs readers see: the last build's, published whole.
	views atomic.Pointer[views]
	// ordered caches sorted.
	ordered atomic.Pointer[ordered]
	// queue holds the servers marked for the next build.
	queue buildQueue
	// build is the builder's own state; only a build touches it.
	build builder

	group goroutines.Group // the rebuilder, the warmup, replacements and stops in the background
}

// serverEntry is one enabled server: its spec and its upstream. An entry is
// never modified once made: a new spec makes a new entry, so whoever holds
// one reads a consistent pair without the set's lock.
type serverEntry struct {
	spec *registry.Server
	up   Upstream
	// init caches what initialize takes from the upstream's own
	// initialize result, for as long as that result stays the same.
	init atomic.Pointer[initSummary]
}

func newServerSet(ctx context.Context, log *slog.Logger, reg *registry.Registry, newUp NewUpstreamFunc) *serverSet {
	ss := &serverSet{
		ctx: ctx, log: log, newUpstream: newUp, reg: reg,
		entries: map[string]*serverEntry{}, warm: make(chan struct{}),
	}
	ss.views.Store(&views{merged: mergePieces(nil), single: map[string]*catalog{}, profiles: map[string]*catalog{}})
	ss.queue.init()
	return ss
}

// create makes the upstream of every enabled server without starting it.
func (ss *serverSet) create() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, spec := range ss.reg.Servers {
		if spec.Enabled {
			ss.entries[spec.Name] = ss.newEntryLocked(spec)
		}
	}
	ss.members++
}

// start starts every upstream, builds the catalogs, and closes warm once no
// server is starting any more or after the warmup period.
func (ss *serverSet) start(warmup time.Duration) {
	ss.mu.RLock()
	for _, e := range ss.entries {
		e.up.Start(ss.ctx)
	}
	ss.mu.RUnlock()
	ss.rebuild()
	ss.group.Go(func() { ss.warmup(warmup) })
}

// newEntryLocked creates a server's upstream without starting it. A server
// whose entry has a problem (an unset ${VAR}, say) is refused with it, and
// so is one that points at this hub itself: connecting to it would loop
// every request back in. Either shows failed, with the reason.
func (ss *serverSet) newEntryLocked(spec *registry.Server) *serverEntry {
	if spec.Problem != "" {
		ss.log.Error("refused a server: its registry entry has a problem", "server", spec.Name, "problem", spec.Problem)
		return &serverEntry{spec: spec, up: refused{reason: spec.Problem}}
	}
	if ss.selfReferenceLocked(spec) {
		what := redact.URL(spec.URL)
		if spec.URL == "" {
			what = "the command " + filepath.Base(spec.Command) + " with its arguments"
		}
		reason := fmt.Sprintf("%s points at this mcphub itself (%s); refusing to connect to it", what, ss.reg.Hub.Listen)
		ss.log.Error("refused a server", "server", spec.Name, "reason", reason)
		return &serverEntry{spec: spec, up: refused{reason: reason}}
	}
	return &serverEntry{spec: spec, up: ss.newUpstream(spec, ss.reg.Hub, ss.events(spec.Name))}
}

// warmup closes ss.warm once no server is starting any more, or after d,
// whichever comes first. An upstream shows itself connected a moment
// before it reports the change (it renews its subscriptions and log level
// in between), so the warm-up ends with a build that looks at every server
// again: the first list or call sees what each connected server offers.
func (ss *serverSet) warmup(d time.Duration) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	defer close(ss.warm)
	for {
		if !ss.anyStarting() {
			ss.await(ss.queue.mark(ss, ss.names()...))
			return
		}
		select {
		case <-deadline.C:
			return
		case <-tick.C:
		case <-ss.ctx.Done():
			return
		}
	}
}

// warmed waits until the warmup is over or ctx ends, and reports which.
func (ss *serverSet) warmed(ctx context.Context) bool {
	select {
	case <-ss.warm:
		return true
	case <-ctx.Done():
		return false
	}
}

// names lists the servers of the set.
func (ss *serverSet) names() []string {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	out := make([]string, 0, len(ss.entries))
	for name := range ss.entries {
		out = append(out, name)
	}
	return out
}

// anyStarting reports whether a server is still connecting for the first
// time with nothing known of it; a server whose catalog is cached from the
// last run is served from the cache meanwhile.
func (ss *serverSet) anyStarting() bool {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	for _, e := range ss.entries {
		if e.up.Status().State == api.StateStarting && e.up.Initialize() == nil {
			return true
		}
	}
	return false
}

// changed is called by an upstream whose state or lists changed. It marks
// the server for the next build and returns once that build is published,
// so whoever reports a change sees it in the catalogs afterwards; changes
// reported meanwhile by other servers share the build.
func (ss *serverSet) changed(name string) {
	if ss.get(name) == nil {
		return
	}
	ss.await(ss.queue.mark(ss, name))
}

// rebuild builds the catalogs with every server looked at again and returns
// once they are published (at once when the set is closing).
func (ss *serverSet) rebuild() { ss.await(ss.queue.mark(ss)) }

// await waits for a build to be published, or for the set to close.
func (ss *serverSet) await(published <-chan struct{}) {
	select {
	case <-published:
	case <-ss.ctx.Done():
	}
}

// view returns the catalog of an endpoint, nil for an unknown server or
// profile. It never waits for a build.
func (ss *serverSet) view(endpoint string) *catalog {
	v := ss.views.Load()
	if endpoint == "" {
		return v.merged
	}
	if name, ok := endpointProfile(endpoint); ok {
		return v.profiles[name]
	}
	return v.single[endpoint]
}

// get returns an enabled server's entry, nil for any other name.
func (ss *serverSet) get(name string) *serverEntry {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return ss.entries[name]
}

// registry returns the registry in force.
func (ss *serverSet) registry() *registry.Registry {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return ss.reg
}

// sorted returns the enabled servers by name. The slice is shared by every
// caller until the entries change: it must not be modified.
func (ss *serverSet) sorted() []*serverEntry {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	if o := ss.ordered.Load(); o != nil && o.members == ss.members {
		return o.entries
	}
	o := &ordered{members: ss.members, entries: ss.sortedLocked()}
	ss.ordered.Store(o)
	return o.entries
}

// ordered is the enabled servers by name as of one generation of the
// entries.
type ordered struct {
	members uint64
	entries []*serverEntry
}

// upstreamsSince returns the running upstreams by server name and the
// generation of the entries they were taken at; with unchanged set it
// returns nil instead when the entries are still those of generation gen.
func (ss *serverSet) upstreamsSince(gen uint64, unchanged bool) (map[string]Upstream, uint64) {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	if unchanged && gen == ss.members {
		return nil, gen
	}
	out := make(map[string]Upstream, len(ss.entries))
	for name, e := range ss.entries {
		out[name] = e.up
	}
	return out, ss.members
}

// of returns the servers an endpoint sees: every one for /mcp, the one for
// /{server}/mcp, those a profile selects for its endpoint.
func (ss *serverSet) of(endpoint string) []*serverEntry {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	var out []*serverEntry
	for _, e := range ss.entries {
		if endpointSees(ss.reg, endpoint, e.spec) {
			out = append(out, e)
		}
	}
	return out
}

// seers returns whether each endpoint's view includes server, the set's
// state read once for every endpoint asked about.
func (ss *serverSet) seers(server string) func(endpoint string) bool {
	ss.mu.RLock()
	reg, e := ss.reg, ss.entries[server]
	ss.mu.RUnlock()
	if e == nil {
		// A server that is gone still reaches /mcp's sessions and its
		// own endpoint's, which see it by name.
		return func(endpoint string) bool { return endpoint == "" || endpoint == server }
	}
	return func(endpoint string) bool { return endpointSees(reg, endpoint, e.spec) }
}

// endpointSees reports whether an endpoint's view includes the server of
// spec: /mcp every one, /{server}/mcp its own, a profile's those it
// selects, unless the profile has a problem (it serves nothing).
func endpointSees(reg *registry.Registry, endpoint string, spec *registry.Server) bool {
	name, ok := endpointProfile(endpoint)
	switch {
	case endpoint == "":
		return true
	case !ok:
		return endpoint == spec.Name
	}
	p := reg.Profile(name)
	return p != nil && p.Problem == "" && p.SelectsServer(spec)
}

// close stops every upstream and waits for them and for the background work.
func (ss *serverSet) close() {
	ss.mu.Lock()
	entries := ss.entries
	ss.entries = map[string]*serverEntry{}
	ss.members++
	ss.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range entries {
		wg.Add(1)
		go func(up Upstream) {
			defer wg.Done()
			up.Close()
		}(e.up)
	}
	wg.Wait()
	ss.group.Stop()
}

// waitConnected waits until a server is connected, up to its connect timeout.
func (ss *serverSet) waitConnected(server string) bool {
	e := ss.get(server)
	if e == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ss.ctx, e.spec.ConnectTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if e := ss.get(server); e != nil && e.up.Status().State == api.StateConnected {
			return true
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return false
		}
	}
}

// restartNeeded names the [hub] settings waiting for a restart.
func (ss *serverSet) restartNeeded() []string {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return slices.Clone(ss.needsRestart)
}

// status reports every registry server's state, with the registry error
// when the running set is older than the file.
func (ss *serverSet) status() (servers []api.ServerStatus, reg *registry.Registry, regErr string) {
	ss.mu.RLock()
	reg, regErr = ss.reg, ss.regErr
	entries := make([]*serverEntry, len(reg.Servers))
	for i, spec := range reg.Servers {
		entries[i] = ss.entries[spec.Name]
	}
	ss.mu.RUnlock()
	merged := ss.view("")
	servers = make([]api.ServerStatus, 0, len(reg.Servers))
	for i, spec := range reg.Servers {
		st := api.ServerStatus{Name: spec.Name, State: api.StateDisabled}
		if e := entries[i]; e != nil {
			us := e.up.Status()
			st.State, st.Transport, st.PID, st.LastError, st.Restarts = us.State, us.Transport, us.PID, us.LastError, us.Restarts
			st.Protocol = us.Protocol
			switch {
			case us.SessionProtocol != "": // the bridge sets it beside 2026-07-28 only
				st.Protocols = []string{us.SessionProtocol, us.Protocol}
			case us.Protocol != "":
				st.Protocols = []string{us.Protocol}
			}
			if !us.Since.IsZero() && us.State == api.StateConnected {
				st.UptimeSeconds = time.Since(us.Since).Round(time.Second).Seconds()
			}
			// Counted from this entry's list, by its own spec (the one
			// its catalog piece filters by), read once: a replacement
			// swapped in meanwhile cannot mix into this row.
			st.Tools, st.ToolsTotal = countTools(e.spec, e.up.List("tools/list"))
			st.Prompts, st.Resources = len(e.up.List("prompts/list")), len(e.up.List("resources/list"))
			st.Conflicts = merged.conflicts[spec.Name]
		}
		servers = append(servers, st)
	}
	return servers, reg, regErr
}

// sortedLocked returns the enabled servers by name; ss.mu is held.
func (ss *serverSet) sortedLocked() []*serverEntry {
	out := make([]*serverEntry, 0, len(ss.entries))
	for _, e := range ss.entries {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b *serverEntry) int { return strings.Compare(a.spec.Name, b.spec.Name) })
	return out
}
