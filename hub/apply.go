package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/registry"
)

// Apply brings the running set in line with a new registry, touching only
// what changed: added servers connect; removed or disabled ones stop (their
// calls fail, their /{server}/mcp sessions end); servers whose connection
// settings changed start fresh and are swapped in once connected, then the
// old one stops; servers whose prefix, filters or timeouts changed keep their
// connection. Every client then gets one coalesced list_changed.
func (h *Hub) Apply(reg *registry.Registry) {
	h.applyAuth(reg.Hub)
	before := h.servers.registry()
	ch, stopped, replace := h.servers.apply(reg)
	if len(ch.Added)+len(ch.Removed)+len(ch.Changed)+len(ch.Toggled) > 0 || ch.HubChanged || ch.Views {
		h.log.Info("registry applied", "added", ch.Added, "removed", ch.Removed, "changed", ch.Changed, "toggled", ch.Toggled, "profiles_or_overrides", ch.Views)
	}
	for _, e := range stopped {
		h.sessions.endEndpoint(e.spec.Name)
		h.servers.stop(e)
	}
	// A removed profile's sessions end, and those of a profile that now
	// has a problem: their clients get 404, and 404 or 503 with the
	// problem when they initialize again.
	for _, p := range before.Profiles {
		if now := reg.Profile(p.Name); now == nil || now.Problem != "" && p.Problem == "" {
			h.sessions.endEndpoint(profileEndpoint(p.Name))
		}
	}
	for _, spec := range replace {
		h.servers.replaceLater(spec)
	}
	h.fanout.applyLevels()
}

// applyAuth puts the [hub] auth settings of a new registry in force for the
// next request: auth turned on or off, another token_env or token_file, a
// new token in the file. Auth on without a readable token refuses every
// request (503, saying why) rather than serve without one.
func (h *Hub) applyAuth(hub registry.Hub) {
	if h.opts.ResolveToken == nil {
		return
	}
	token, err := h.opts.ResolveToken(hub)
	problem := ""
	if err != nil {
		problem = err.Error()
	}
	prev := h.edge.auth.Load()
	if token == "" && problem == "" && !h.edge.loopback {
		// The registry check that refuses auth off beyond loopback only
		// sees a listen address written in the file; serve --listen may
		// have put the hub on every interface.
		h.log.Error("auth cannot be turned off while the hub listens beyond this machine; it stays on", "listen", h.servers.registry().Hub.Listen)
		return
	}
	if token == prev.token && problem == prev.problem {
		return
	}
	h.edge.setAuth(token, problem)
	if token != prev.token && token != "" {
		// Every request needs the new token, the ones on streams opened
		// before it too: those streams end, and their clients reconnect
		// with it (or are refused).
		h.sessions.cutStreams()
	}
	switch {
	case problem != "":
		h.log.Error("auth is on but the token cannot be read; every request is refused until it can", "err", err)
	case token == "":
		h.log.Warn("auth turned off: requests need no token")
	case prev.token == "":
		h.log.Info("auth turned on: every request needs the token")
	default:
		h.log.Info("the hub's token changed: requests need the new one")
	}
}

// SetRegistryError records that the registry file no longer loads; the
// running set stays as it is, and status shows why.
func (h *Hub) SetRegistryError(err error) { h.servers.setError(err) }

// Restart replaces a server's connection with a fresh one, swapped in once
// it has connected.
func (h *Hub) Restart(name string) error {
	e := h.servers.get(name)
	if e == nil {
		return fmt.Errorf("%w: %q is not an enabled server of this hub", errUnknownServer, name)
	}
	h.servers.replaceLater(e.spec)
	return nil
}

var errUnknownServer = errors.New("unknown server")

// apply brings the set in line with a new registry, touching only what
// changed, and returns the servers that stopped (removed or disabled) and
// the specs whose connection must be replaced. The listen address and its
// TLS cannot change under a running listener: the new registry keeps the
// old ones.
func (ss *serverSet) apply(reg *registry.Registry) (ch registry.Changes, stopped []*serverEntry, replace []*registry.Server) {
	ch, stopped, replace, ok := ss.applyEntries(reg)
	if ok {
		ss.rebuild()
	}
	return ch, stopped, replace
}

