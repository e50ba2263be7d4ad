package bridge

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mcphub/mcphub/client"
)

// StateStore keeps what a server needs across hub restarts, by server name:
// its upstream connection state (an opaque JSON document) and its catalog
// (method → JSON, see Config.Store for the layout). *store.Store satisfies
// it. Errors from the loaders mean "nothing stored"; errors from the savers
// are logged, since a failed save costs only a resume, never a call.
type StateStore interface {
	Upstream(name string) ([]byte, error)
	SaveUpstream(name string, data []byte) error
	Catalog(name string) (map[string][]byte, error)
	SaveCatalog(name string, items map[string][]byte) error
}

// catalogInit is the catalog key under which the initialize result is kept;
// every other key is a list method holding a JSON array of its items.
const catalogInit = "initialize"

// stateFlushDelay is how long state changes are gathered before the latest
// is written.
const stateFlushDelay = 50 * time.Millisecond

// persistence writes one server's connection state and catalog to a
// StateStore. State writes are coalesced: the state changes with every
// upstream event, and the store needs only the latest. Lagging behind is
// safe: a resumed stream then replays a few events the hub already passed
// on, and progress that does not advance is dropped.
type persistence struct {
	st   StateStore
	name string
	log  *slog.Logger
	clk  clock
	// owns reports whether this Server may write the stored records now;
	// nil means always.
	owns func() bool

	// wmu is held across taking the pending state and writing it, so two
	// flushes cannot write out of order and close waits for a write the
	// timer started.
	wmu sync.Mutex
	// cmu is held across taking the catalog and writing it, so an older
	// catalog is never written over a newer one.
	cmu sync.Mutex

	mu      sync.Mutex
	pending *client.State
	last    *client.State // the newest state, written or not
	// stored is the state record as last written or loaded, when storedKnown
	// says the store holds it (nil: nothing), so a state the store already
	// has is not written again.
	stored      []byte
	storedKnown bool
	// savedCatalog is the catalog as last written or loaded, so an
	// unchanged one is not written again.
	savedCatalog map[string][]byte
	stop         func() bool // stops the armed flush; nil when none is armed
	closed       bool
}

func newPersistence(st StateStore, name string, log *slog.Logger, clk clock) *persistence {
	return &persistence{st: st, name: name, log: log, clk: clk}
}

// saveState records s to be written within stateFlushDelay (client.Config
// OnState). It never blocks on the store.
func (p *persistence) saveState(s client.State) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return // the store may be gone; close wrote the last state
	}
	p.pending, p.last = &s, &s
	if p.stop == nil {
		p.stop = p.clk.AfterFunc(stateFlushDelay, p.flush)
	}
}

// regain writes the newest state now that this Server owns the stored
// records (the one that owned them is closing): state changes it saw
// meanwhile were not written.
func (p *persistence) regain() {
	p.mu.Lock()
	p.savedCatalog = nil // the Server that owned the records may have written another
	if p.closed || p.last == nil {
		p.mu.Unlock()
		return
	}
	p.pending = p.last
	p.storedKnown = false // the Server that owned the records wrote them
	p.mu.Unlock()
	p.flush()
}

// close writes any pending state now and stops the flush timer. Later
// state changes are not written.
func (p *persistence) close() {
	p.mu.Lock()
	p.closed = true
	if p.stop != nil {
		p.stop()
	}
	p.mu.Unlock()
	p.flush()
}

func (p *persistence) flush() {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	p.mu.Lock()
	s := p.pending
	p.pending, p.stop = nil, nil
	stored, known := p.stored, p.storedKnown
	p.mu.Unlock()
	if s == nil || s.Transport == client.TransportStdio || !p.mayWrite() {
		return
	}
	data, err := json.Marshal(s)
	if err != nil {
		p.log.Error("could not save the upstream state", "err", err)
		return
	}
	if known && (bytes.Equal(data, stored) || s.SessionID == "" && sessionOf(stored) == "") {
		// The store has it, or has nothing to resume either way: a state
		// without a session is never resumed.
		return
	}
	if err := p.st.SaveUpstream(p.name, data); err != nil {
		p.log.Error("could not save the upstream state", "err", err)
		return
	}
	p.mu.Lock()
	p.stored, p.storedKnown = data, true
	p.mu.Unlock()
}

// sessionOf is the session id of a stored state record, "" for none.
func sessionOf(data []byte) string {
	var s struct {
		SessionID string `json:"sessionId"`
	}
	if data == nil || json.Unmarshal(data, &s) != nil {
		return ""
	}
	return s.SessionID
}

// mayWrite reports whether this Server's writes are the ones to keep.
func (p *persistence) mayWrite() bool { return p.owns == nil || p.owns() }

