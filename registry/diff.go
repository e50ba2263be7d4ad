package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
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
	// deny, call_timeout or tags, which apply without reconnecting.
	Toggled []string
	// Unchanged servers are identical in every field that matters.
	Unchanged []string
	// HubChanged reports a difference in the [hub] table.
	HubChanged bool
	// Views reports a difference in what the views over the catalog are
	// made of: [profiles] (a Problem too, but not the positions in it nor
	// a profile's Line),
	// [overrides], or the tags of a server in both registries.
	Views bool
}

// Empty reports whether nothing changed.
func (c Changes) Empty() bool {
	return len(c.Added)+len(c.Removed)+len(c.Changed)+len(c.Toggled) == 0 && !c.HubChanged && !c.Views
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
	c.Views = !sameViews(old, new, oldS, newS)
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
		slices.Equal(a.Allow, b.Allow) && slices.Equal(a.Deny, b.Deny) && slices.Equal(a.Tags, b.Tags)
}

// sameViews compares profiles, overrides and the tags of the servers in
// both registries (oldS and newS, by name); a nil registry has none.
// SameViews reports whether two registries shape the hub's views alike:
// the same profiles (their positions aside), overrides and server tags.
func SameViews(old, new *Registry) bool { return sameViews(old, new, byName(old), byName(new)) }

func sameViews(old, new *Registry, oldS, newS map[string]*Server) bool {
	var op, np []*Profile
	var oo, no map[string]*ToolOverride
	if old != nil {
		op, oo = old.Profiles, old.Overrides
	}
	if new != nil {
		np, no = new.Profiles, new.Overrides
	}
	if !slices.EqualFunc(op, np, sameProfile) || !sameOverrides(oo, no) {
		return false
	}
	for name, n := range newS {
		if o := oldS[name]; o != nil && !slices.Equal(o.Tags, n.Tags) {
			return false
		}
	}
	return true
}

// sameProfile compares every field but Line, and Problem without
// positions; a nil and an empty list mean the same.
func sameProfile(a, b *Profile) bool {
	return a.Name == b.Name && slices.Equal(a.Servers, b.Servers) && slices.Equal(a.Tags, b.Tags) &&
		slices.Equal(a.Include, b.Include) && slices.Equal(a.Exclude, b.Exclude) &&
		a.Prefixed == b.Prefixed && a.Mode == b.Mode && problemKey(a) == problemKey(b) &&
		sameOverrides(a.Overrides, b.Overrides)
}

// problemKey is the profile's Problem without positions, when ParseServing
// set it, or Problem as it is for a profile built by hand.
func problemKey(p *Profile) string {
	if p.problemID != "" {
		return p.problemID
	}
	return p.Problem
}

func sameOverrides(a, b map[string]*ToolOverride) bool {
	return maps.EqualFunc(a, b, func(x, y *ToolOverride) bool {
		if x == nil || y == nil {
			return x == y
		}
		return x.Name == y.Name && x.Title == y.Title && x.Description == y.Description &&
			maps.EqualFunc(x.Annotations, y.Annotations, sameRaw) &&
			maps.EqualFunc(x.Args, y.Args, sameRaw)
	})
}

func sameRaw(a, b json.RawMessage) bool { return bytes.Equal(a, b) }

func sameHub(a, b Hub) bool {
	// A nil and an empty origin list mean the same thing.
	if len(a.AllowedOrigins) == 0 && len(b.AllowedOrigins) == 0 {
		a.AllowedOrigins, b.AllowedOrigins = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

// Digest is a short fingerprint of what the registry serves: its servers
// (everything Server.Hash covers), profiles and overrides. Replicas of a
// team hub compare theirs to say when their registries differ. It is a
// hash of hashes cut to 12 hex digits, so it shows no secret.
func (r *Registry) Digest() string {
	h := sha256.New()
	fmt.Fprintf(h, "mcphub-registry-v1\x00%d\x00", len(r.Servers))
	for _, s := range r.Servers {
		fmt.Fprintf(h, "%s\x00%s\x00", s.Name, s.Hash())
	}
	for _, p := range r.Profiles {
		fmt.Fprintf(h, "profile\x00%s\x00%v\x00%v\x00%v\x00%v\x00%s\x00", p.Name, p.Servers, p.Tags, p.Include, p.Exclude, p.Mode)
	}
	for _, k := range slices.Sorted(maps.Keys(r.Overrides)) {
		fmt.Fprintf(h, "override\x00%s\x00%+v\x00", k, *r.Overrides[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}