// applyEntries is apply's change to the entries, made under the lock; ok is
// false when the set is closing and nothing changed.
func (ss *serverSet) applyEntries(reg *registry.Registry) (ch registry.Changes, stopped []*serverEntry, replace []*registry.Server, ok bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.ctx.Err() != nil {
		return ch, nil, nil, false // closing: nothing may start now
	}
	ss.members++
	old := ss.reg
	restart := needsRestart(old.Hub, reg.Hub)
	if reg.Store.URL != old.Store.URL {
		restart = append(restart, "store.url")
	}
	for _, name := range restart {
		if !slices.Contains(ss.needsRestart, name) {
			ss.log.Warn("a setting changed that needs a restart to take effect; the hub keeps the one it started with", "setting", name)
		}
	}
	ss.needsRestart = restart
	reg.Hub.Listen, reg.Hub.TLSCert, reg.Hub.TLSKey = old.Hub.Listen, old.Hub.TLSCert, old.Hub.TLSKey
	reg.Store = old.Store
	ch = registry.Diff(old, reg)
	ss.reg, ss.regErr = reg, ""
	specs := make(map[string]*registry.Server, len(reg.Servers))
	for _, spec := range reg.Servers {
		specs[spec.Name] = spec
	}
	// max_response_bytes and request_timeout are built into each
	// upstream's connection: a change reconnects every running server,
	// as a change of its own entry would.
	if limitsOf(old.Hub) != limitsOf(reg.Hub) {
		for _, spec := range reg.Servers {
			if spec.Enabled && ss.entries[spec.Name] != nil && !slices.Contains(ch.Changed, spec.Name) {
				ch.Changed = append(ch.Changed, spec.Name)
			}
		}
	}
	changed := make(map[string]bool, len(ch.Changed))
	for _, name := range ch.Changed {
		changed[name] = true
	}
	for _, name := range ch.Removed {
		if e := ss.entries[name]; e != nil {
			stopped = append(stopped, e)
			delete(ss.entries, name)
		}
	}
	for _, name := range slices.Concat(ch.Added, ch.Changed, ch.Toggled) {
		spec := specs[name]
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
		case changed[name] && spec.Problem != "":
			// Nothing to connect and wait for: the entry fails at once.
			stopped = append(stopped, e)
			ss.entries[name] = ss.newEntryLocked(spec)
		case changed[name]:
			replace = append(replace, spec)
		}
	}
	// Every running server follows the new registry's spec object (prefix,
	// allow/deny, call_timeout need no reconnect), so later restarts and
	// replacements compare against what is in force.
	for name, e := range ss.entries {
		if spec := specs[name]; spec != nil && spec != e.spec && !changed[name] {
			ss.entries[name] = &serverEntry{spec: spec, up: e.up}
		}
	}
	return ch, stopped, replace, true
}

// needsRestart names the [hub] settings of next that differ from what the
// running hub (serving cur) started with and cannot change under a running
// listener: listen, tls_cert, tls_key. A listen address with port 0 (the
// kernel picks one) is the running one when the host is the same.
func needsRestart(cur, next registry.Hub) []string {
	var names []string
	if next.Listen != cur.Listen {
		nh, np, err1 := net.SplitHostPort(next.Listen)
		ch, cp, err2 := net.SplitHostPort(cur.Listen)
		samePort := np == "0" || np == cp
		if err1 != nil || err2 != nil || !samePort || !sameHost(nh, ch) {
			names = append(names, "listen")
		}
	}
	if next.TLSCert != cur.TLSCert {
		names = append(names, "tls_cert")
	}
	if next.TLSKey != cur.TLSKey {
		names = append(names, "tls_key")
	}
	return names
}

// upstreamLimits are the [hub] settings built into each upstream's
// connection when it is made; a change of them reconnects the servers.
type upstreamLimits struct {
	maxResponseBytes int64
	requestTimeout   time.Duration
}

func limitsOf(h registry.Hub) upstreamLimits {
	return upstreamLimits{int64(h.MaxResponseBytes), h.RequestTimeout}
}

// sameHost reports whether two listen hosts are the same address: ""
// listens on every interface, as 0.0.0.0 and :: do, and a kernel-chosen
// address is reported back in any of those spellings.
func sameHost(a, b string) bool {
	every := func(h string) bool {
		ip := net.ParseIP(h)
		return h == "" || ip != nil && ip.IsUnspecified()
	}
	return a == b || every(a) && every(b)
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
	built := limitsOf(ss.reg.Hub)
	ss.mu.Unlock()
	fresh.up.Start(ss.ctx)

	deadline := time.Now().Add(spec.ConnectTimeout + time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for fresh.up.Status().State == api.StateStarting && time.Now().Before(deadline) {
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
	if old == nil || want == nil || !want.Enabled || want.Hash() != spec.Hash() || limitsOf(ss.reg.Hub) != built {
		// Removed, disabled or changed again while this one connected
		// (its entry, or the [hub] limits built into it: the replacement
		// the newer change asked for is on its way).
		ss.mu.Unlock()
		fresh.up.Close()
		return
	}
	// The spec in force now: a change that needs no new connection (a
	// prefix, filters, call_timeout) may have come while this one connected.
	ss.entries[spec.Name] = &serverEntry{spec: want, up: fresh.up}
	ss.members++
	ss.mu.Unlock()
	ss.await(ss.queue.mark(ss, spec.Name))
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

// selfReferenceLocked reports whether a server leads back to this hub
// (see registry.PointsAtHub): its URL, or the URL it runs mcp-remote with,
// reaches the hub's listen address, or it runs "mcphub stdio" on the hub's
// registry. Any loopback address on the hub's port counts as the hub too,
// wherever it listens: refusing a look-alike costs less than a loop.
func (ss *serverSet) selfReferenceLocked(spec *registry.Server) bool {
	self := registry.Self{Listens: []string{ss.reg.Hub.Listen}, Config: ss.reg.Path}
	if _, port, err := net.SplitHostPort(ss.reg.Hub.Listen); err == nil {
		self.Listens = append(self.Listens, net.JoinHostPort("", port))
	}
	return registry.PointsAtHub(spec.Spec(), self)
}

// refused is the upstream of a server mcphub will not connect to, such as
// one that points at the hub itself; it stays visible as failed.
type refused struct{ reason string }

func (r refused) Start(context.Context) {}
func (r refused) Close() error          { return nil }
func (r refused) Call(context.Context, string, bool, string, json.RawMessage, jsonrpc.Peer) (json.RawMessage, error) {
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
	return UpstreamStatus{State: api.StateFailed, LastError: r.reason}
}
