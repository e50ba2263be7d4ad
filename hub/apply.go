package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

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
	if h.ctx.Err() != nil {
		return
	}
	h.mu.Lock()
	old := h.reg
	// The listen address and its TLS cannot change under a running
	// listener.
	if reg.Hub.TLSCert != old.Hub.TLSCert || reg.Hub.TLSKey != old.Hub.TLSKey {
		h.log.Warn("tls_cert and tls_key changes take effect when mcphub restarts")
	}
	reg.Hub.Listen, reg.Hub.TLSCert, reg.Hub.TLSKey = old.Hub.Listen, old.Hub.TLSCert, old.Hub.TLSKey
	ch := registry.Diff(old, reg)
	h.reg = reg
	h.regErr = ""
	var stopped []*serverEntry
	for _, name := range ch.Removed {
		if e := h.servers[name]; e != nil {
			stopped = append(stopped, e)
			delete(h.servers, name)
		}
	}
	var replace []*registry.Server
	for _, name := range append(append([]string(nil), ch.Added...), append(ch.Changed, ch.Toggled...)...) {
		spec := reg.Server(name)
		e := h.servers[name]
		switch {
		case !spec.Enabled && e != nil:
			stopped = append(stopped, e)
			delete(h.servers, name)
		case !spec.Enabled:
		case e == nil:
			h.addServerLocked(spec)
		case slicesContains(ch.Changed, name):
			replace = append(replace, spec)
		default:
			e.spec = spec // prefix, allow/deny, call_timeout: no reconnect
		}
	}
	// Every running server follows the new registry's spec object, so later
	// restarts and replacements compare against what is in force.
	for name, e := range h.servers {
		if spec := reg.Server(name); spec != nil && !slicesContains(ch.Changed, name) {
			e.spec = spec
		}
	}
	h.rebuildLocked()
	h.mu.Unlock()

	if len(ch.Added)+len(ch.Removed)+len(ch.Changed)+len(ch.Toggled) > 0 || ch.HubChanged {
		h.log.Info("registry applied", "added", ch.Added, "removed", ch.Removed, "changed", ch.Changed, "toggled", ch.Toggled)
	}
	for _, e := range stopped {
		h.stopServer(e)
	}
	for _, spec := range replace {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.replaceServer(spec)
		}()
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// SetRegistryError records that the registry file no longer loads; the
// running set stays as it is, and status shows why.
func (h *Hub) SetRegistryError(err error) {
	h.mu.Lock()
	h.regErr = err.Error()
	h.mu.Unlock()
}

// Restart replaces a server's connection with a fresh one, swapped in once
// it has connected.
func (h *Hub) Restart(name string) error {
	e := h.server(name)
	if e == nil {
		return fmt.Errorf("%w: %q is not an enabled server of this hub", errUnknownServer, name)
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.replaceServer(e.spec)
	}()
	return nil
}

var errUnknownServer = errors.New("unknown server")

// replaceServer starts a new upstream for spec, waits until it has left the
// starting state (connected or failed, bounded by its connect timeout), swaps
// it in and stops the old one, so clients never see the server missing.
func (h *Hub) replaceServer(spec *registry.Server) {
	h.mu.Lock()
	if h.ctx.Err() != nil || h.servers[spec.Name] == nil {
		h.mu.Unlock()
		return
	}
	fresh := h.newServerLocked(spec)
	h.mu.Unlock()
	fresh.up.Start(h.ctx)

	deadline := time.Now().Add(spec.ConnectTimeout + time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for fresh.up.Status().State == StateStarting && time.Now().Before(deadline) {
		select {
		case <-tick.C:
		case <-h.ctx.Done():
			fresh.up.Close()
			return
		}
	}

	h.mu.Lock()
	old := h.servers[spec.Name]
	if want := h.reg.Server(spec.Name); old == nil || want == nil || !want.Enabled || want.Hash() != spec.Hash() {
		// Removed, disabled or changed again while this one connected.
		h.mu.Unlock()
		fresh.up.Close()
		return
	}
	h.servers[spec.Name] = fresh
	h.rebuildLocked()
	h.mu.Unlock()
	h.log.Info("server replaced", "server", spec.Name, "state", fresh.up.Status().State)
	old.up.Close()
}

// stopServer stops a removed server and ends the sessions of its endpoint.
func (h *Hub) stopServer(e *serverEntry) {
	for _, s := range h.sessionList() {
		if s.endpoint == e.spec.Name {
			h.endSession(s)
		}
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		e.up.Close()
		h.log.Info("server stopped", "server", e.spec.Name)
	}()
}

// selfReference reports whether a remote server's URL points at this hub.
func (h *Hub) selfReference(spec *registry.Server) bool {
	if spec.URL == "" {
		return false
	}
	u, err := url.Parse(spec.URL)
	if err != nil {
		return false
	}
	_, listenPort, err := net.SplitHostPort(h.reg.Hub.Listen)
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
	listenHost, _, _ := net.SplitHostPort(h.reg.Hub.Listen)
	return isLoopbackName(u.Hostname()) || u.Hostname() == listenHost
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
