package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcphub/mcphub/internal/goroutines"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/redact"
	"github.com/mcphub/mcphub/registry"
)

// serverSet is the hub's part that owns the upstreams: the registry in
// force, one Upstream per enabled server, and the catalogs built from them
// (the merged /mcp view and each server's own view). Catalogs are rebuilt
// whole under its lock whenever a server's state or lists change, and each
// rebuild reports what changed through onDiff.
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

	mu      sync.RWMutex
	reg     *registry.Registry
	regErr  string                  // last registry error, when the running set is older
	entries map[string]*serverEntry // enabled servers, by name
	merged  *catalog                // the /mcp view
	single  map[string]*catalog     // the /{server}/mcp views
	warm    chan struct{}           // closed once no server is starting, or after the warmup

	group goroutines.Group // the warmup, replacements and stops in the background
}

// serverEntry is one enabled server: its spec and its upstream. An entry is
// never modified once made: a new spec makes a new entry, so whoever holds
// one reads a consistent pair without the set's lock.
type serverEntry struct {
	spec *registry.Server
	up   Upstream
}

func newServerSet(ctx context.Context, log *slog.Logger, reg *registry.Registry, newUp NewUpstreamFunc) *serverSet {
	return &serverSet{
		ctx: ctx, log: log, newUpstream: newUp, reg: reg,
		entries: map[string]*serverEntry{}, single: map[string]*catalog{}, warm: make(chan struct{}),
		merged: buildCatalog(nil, true, reg.Hub.Separator),
	}
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
}

// start starts every upstream, builds the catalogs, and closes warm once no
// server is starting any more or after the warmup period.
func (ss *serverSet) start(warmup time.Duration) {
	ss.mu.Lock()
	for _, e := range ss.entries {
		e.up.Start(ss.ctx)
	}
	ss.rebuildLocked()
	ss.mu.Unlock()
	ss.group.Go(func() { ss.warmup(warmup) })
}

// newEntryLocked creates a server's upstream without starting it. A server
// that points at this hub itself is refused, visibly: connecting to it would
// loop every request back in.
func (ss *serverSet) newEntryLocked(spec *registry.Server) *serverEntry {
	if ss.selfReferenceLocked(spec) {
		reason := fmt.Sprintf("%s points at this mcphub itself (%s); refusing to connect to it", redact.URL(spec.URL), ss.reg.Hub.Listen)
		ss.log.Error("refused a server", "server", spec.Name, "reason", reason)
		return &serverEntry{spec: spec, up: refused{reason: reason}}
	}
	return &serverEntry{spec: spec, up: ss.newUpstream(spec, ss.reg.Hub, ss.events(spec.Name))}
}

