package hub

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/internal/goroutines"
	"github.com/mcphub/mcphub/internal/jsonrpc"
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
	// ResolveToken, when set, reads the token of a registry's [hub] table
	// ("" when auth is off); Apply calls it so that auth turned on or off,
	// or a new token, takes effect without a restart.
	ResolveToken func(registry.Hub) (string, error)
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
	// Cluster, on a replica of a team hub (which has a Store), shares the
	// sessions with the other replicas.
	Cluster Cluster
	// Access, when set, identifies the callers that do not carry Token
	// (API keys, sign-ins with the team's identity provider) and limits
	// what they reach; it applies while auth is on.
	Access Access
	// Limiter, when set, keeps the callers' rate limits ([hub.limits], a
	// key's own); without it rates are not limited.
	Limiter Limiter
	// Slots, on a replica of a team hub, counts each caller's calls in
	// progress across the replicas; without it the hub counts its own.
	Slots SlotKeeper
	// Takeover, with Cluster, makes the upstreams that finish the calls of
	// a session taken over from a replica that stopped.
	Takeover TakeoverFunc
}

// Hub is mcphub as an MCP server. It composes its parts, each of which owns
// one job and its own lock:
//
//   - servers (serverSet): the registry in force, the upstreams, the catalogs;
//   - sessions (sessionSet): the client sessions and their streams;
//   - router: the method table that answers or forwards each request;
//   - fanout: list_changed, notifications and requests outside a call, and
//     the upstreams' log levels;
//   - edge: HTTP routes and checks;
//   - store (persister): what survives a restart.
//
// New → Start → Close.
type Hub struct {
	opts Options
	log  *slog.Logger

	ctx    context.Context // ended by Close; parent of sessions and upstreams
	cancel context.CancelFunc

	servers  *serverSet
	sessions *sessionSet
	router   *router
	fanout   *fanout
	edge     *edge
	store    *persister // nil without a Store

	group     goroutines.Group // the sweeper and subscription renewals
	closeOnce sync.Once
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
	h := &Hub{opts: opts, log: opts.Logger, ctx: ctx, cancel: cancel}
	h.servers = newServerSet(ctx, h.log, opts.Registry, opts.NewUpstream)
	h.fanout = newFanout(ctx, opts.ListChangedDelay)
	h.sessions = &sessionSet{ctx: ctx, log: h.log, version: opts.Version, heartbeat: opts.Heartbeat, byID: map[string]*session{}}
	h.router = newRouter(h.servers, nil, h.fanout.applyLevels)
	h.edge = newEdge(h.log, opts.Token, h.servers, h.sessions, h)
	h.edge.access, h.edge.limiter, h.edge.shared = opts.Access, opts.Limiter, opts.Slots
	if opts.Cluster != nil {
		h.edge.cluster, h.edge.forwarder = opts.Cluster, http.DefaultTransport.(*http.Transport).Clone()
		h.sessions.parked.prefix = replicaStatePrefix(opts.Cluster)
	}
	h.sessions.group, h.sessions.takeoverUp = &h.group, opts.Takeover

	h.servers.onDiff = h.fanout.diff
	h.servers.onSwap = h.fanout.applyLevels
	h.servers.events = h.upstreamEvents
	h.fanout.sessions, h.fanout.servers = h.sessions, h.servers
	h.sessions.servers, h.sessions.router, h.sessions.fanout = h.servers, h.router, h.fanout
	return h
}

// upstreamEvents are the callbacks of one server's upstream.
func (h *Hub) upstreamEvents(name string) UpstreamEvents {
	return UpstreamEvents{
		Changed:      func() { h.servers.changed(name) },
		Notification: func(session string, msg *jsonrpc.Message) { h.fanout.notification(name, session, msg) },
		Request: func(ctx context.Context, session, method string, params json.RawMessage) (json.RawMessage, error) {
			return h.fanout.request(ctx, name, session, method, params)
		},
	}
}

// Start creates and starts the upstream of every enabled server. It returns
// at once: upstreams connect in the background, each on its own, so one that
// fails never holds up the others.
func (h *Hub) Start(ctx context.Context) error {
	h.servers.create()
	if h.opts.Store != nil {
		h.store = newPersister(h.opts.Store, h.log)
		h.store.w.maxQueued = func() int64 { return h.servers.registry().Hub.BufferBytes }
		h.router.store, h.sessions.store = h.store, h.store
		// Sessions come back before any upstream starts, so requests that
		// were in flight are handed to their upstreams first.
		if err := h.sessions.restore(h.opts.Store); err != nil {
			h.store.close()
			return err
		}
	}
	h.servers.start(h.opts.Warmup)
	h.fanout.applyLevels()
	h.router.resubscribe(h.sessions.list(), &h.group)
	h.group.Go(h.sessions.runSweeper)
	return nil
}

// ServeHTTP serves every endpoint of the hub (see edge).
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.edge.ServeHTTP(w, r) }

// Status reports the hub's state for /readyz, `mcphub status` and `list`.
func (h *Hub) Status() api.Status {
	servers, reg, regErr := h.servers.status()
	st := api.Status{Version: h.opts.Version, URL: reg.Hub.URL("/mcp"), RegistryError: regErr, Sessions: h.sessions.len(), Servers: servers,
		NeedsRestart: h.servers.restartNeeded()}
	if h.opts.Cluster != nil {
		ctx, cancel := context.WithTimeout(h.ctx, 5*time.Second)
		st.Cluster = h.opts.Cluster.Status(ctx)
		cancel()
	}
	if err := h.storeProblem(); err != nil {
		st.StoreError = err.Error()
	}
	for _, p := range reg.Profiles {
		ep := profileEndpoint(p.Name)
		ps := api.ProfileStatus{Name: p.Name, URL: reg.Hub.URL(endpointName(ep)), Mode: p.Mode, Servers: []string{},
			Sessions: h.sessions.count(ep), Problem: p.Problem}
		for _, e := range h.servers.of(ep) {
			ps.Servers = append(ps.Servers, e.spec.Name)
		}
		slices.Sort(ps.Servers)
		if view := h.servers.view(ep); view != nil {
			ps.Tools, ps.Listed = len(view.tools), len(view.items["tools/list"])
			for _, server := range slices.Sorted(maps.Keys(view.conflicts)) {
				for _, c := range view.conflicts[server] {
					ps.Conflicts = append(ps.Conflicts, server+": "+c)
				}
			}
		}
		st.Profiles = append(st.Profiles, ps)
	}
	return st
}

// storeProblem is why the store cannot be relied on now: it refuses
// writes, or (on a replica of a team hub) has not taken the heartbeat
// lately. nil while it works, or without a store.
func (h *Hub) storeProblem() error {
	if err := h.store.problem(); err != nil {
		return err
	}
	if h.opts.Cluster != nil {
		return h.opts.Cluster.Problem()
	}
	return nil
}

// Sessions lists the live sessions, oldest first.
func (h *Hub) Sessions() []api.SessionInfo { return h.sessions.info() }

// EndSession ends a live session, as a DELETE from its client would.
func (h *Hub) EndSession(id string) bool {
	s := h.sessions.get(id)
	if s == nil {
		return false
	}
	h.sessions.end(s)
	return true
}

// closing reports whether Close has begun.
func (h *Hub) closing() bool { return h.ctx.Err() != nil }

// Close ends every session and stops every upstream. It waits for them and
// is safe to call more than once.
func (h *Hub) Close() error {
	h.closeOnce.Do(func() {
		h.cancel()
		h.sessions.closeAll()
		h.servers.close()
		h.fanout.stop()
		h.group.Stop()
		h.store.close()
	})
	return nil
}
