package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/redact"
	"github.com/mcphub/mcphub/registry"
)

// Options configure a Hub.
type Options struct {
	// Registry is the registry to serve at first; Apply changes it later.
	Registry *registry.Registry
	// NewUpstream creates the upstream of one server.
	NewUpstream NewUpstreamFunc
	// Version is mcphub's version, reported as serverInfo.version.
	Version string
	// Logger receives the hub's logs; nil means slog.Default().
	Logger *slog.Logger
	// Token, when set, is the bearer token every request must carry.
	Token string
	// Heartbeat is the idle interval after which SSE streams get a comment;
	// 0 means 15 s.
	Heartbeat time.Duration
	// ListChangedDelay is the window list_changed notifications are
	// coalesced over; 0 means 250 ms.
	ListChangedDelay time.Duration
	// Warmup is how long list requests wait for servers that are still
	// starting, so a client that connects with the hub sees their tools;
	// 0 means 10 s.
	Warmup time.Duration
	// Store, when set, keeps sessions, streams and events across restarts.
	Store Store
}

// Hub is mcphub as an MCP server: it owns the upstreams of the registry's
// enabled servers, their merged catalog, the client sessions, and the HTTP
// endpoints. New → Start → Close.
type Hub struct {
	opts Options
	log  *slog.Logger

	ctx    context.Context // ended by Close; parent of sessions and upstreams
	cancel context.CancelFunc

	mu       sync.RWMutex
	reg      *registry.Registry
	servers  map[string]*serverEntry // enabled servers, by name
	merged   *catalog                // the /mcp view
	single   map[string]*catalog     // the /{server}/mcp views
	regErr   string                  // last registry error, when the running set is older
	sessions map[string]*session
	warm     chan struct{} // closed once no server is starting, or after Warmup

	notifyMu     sync.Mutex
	pending      map[string]map[string]bool // endpoint → list methods changed, awaiting the window
	pendingSince map[string]time.Time       // endpoint → when its latest change happened
	timer        *time.Timer

	logMu    sync.Mutex
	upLevels map[string]string // level last sent to each upstream

	subsMu sync.Mutex
	subs   map[string]int // "server\x00uri" → sessions subscribed

	writer *writer // batches writes to Store; nil without one

	wg        sync.WaitGroup
	closeOnce sync.Once
}

// serverEntry is one enabled server: its spec and its upstream.
type serverEntry struct {
	spec *registry.Server
	up   Upstream
}

// New prepares a hub; Start connects its upstreams.
func New(opts Options) *Hub {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 15 * time.Second
	}
	if opts.ListChangedDelay <= 0 {
		opts.ListChangedDelay = 250 * time.Millisecond
	}
	if opts.Warmup <= 0 {
		opts.Warmup = 10 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Hub{
		opts: opts, log: opts.Logger, ctx: ctx, cancel: cancel,
		reg: opts.Registry, servers: map[string]*serverEntry{}, single: map[string]*catalog{},
		sessions: map[string]*session{}, pending: map[string]map[string]bool{}, pendingSince: map[string]time.Time{},
		upLevels: map[string]string{}, subs: map[string]int{}, warm: make(chan struct{}),
		merged: buildCatalog(nil, true, opts.Registry.Hub.Separator),
	}
}

// Start creates and starts the upstream of every enabled server. It returns
// at once: upstreams connect in the background, each on its own, so one that
// fails never holds up the others.
func (h *Hub) Start(ctx context.Context) error {
	h.mu.Lock()
	for _, spec := range h.reg.Servers {
		if spec.Enabled {
			h.servers[spec.Name] = h.newServerLocked(spec)
		}
	}
	if h.opts.Store != nil {
		h.writer = newWriter(h.opts.Store, h.log)
		// Sessions come back before any upstream starts, so requests that
		// were in flight are handed to their upstreams first.
		if err := h.restoreLocked(); err != nil {
			h.mu.Unlock()
			h.writer.close()
			return err
		}
	}
	for _, e := range h.servers {
		e.up.Start(h.ctx)
	}
	h.rebuildLocked()
	h.mu.Unlock()
	h.applyLogLevels()
	h.resubscribe()
	h.wg.Add(2)
	go func() {
		defer h.wg.Done()
		h.warmup()
	}()
	go func() {
		defer h.wg.Done()
		h.runSweeper()
	}()
	return nil
}

// addServerLocked creates and starts a server's upstream; h.mu is held.
func (h *Hub) addServerLocked(spec *registry.Server) {
	e := h.newServerLocked(spec)
	h.servers[spec.Name] = e
	e.up.Start(h.ctx)
}

