package hub

// The catalog rebuilder: the serverSet's views are built off the request
// path by one goroutine. Changes are marked on a buildQueue; the rebuilder
// takes each batch, remakes only the pieces of the servers that changed
// (builder, part), merges the merged, per-server and per-profile views,
// reports each change through onDiff and publishes them whole for readers.
// servers.go holds the set itself: its entries, lifecycle and status.

import (
	"slices"
	"sync"
	"time"

	"github.com/mcphub/mcphub/registry"
)

// views are the catalogs of one build, published whole: the merged view,
// each server's own and each profile's.
type views struct {
	merged   *catalog
	single   map[string]*catalog
	profiles map[string]*catalog
}

// The rebuilder rests buildRest times as long as a build took before the
// next, at most maxBuildPause: building then takes at most a quarter of a
// CPU however fast changes come, and a view is at most about a second
// behind even with tens of thousands of servers.
const (
	buildRest     = 3
	maxBuildPause = time.Second
)

// buildQueue gathers the changes reported between builds and wakes the
// rebuilder.
type buildQueue struct {
	mu      sync.Mutex
	dirty   map[string]bool // servers whose lists or state changed
	batch   chan struct{}   // closed once the build taking the marks so far is published; nil when none is asked for
	running bool            // the rebuilder was started
	wake    chan struct{}   // holds one wake-up at most
}

func (q *buildQueue) init() {
	q.dirty, q.wake = map[string]bool{}, make(chan struct{}, 1)
}

// mark asks for a build with the named servers looked at again (with none,
// only those whose entry changed) and returns a channel closed once that
// build is published. It starts the rebuilder on first use; once the set
// is closing nothing is built, and the channel is never closed.
func (q *buildQueue) mark(ss *serverSet, names ...string) <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, n := range names {
		q.dirty[n] = true
	}
	if q.batch == nil {
		q.batch = make(chan struct{})
	}
	if !q.running {
		q.running = ss.group.Go(ss.rebuilder)
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return q.batch
}