// Claims hands each server's stored records to one Server at a time: the
// one the hub serves calls on. When the hub replaces a connection it makes
// the new Server while the old one still serves, and swaps them once the new
// one has connected; the old one then closes and ends its upstream session.
// So the oldest live Server of a name that is not closing owns the records:
// the new one neither resumes the old one's session nor writes its own until
// the old one closes, and then writes its newest state at once; the old one,
// closing, writes nothing more (its session is about to end). A replacement
// thrown away never owned anything. One Claims serves a whole hub run.
type Claims struct {
	mu      sync.Mutex
	live    map[string][]*Server // by name, oldest first
	closing map[*Server]bool
	seen    map[string]bool // names some Server claimed in this run
}

// NewClaims returns an empty Claims for one hub run.
func NewClaims() *Claims {
	return &Claims{live: map[string][]*Server{}, closing: map[*Server]bool{}, seen: map[string]bool{}}
}

// claim registers s as a live Server of name and reports whether another
// claimed the name before it in this run (then s starts a fresh session
// rather than resume one another Server uses or has ended).
func (c *Claims) claim(name string, s *Server) (earlier bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	earlier = c.seen[name]
	c.seen[name] = true
	c.live[name] = append(c.live[name], s)
	return earlier
}

// ownerLocked is the Server of name that owns the records; c.mu is held.
func (c *Claims) ownerLocked(name string) *Server {
	for _, x := range c.live[name] {
		if !c.closing[x] {
			return x
		}
	}
	return nil
}

// owns reports whether s owns the records of name.
func (c *Claims) owns(name string, s *Server) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ownerLocked(name) == s
}

// closing marks s as closing and returns the Server that takes the records
// over from it, nil when the owner does not change.
func (c *Claims) closeStarts(name string, s *Server) (next *Server) {
	c.mu.Lock()
	defer c.mu.Unlock()
	was := c.ownerLocked(name)
	c.closing[s] = true
	if now := c.ownerLocked(name); was == s && now != nil {
		return now
	}
	return nil
}

// release drops s once it has closed.
func (c *Claims) release(name string, s *Server) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.closing, s)
	c.live[name] = slices.DeleteFunc(c.live[name], func(x *Server) bool { return x == s })
	if len(c.live[name]) == 0 {
		delete(c.live, name)
	}
}

// resume loads the stored connection state, nil when there is none, and
// remembers what the store holds.
func (p *persistence) resume() *client.State {
	data, err := p.st.Upstream(p.name)
	p.mu.Lock()
	p.stored, p.storedKnown = nil, true
	if err == nil {
		p.stored = data
	}
	p.mu.Unlock()
	if err != nil {
		return nil
	}
	var s client.State
	if json.Unmarshal(data, &s) != nil || s.SessionID == "" {
		return nil
	}
	return &s
}

// saveCatalog records the server's catalog, as get returns it, after a
// change. A catalog without an initialize result (never connected, no
// cache) is not worth keeping.
func (p *persistence) saveCatalog(get func() Cache) {
	p.cmu.Lock()
	defer p.cmu.Unlock()
	c := get()
	if c.Init == nil || !p.mayWrite() {
		return
	}
	items := map[string][]byte{catalogInit: c.Init}
	for m, list := range c.Lists {
		data, err := json.Marshal(list)
		if err != nil {
			p.log.Error("could not encode a list for the catalog cache", "method", m, "err", err)
			continue
		}
		items[m] = data
	}
	// Changed fires on every state change, a failed reconnect included;
	// the store is written only when the catalog itself changed.
	p.mu.Lock()
	same := maps.EqualFunc(items, p.savedCatalog, bytes.Equal)
	p.mu.Unlock()
	if same {
		return
	}
	if err := p.st.SaveCatalog(p.name, items); err != nil {
		p.log.Error("could not save the catalog", "err", err)
		return
	}
	p.mu.Lock()
	p.savedCatalog = items
	p.mu.Unlock()
}

// cache loads the stored catalog, nil when there is none, and remembers it
// as saved.
func (p *persistence) cache() *Cache {
	items, err := p.st.Catalog(p.name)
	if err != nil || items[catalogInit] == nil {
		return nil
	}
	p.mu.Lock()
	p.savedCatalog = items
	p.mu.Unlock()
	c := &Cache{Init: items[catalogInit], Lists: map[string][]json.RawMessage{}}
	for m, data := range items {
		if m == catalogInit {
			continue
		}
		var list []json.RawMessage
		if json.Unmarshal(data, &list) == nil {
			c.Lists[m] = list
		}
	}
	return c
}
