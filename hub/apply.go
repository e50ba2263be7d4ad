package hub

import (
	"errors"
	"fmt"

	"github.com/mcphub/mcphub/registry"
)

// Apply brings the running set in line with a new registry, touching only
// what changed: added servers connect; removed or disabled ones stop (their
// calls fail, their /{server}/mcp sessions end); servers whose connection
// settings changed start fresh and are swapped in once connected, then the
// old one stops; servers whose prefix, filters or timeouts changed keep their
// connection. Every client then gets one coalesced list_changed.
func (h *Hub) Apply(reg *registry.Registry) {
	ch, stopped, replace := h.servers.apply(reg)
	if len(ch.Added)+len(ch.Removed)+len(ch.Changed)+len(ch.Toggled) > 0 || ch.HubChanged {
		h.log.Info("registry applied", "added", ch.Added, "removed", ch.Removed, "changed", ch.Changed, "toggled", ch.Toggled)
	}
	for _, e := range stopped {
		h.sessions.endEndpoint(e.spec.Name)
		h.servers.stop(e)
	}
	for _, spec := range replace {
		h.servers.replaceLater(spec)
	}
	h.fanout.applyLevels()
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
