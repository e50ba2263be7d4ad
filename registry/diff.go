package registry

import (
	"reflect"
	"slices"
)

// Changes is what Diff found between two registries. Each name of a server
// present in both is in exactly one of Changed, Toggled and Unchanged. The
// hub reads the new spec (including Enabled) for every Added, Changed and
// Toggled name.
type Changes struct {
	// Added and Removed are servers only in the new or only in the old
	// registry.
	Added, Removed []string
	// Changed servers have a different Hash: they need a new connection.
	Changed []string
	// Toggled servers kept their Hash but changed enabled, prefix, allow,
	// deny or call_timeout, which apply without reconnecting.
	Toggled []string
	// Unchanged servers are identical in every field that matters.
	Unchanged []string
	// HubChanged reports a difference in the [hub] table.
	HubChanged bool
}

// Empty reports whether nothing changed.
func (c Changes) Empty() bool {
	return len(c.Added)+len(c.Removed)+len(c.Changed)+len(c.Toggled) == 0 && !c.HubChanged
}

// Diff compares two registries server by server. It is pure: enabled is one
// more field, so a server that was only disabled is Toggled, not Removed. A
// nil old registry makes every server Added; a nil new one makes every server
// Removed. All name lists are sorted.
func Diff(old, new *Registry) Changes {
	var c Changes
	// By name, once: looking each server up in the other registry's list
	// cost O(n²), half a second on every reload at 10,000 servers.
	oldS, newS := byName(old), byName(new)
	for name := range oldS {
		if newS[name] == nil {
			c.Removed = append(c.Removed, name)
		}
	}
	for name, n := range newS {
		o := oldS[name]
		switch {
		case o == nil:
			c.Added = append(c.Added, n.Name)
		case o.Hash() != n.Hash():
			c.Changed = append(c.Changed, n.Name)
		case !sameLiveSettings(o, n):
			c.Toggled = append(c.Toggled, n.Name)
		default:
			c.Unchanged = append(c.Unchanged, n.Name)
		}
	}
	if old != nil && new != nil {
		c.HubChanged = !sameHub(old.Hub, new.Hub)
	} else {
		c.HubChanged = old != new
	}
	// Registries from Parse are sorted already; sorting again keeps the
	// promise for hand-built ones.
	for _, l := range []*[]string{&c.Added, &c.Removed, &c.Changed, &c.Toggled, &c.Unchanged} {
		slices.Sort(*l)
	}
	return c
}

// byName indexes a registry's servers by name; a nil registry has none.
func byName(r *Registry) map[string]*Server {
	if r == nil {
		return nil
	}
	m := make(map[string]*Server, len(r.Servers))
	for _, s := range r.Servers {
		if m[s.Name] == nil {
			m[s.Name] = s // the first, as Registry.Server finds it
		}
	}
	return m
}

// sameLiveSettings compares the fields that are not part of Hash.
func sameLiveSettings(a, b *Server) bool {
	return a.Enabled == b.Enabled && a.Prefix == b.Prefix && a.CallTimeout == b.CallTimeout &&
		slices.Equal(a.Allow, b.Allow) && slices.Equal(a.Deny, b.Deny)
}

func sameHub(a, b Hub) bool {
	// A nil and an empty origin list mean the same thing.
	if len(a.AllowedOrigins) == 0 && len(b.AllowedOrigins) == 0 {
		a.AllowedOrigins, b.AllowedOrigins = nil, nil
	}
	return reflect.DeepEqual(a, b)
}