// take hands the marks so far to a build.
func (q *buildQueue) take() (dirty map[string]bool, published chan struct{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	dirty, published = q.dirty, q.batch
	q.dirty, q.batch = map[string]bool{}, nil
	return dirty, published
}

// rebuilder builds the catalogs whenever changes are marked, until the set
// closes. After each build it rests (see buildRest), so a burst of changes,
// such as thousands of servers connecting, is taken in a few builds.
func (ss *serverSet) rebuilder() {
	for {
		select {
		case <-ss.queue.wake:
		case <-ss.ctx.Done():
			return
		}
		dirty, published := ss.queue.take()
		if published == nil {
			continue // a wake-up whose marks an earlier build took
		}
		took := ss.buildViews(dirty)
		close(published)
		if pause := min(buildRest*took, maxBuildPause); pause >= time.Millisecond {
			rest := time.NewTimer(pause)
			select {
			case <-rest.C:
			case <-ss.ctx.Done():
				rest.Stop()
				return
			}
		}
	}
}

// builder is what builds keep between them: the servers in catalog order
// as of the entries they last saw, each server's pieces, and the registry
// whose profiles and overrides the pieces were shaped by.
type builder struct {
	mu      sync.Mutex // held by the build in progress
	members uint64     // serverSet.members the order was taken at
	sep     string
	reg     *registry.Registry
	order   []*serverEntry
	parts   map[string]*part
}

// part is one server's pieces and what they were made from.
type part struct {
	entry  *serverEntry
	lists  lists
	merged *piece // under its prefix with the global overrides, for /mcp
	single *piece // under its own names, for /{server}/mcp
	// profiles holds the pieces made so far for profiles, by name; they
	// last as long as the part, which a change of any profile replaces.
	profiles map[string]*piece
}

func newPart(e *serverEntry, l lists, reg *registry.Registry) *part {
	sep := reg.Hub.Separator
	p := &part{entry: e, lists: l, single: newPiece(e.spec, l, shaping{sep: sep}), profiles: map[string]*piece{}}
	p.merged = p.single
	if e.spec.Prefix != "" || len(reg.Overrides) > 0 {
		p.merged = newPiece(e.spec, l, shaping{prefix: e.spec.Prefix, sep: sep, reg: reg})
	}
	return p
}

// profilePiece is the part's piece for profile prof, made once.
func (p *part) profilePiece(reg *registry.Registry, prof *registry.Profile) *piece {
	if pc := p.profiles[prof.Name]; pc != nil {
		return pc
	}
	sh := shaping{sep: reg.Hub.Separator, reg: reg, profile: prof}
	if prof.Prefixed {
		sh.prefix = p.entry.spec.Prefix
	}
	pc := newPiece(p.entry.spec, p.lists, sh)
	p.profiles[prof.Name] = pc
	return pc
}

// fits reports whether the part was made for e's upstream and catalog
// settings (the lists aside).
func (p *part) fits(e *serverEntry) bool {
	s := p.entry.spec
	return p.entry.up == e.up && s.Prefix == e.spec.Prefix && slices.Equal(s.Allow, e.spec.Allow) && slices.Equal(s.Deny, e.spec.Deny)
}

// buildViews remakes the pieces of the servers marked dirty and of those
// whose entry changed, and when any piece changed merges and publishes the
// views, reporting each changed one through onDiff. It returns how long it
// took.
func (ss *serverSet) buildViews(dirty map[string]bool) time.Duration {
	b := &ss.build
	b.mu.Lock()
	defer b.mu.Unlock()
	start := time.Now()
	ss.mu.RLock()
	members, reg := ss.members, ss.reg
	sep := reg.Hub.Separator
	// A change of the profiles, the overrides or the servers' tags
	// reshapes every piece once.
	reshaped := b.parts == nil || sep != b.sep || reg != b.reg && !registry.SameViews(b.reg, reg)
	all := reshaped || members != b.members
	if all {
		b.order = ss.sortedLocked()
	}
	ss.mu.RUnlock()
	if reshaped {
		b.parts = map[string]*part{}
	}
	b.members, b.sep, b.reg = members, sep, reg
	var changed []string
	update := func(e *serverEntry) {
		name := e.spec.Name
		p := b.parts[name]
		if p != nil && p.fits(e) && !dirty[name] {
			p.entry = e
			return
		}
		l := listsOf(e.up)
		if p != nil && p.fits(e) && p.lists.equal(&l) {
			p.entry = e
			return
		}
		b.parts[name] = newPart(e, l, reg)
		changed = append(changed, name)
	}
	gone := false
	if all {
		present := make(map[string]bool, len(b.order))
		for _, e := range b.order {
			present[e.spec.Name] = true
			update(e)
		}
		for name := range b.parts {
			if !present[name] {
				delete(b.parts, name)
				gone = true
			}
		}
	} else {
		for name := range dirty {
			if p := b.parts[name]; p != nil {
				update(p.entry)
			}
		}
	}
	if len(changed) > 0 || gone || reshaped {
		ss.publish(changed, gone)
	}
	return time.Since(start)
}

// publish merges the views from the builder's pieces, reports what changed
// and makes them the views readers see; b.mu is held. gone says a server
// left the order since the last build.
func (ss *serverSet) publish(changed []string, gone bool) {
	b := &ss.build
	pieces := make([]*piece, len(b.order))
	for i, e := range b.order {
		pieces[i] = b.parts[e.spec.Name].merged
	}
	old := ss.views.Load()
	merged := mergePieces(pieces)
	ss.onDiff("", old.merged, merged)
	for server, list := range merged.conflicts {
		for _, c := range list {
			if !slices.Contains(old.merged.conflicts[server], c) {
				ss.log.Warn("a name could not be exposed as offered", "server", server, "conflict", c)
			}
		}
	}
	single := make(map[string]*catalog, len(b.order))
	for _, e := range b.order {
		if c := old.single[e.spec.Name]; c != nil {
			single[e.spec.Name] = c
		}
	}
	slices.Sort(changed)
	for _, name := range changed {
		c := mergePieces([]*piece{b.parts[name].single})
		if o := old.single[name]; o != nil {
			ss.onDiff(name, o, c)
		}
		single[name] = c
	}
	profiles := ss.publishProfiles(old.profiles, changed, gone)
	ss.views.Store(&views{merged: merged, single: single, profiles: profiles})
}

// publishProfiles merges each profile's view again when one of its
// servers' pieces changed (or a server left), and keeps the others'; b.mu
// is held.
func (ss *serverSet) publishProfiles(old map[string]*catalog, changed []string, gone bool) map[string]*catalog {
	b := &ss.build
	out := make(map[string]*catalog, len(b.reg.Profiles))
	for _, prof := range b.reg.Profiles {
		if prof.Problem != "" {
			continue // not served: its endpoint answers 503
		}
		sel := profileServers(prof, b.order)
		prev := old[prof.Name]
		if prev != nil && !gone && !slices.ContainsFunc(sel, func(e *serverEntry) bool { return slices.Contains(changed, e.spec.Name) }) {
			out[prof.Name] = prev
			continue
		}
		pieces := make([]*piece, len(sel))
		for i, e := range sel {
			pieces[i] = b.parts[e.spec.Name].profilePiece(b.reg, prof)
		}
		c := mergePieces(pieces)
		if prof.Mode == registry.ModeSearch {
			c.enableSearch()
		}
		if prev != nil {
			ss.onDiff(profileEndpoint(prof.Name), prev, c)
		}
		out[prof.Name] = c
	}
	return out
}