// warmup closes ss.warm once no server is starting any more, or after d,
// whichever comes first.
func (ss *serverSet) warmup(d time.Duration) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	defer close(ss.warm)
	for {
		if !ss.anyStarting() {
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

// anyStarting reports whether a server is still connecting for the first
// time with nothing known of it; a server whose catalog is cached from the
// last run is served from the cache meanwhile.
func (ss *serverSet) anyStarting() bool {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	for _, e := range ss.entries {
		if e.up.Status().State == StateStarting && e.up.Initialize() == nil {
			return true
		}
	}
	return false
}

// sourcesLocked returns the servers in catalog order: by name.
func (ss *serverSet) sourcesLocked() []source {
	out := make([]source, 0, len(ss.entries))
	for _, e := range ss.entries {
		out = append(out, source{spec: e.spec, up: e.up})
	}
	slices.SortFunc(out, func(a, b source) int { return strings.Compare(a.spec.Name, b.spec.Name) })
	return out
}

// rebuildLocked rebuilds every catalog and reports each view's change;
// ss.mu is held.
func (ss *serverSet) rebuildLocked() {
	srcs := ss.sourcesLocked()
	sep := ss.reg.Hub.Separator
	merged := buildCatalog(srcs, true, sep)
	ss.onDiff("", ss.merged, merged)
	for server, list := range merged.conflicts {
		for _, c := range list {
			if !slices.Contains(ss.merged.conflicts[server], c) {
				ss.log.Warn("a name could not be exposed as offered", "server", server, "conflict", c)
			}
		}
	}
	ss.merged = merged
	single := make(map[string]*catalog, len(srcs))
	for _, src := range srcs {
		c := buildCatalog([]source{src}, false, sep)
		if old := ss.single[src.spec.Name]; old != nil {
			ss.onDiff(src.spec.Name, old, c)
		}
		single[src.spec.Name] = c
	}
	ss.single = single
}

// changed is called by an upstream whose state or lists changed.
func (ss *serverSet) changed(name string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if _, ok := ss.entries[name]; !ok {
		return
	}
	ss.rebuildLocked()
}

// view returns the catalog of an endpoint, nil for an unknown server.
func (ss *serverSet) view(endpoint string) *catalog {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	if endpoint == "" {
		return ss.merged
	}
	return ss.single[endpoint]
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

// sorted returns the enabled servers by name.
func (ss *serverSet) sorted() []*serverEntry {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	out := make([]*serverEntry, 0, len(ss.entries))
	for _, e := range ss.entries {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b *serverEntry) int { return strings.Compare(a.spec.Name, b.spec.Name) })
	return out
}

// upstreams returns the running upstreams by server name.
func (ss *serverSet) upstreams() map[string]Upstream {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	out := make(map[string]Upstream, len(ss.entries))
	for name, e := range ss.entries {
		out[name] = e.up
	}
	return out
}

// of returns the servers an endpoint sees: every one for /mcp, the one for
// /{server}/mcp.
func (ss *serverSet) of(endpoint string) []*serverEntry {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	var out []*serverEntry
	for name, e := range ss.entries {
		if endpoint == "" || endpoint == name {
			out = append(out, e)
		}
	}
	return out
}

// apply brings the set in line with a new registry, touching only what
// changed, and returns the servers that stopped (removed or disabled) and
// the specs whose connection must be replaced. The listen address and its
// TLS cannot change under a running listener: the new registry keeps the
// old ones.
func (ss *serverSet) apply(reg *registry.Registry) (ch registry.Changes, stopped []*serverEntry, replace []*registry.Server) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.ctx.Err() != nil {
		return ch, nil, nil // closing: nothing may start now
	}
	old := ss.reg
	if reg.Hub.TLSCert != old.Hub.TLSCert || reg.Hub.TLSKey != old.Hub.TLSKey {
		ss.log.Warn("tls_cert and tls_key changes take effect when mcphub restarts")
	}
	reg.Hub.Listen, reg.Hub.TLSCert, reg.Hub.TLSKey = old.Hub.Listen, old.Hub.TLSCert, old.Hub.TLSKey
	ch = registry.Diff(old, reg)
	ss.reg, ss.regErr = reg, ""
	for _, name := range ch.Removed {
		if e := ss.entries[name]; e != nil {
			stopped = append(stopped, e)
			delete(ss.entries, name)
		}
	}
	for _, name := range slices.Concat(ch.Added, ch.Changed, ch.Toggled) {
		spec := reg.Server(name)
		e := ss.entries[name]
		switch {
		case !spec.Enabled && e != nil:
			stopped = append(stopped, e)
			delete(ss.entries, name)
		case !spec.Enabled:
		case e == nil:
			e = ss.newEntryLocked(spec)
			ss.entries[name] = e
			e.up.Start(ss.ctx)
		case slices.Contains(ch.Changed, name):
			replace = append(replace, spec)
		}
	}
	// Every running server follows the new registry's spec object (prefix,
	// allow/deny, call_timeout need no reconnect), so later restarts and
	// replacements compare against what is in force.
	for name, e := range ss.entries {
		if spec := reg.Server(name); spec != nil && spec != e.spec && !slices.Contains(ch.Changed, name) {
			ss.entries[name] = &serverEntry{spec: spec, up: e.up}
		}
	}
	ss.rebuildLocked()
	return ch, stopped, replace
}

// setError records that the registry file no longer loads.
func (ss *serverSet) setError(err error) {
	ss.mu.Lock()
	ss.regErr = err.Error()
	ss.mu.Unlock()
}

// replaceLater replaces a server's connection in the background; once the
// set is closing there is nothing to replace.
func (ss *serverSet) replaceLater(spec *registry.Server) {
	ss.group.Go(func() { ss.replace(spec) })
}

// replace starts a new upstream for spec, waits until it has left the
// starting state (connected or failed, bounded by its connect timeout), swaps
// it in and stops the old one, so clients never see the server missing.
func (ss *serverSet) replace(spec *registry.Server) {
	ss.mu.Lock()
	if ss.ctx.Err() != nil || ss.entries[spec.Name] == nil {
		ss.mu.Unlock()
		return
	}
	fresh := ss.newEntryLocked(spec)
	ss.mu.Unlock()
	fresh.up.Start(ss.ctx)

	deadline := time.Now().Add(spec.ConnectTimeout + time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for fresh.up.Status().State == StateStarting && time.Now().Before(deadline) {
		select {
		case <-tick.C:
		case <-ss.ctx.Done():
			fresh.up.Close()
			return
		}
	}

	ss.mu.Lock()
	old := ss.entries[spec.Name]
	want := ss.reg.Server(spec.Name)
	if old == nil || want == nil || !want.Enabled || want.Hash() != spec.Hash() {
		// Removed, disabled or changed again while this one connected.
		ss.mu.Unlock()
		fresh.up.Close()
		return
	}
	// The spec in force now: a change that needs no new connection (a
	// prefix, filters, call_timeout) may have come while this one connected.
	ss.entries[spec.Name] = &serverEntry{spec: want, up: fresh.up}
	ss.rebuildLocked()
	ss.mu.Unlock()
	ss.log.Info("server replaced", "server", spec.Name, "state", fresh.up.Status().State)
	ss.onSwap()
	old.up.Close()
}

// stop closes a removed server's upstream in the background, or at once
// when the set is closing.
func (ss *serverSet) stop(e *serverEntry) {
	stop := func() {
		e.up.Close()
		ss.log.Info("server stopped", "server", e.spec.Name)
	}
	if !ss.group.Go(stop) {
		stop()
	}
}

// close stops every upstream and waits for them and for the background work.
func (ss *serverSet) close() {
	ss.mu.Lock()
	entries := ss.entries
	ss.entries = map[string]*serverEntry{}
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
		if e := ss.get(server); e != nil && e.up.Status().State == StateConnected {
			return true
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return false
		}
	}
}

// selfReferenceLocked reports whether a remote server's URL points at this
// hub.
func (ss *serverSet) selfReferenceLocked(spec *registry.Server) bool {
	if spec.URL == "" {
		return false
	}
	u, err := url.Parse(spec.URL)
	if err != nil {
		return false
	}
	listenHost, listenPort, err := net.SplitHostPort(ss.reg.Hub.Listen)
	if err != nil {
		return false
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if port != listenPort {
		return false
	}
	return isLoopbackName(u.Hostname()) || u.Hostname() == listenHost
}

// status reports every registry server's state, with the registry error
// when the running set is older than the file.
func (ss *serverSet) status() (servers []ServerStatus, reg *registry.Registry, regErr string) {
	ss.mu.RLock()
	reg, regErr, merged := ss.reg, ss.regErr, ss.merged
	ss.mu.RUnlock()
	for _, spec := range reg.Servers {
		st := ServerStatus{Name: spec.Name, State: StateDisabled}
		if e := ss.get(spec.Name); e != nil {
			us := e.up.Status()
			st.State, st.Transport, st.PID, st.LastError, st.Restarts = us.State, us.Transport, us.PID, us.LastError, us.Restarts
			if !us.Since.IsZero() && us.State == StateConnected {
				st.UptimeSeconds = time.Since(us.Since).Round(time.Second).Seconds()
			}
			st.Tools, st.Prompts, st.Resources = len(e.up.List("tools/list")), len(e.up.List("prompts/list")), len(e.up.List("resources/list"))
			st.Conflicts = merged.conflicts[spec.Name]
		}
		servers = append(servers, st)
	}
	return servers, reg, regErr
}

// refused is the upstream of a server mcphub will not connect to, such as
// one that points at the hub itself; it stays visible as failed.
type refused struct{ reason string }

func (r refused) Start(context.Context) {}
func (r refused) Close() error          { return nil }
func (r refused) Call(context.Context, string, string, json.RawMessage, jsonrpc.Peer) (json.RawMessage, error) {
	return nil, fmt.Errorf("%w: %s", errUnavailable, r.reason)
}
func (r refused) Notify(context.Context, string, string, json.RawMessage) error {
	return fmt.Errorf("%w: %s", errUnavailable, r.reason)
}
func (r refused) SetLogLevel(string)            {}
func (r refused) SessionClosed(string)          {}
func (r refused) Initialize() json.RawMessage   { return nil }
func (r refused) List(string) []json.RawMessage { return nil }
func (r refused) Adopt(json.RawMessage, string, json.RawMessage, jsonrpc.Peer, func(json.RawMessage, error)) bool {
	return false
}
func (r refused) Status() UpstreamStatus {
	return UpstreamStatus{State: StateFailed, LastError: r.reason}
}