// newServerLocked creates a server's upstream without starting it. A server
// that points at this hub itself is refused, visibly: connecting to it would
// loop every request back in.
func (h *Hub) newServerLocked(spec *registry.Server) *serverEntry {
	if h.selfReference(spec) {
		reason := fmt.Sprintf("%s points at this mcphub itself (%s); refusing to connect to it", redact.URL(spec.URL), h.reg.Hub.Listen)
		h.log.Error("refused a server", "server", spec.Name, "reason", reason)
		return &serverEntry{spec: spec, up: refused{reason: reason}}
	}
	name := spec.Name
	events := UpstreamEvents{
		Changed:      func() { h.upstreamChanged(name) },
		Notification: func(session string, msg *jsonrpc.Message) { h.upstreamNotification(name, session, msg) },
		Request: func(ctx context.Context, session, method string, params json.RawMessage) (json.RawMessage, error) {
			return h.upstreamRequest(ctx, name, session, method, params)
		},
	}
	return &serverEntry{spec: spec, up: h.opts.NewUpstream(spec, h.reg.Hub, events)}
}

// warmup closes h.warm once no server is starting any more, or after the
// Warmup period, whichever comes first.
func (h *Hub) warmup() {
	deadline := time.NewTimer(h.opts.Warmup)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	defer close(h.warm)
	for {
		if !h.anyStarting() {
			return
		}
		select {
		case <-deadline.C:
			return
		case <-tick.C:
		case <-h.ctx.Done():
			return
		}
	}
}

// anyStarting reports whether a server is still connecting for the first
// time with nothing known of it; a server whose catalog is cached from the
// last run is served from the cache meanwhile.
func (h *Hub) anyStarting() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, e := range h.servers {
		if e.up.Status().State == StateStarting && e.up.Initialize() == nil {
			return true
		}
	}
	return false
}

// sources returns the servers of a view in catalog order: by name.
func (h *Hub) sourcesLocked() []source {
	names := make([]string, 0, len(h.servers))
	for n := range h.servers {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]source, 0, len(names))
	for _, n := range names {
		out = append(out, source{spec: h.servers[n].spec, up: h.servers[n].up})
	}
	return out
}

// rebuildLocked rebuilds every catalog and schedules list_changed for the
// views whose lists changed; h.mu is held.
func (h *Hub) rebuildLocked() {
	srcs := h.sourcesLocked()
	sep := h.reg.Hub.Separator
	merged := buildCatalog(srcs, true, sep)
	h.diffCatalogs("", h.merged, merged)
	for server, list := range merged.conflicts {
		for _, c := range list {
			if !slices.Contains(h.merged.conflicts[server], c) {
				h.log.Warn("a name could not be exposed as offered", "server", server, "conflict", c)
			}
		}
	}
	h.merged = merged
	single := make(map[string]*catalog, len(srcs))
	for _, src := range srcs {
		c := buildCatalog([]source{src}, false, sep)
		if old := h.single[src.spec.Name]; old != nil {
			h.diffCatalogs(src.spec.Name, old, c)
		}
		single[src.spec.Name] = c
	}
	h.single = single
}

// upstreamChanged is called by an upstream whose state or lists changed.
func (h *Hub) upstreamChanged(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.servers[name]; !ok {
		return
	}
	h.rebuildLocked()
}

// view returns the catalog of an endpoint, nil for an unknown server.
func (h *Hub) view(endpoint string) *catalog {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if endpoint == "" {
		return h.merged
	}
	return h.single[endpoint]
}

// server returns an enabled server's entry.
func (h *Hub) server(name string) *serverEntry {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.servers[name]
}

// registry returns the registry in force.
func (h *Hub) registry() *registry.Registry {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.reg
}

// Close ends every session and stops every upstream. It waits for them and
// is safe to call more than once.
func (h *Hub) Close() error {
	h.closeOnce.Do(func() {
		h.cancel()
		h.mu.Lock()
		sessions := make([]*session, 0, len(h.sessions))
		for _, s := range h.sessions {
			sessions = append(sessions, s)
		}
		h.sessions = map[string]*session{}
		servers := h.servers
		h.servers = map[string]*serverEntry{}
		h.mu.Unlock()
		for _, s := range sessions {
			s.close()
		}
		var wg sync.WaitGroup
		for _, e := range servers {
			wg.Add(1)
			go func(up Upstream) {
				defer wg.Done()
				up.Close()
			}(e.up)
		}
		wg.Wait()
		h.notifyMu.Lock()
		if h.timer != nil {
			h.timer.Stop()
		}
		h.notifyMu.Unlock()
		h.wg.Wait()
		if h.writer != nil {
			h.writer.close()
		}
	})
	return nil
}
