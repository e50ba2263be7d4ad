package team

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/hub"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/registry"
	"github.com/mcphub/mcphub/store"
)

// oneRetry is how long a replica waits before asking again who runs a
// replicas = "one" server, when the store could not say; oneRecheck, how
// often it asks anyway (the runner may have given the server up while it
// goes on beating, as when its registry no longer has it).
const (
	oneRetry   = time.Second
	oneRecheck = 5 * time.Second
)

// Upstreams wraps the hub's upstream factory for a team hub: a stdio server
// with replicas = "one" runs on the replica that owns it cluster-wide (the
// store's server_owners), and every other replica reaches it through that
// replica's /{server}/mcp, with the cluster's secret. When the owner stops
// or is replaced, the server moves: another replica claims it and starts
// its process, and the others follow.
func (r *Replica) Upstreams(inner hub.NewUpstreamFunc) hub.NewUpstreamFunc {
	cluster, log := r.c, r.log
	// live counts each server's oneUpstreams: a reload starts the new one
	// before it closes the old, and only the last to close may give the
	// server up in the store.
	var mu sync.Mutex
	live := map[string]int{}
	return func(spec *registry.Server, hc registry.Hub, events hub.UpstreamEvents) hub.Upstream {
		if spec.Replicas != registry.ReplicasOne || spec.Kind() != registry.KindStdio {
			return inner(spec, hc, events)
		}
		mu.Lock()
		live[spec.Name]++
		mu.Unlock()
		last := func() bool {
			mu.Lock()
			defer mu.Unlock()
			live[spec.Name]--
			if live[spec.Name] > 0 {
				return false
			}
			delete(live, spec.Name)
			return true
		}
		return &oneUpstream{inner: inner, spec: spec, hc: hc, events: events, cluster: cluster, last: last,
			log: log.With("server", spec.Name), ready: make(chan struct{})}
	}
}

// oneUpstream is a replicas = "one" server on one replica: the process
// itself when this replica owns the server, else a connection to the
// replica that does. Calls go to whichever is current.
type oneUpstream struct {
	inner   hub.NewUpstreamFunc
	spec    *registry.Server
	hc      registry.Hub
	events  hub.UpstreamEvents
	cluster *store.Cluster
	log     *slog.Logger
	// last reports, once, whether this is the server's last live
	// oneUpstream on this replica (see Upstreams).
	last func() bool

	mu     sync.Mutex
	cur    hub.Upstream // nil until the owner is known
	on     string       // the replica it runs on
	onGen  int64        // and that replica's generation
	mine   bool         // it runs on this replica
	level  string       // the log level asked for, set on every new upstream
	cancel context.CancelFunc
	done   chan struct{}
	ready  chan struct{} // closed once cur is first set
	closed bool
}

// Start looks up (or takes) the server's owner and keeps following it.
func (o *oneUpstream) Start(ctx context.Context) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cancel != nil || o.closed {
		return
	}
	ctx, o.cancel = context.WithCancel(ctx)
	o.done = make(chan struct{})
	go o.follow(ctx)
}

// follow sets the upstream for the server's owner, then waits for that
// owner (or, when it is this replica, this replica's generation) to stop
// or be replaced, or for the record to change, and follows again.
func (o *oneUpstream) follow(ctx context.Context) {
	defer close(o.done)
	for ctx.Err() == nil {
		owner, addr, gen, mine, err := o.cluster.ServerOwner(ctx, o.spec.Name)
		if err != nil {
			o.log.Warn("could not learn which replica runs the server", "err", err)
			sleepCtx(ctx, oneRetry)
			continue
		}
		if !o.runsOn(owner, gen) {
			var up hub.Upstream
			if mine {
				up = o.inner(o.spec, o.hc, o.events)
				o.log.Info("runs the server's one process of the team hub on this replica")
			} else {
				up = o.inner(o.viaOwner(addr), o.hc, o.events)
				o.log.Info("reaches the server through the replica that runs it", "replica", owner, "address", addr)
			}
			up.Start(ctx)
			o.swap(up, owner, gen, mine)
		}
		watch, watchGen := owner, gen
		if mine {
			watch, watchGen = o.cluster.Self()
		}
		wctx, cancel := context.WithTimeout(ctx, oneRecheck)
		select {
		case <-wctx.Done():
		case <-o.cluster.Gone(wctx, watch, watchGen):
		}
		cancel()
	}
}

// runsOn reports whether the current upstream follows owner at gen.
func (o *oneUpstream) runsOn(owner string, gen int64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.cur != nil && o.on == owner && o.onGen == gen
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// viaOwner is the server as the replica that runs it serves it: its
// /{server}/mcp, authenticated with the cluster's secret.
func (o *oneUpstream) viaOwner(addr string) *registry.Server {
	s := *o.spec
	s.Command, s.Args, s.Env, s.Cwd = "", nil, nil, ""
	s.URL = strings.TrimSuffix(addr, "/") + "/" + o.spec.Name + "/mcp"
	s.Transport = registry.TransportStreamableHTTP
	s.Headers = maps.Clone(s.Headers)
	if s.Headers == nil {
		s.Headers = map[string]string{}
	}
	s.Headers[hub.ForwardedHeader] = o.cluster.Secret()
	s.Headers[hub.RelayHeader] = "1"
	return &s
}

// swap makes up, started, current, closing the one it replaces.
func (o *oneUpstream) swap(up hub.Upstream, on string, gen int64, mine bool) {
	o.mu.Lock()
	old, level := o.cur, o.level
	o.cur, o.on, o.onGen, o.mine = up, on, gen, mine
	if old == nil {
		close(o.ready)
	}
	o.mu.Unlock()
	if level != "" {
		up.SetLogLevel(level)
	}
	if old != nil {
		old.Close()
	}
	if o.events.Changed != nil {
		o.events.Changed()
	}
}

// current is the upstream calls go to; nil until the owner is known.
func (o *oneUpstream) current() hub.Upstream {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.cur
}

// Close stops following and closes the current upstream; a server this
// replica ran is given up in the store, for another replica to take at
// once. It is idempotent.
func (o *oneUpstream) Close() error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil
	}
	o.closed = true
	cancel, done := o.cancel, o.done
	o.mu.Unlock()
	lastOne := o.last()
	if cancel != nil {
		cancel()
		<-done
	}
	o.mu.Lock()
	up, mine := o.cur, o.mine
	o.cur, o.mine = nil, false
	o.mu.Unlock()
	if up == nil {
		return nil
	}
	err := up.Close()
	if mine && lastOne {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if rerr := o.cluster.ReleaseServer(ctx, o.spec.Name); rerr != nil {
			o.log.Warn("could not give up the server in the store; another replica takes it once this one's heartbeat stops", "err", rerr)
		}
	}
	return err
}

// Relays reports that the server is reached through another replica now
// (hub.Relayer).
func (o *oneUpstream) Relays() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.cur != nil && !o.mine
}

func (o *oneUpstream) Call(ctx context.Context, session string, sessionEra bool, method string, params json.RawMessage, peer jsonrpc.Peer) (json.RawMessage, error) {
	up := o.current()
	if up == nil {
		select {
		case <-o.ready:
			up = o.current()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if up == nil {
			return nil, fmt.Errorf("server %s: closed", o.spec.Name)
		}
	}
	return up.Call(ctx, session, sessionEra, method, params, peer)
}

func (o *oneUpstream) Notify(ctx context.Context, session, method string, params json.RawMessage) error {
	if up := o.current(); up != nil {
		return up.Notify(ctx, session, method, params)
	}
	return fmt.Errorf("server %s: not connected yet", o.spec.Name)
}

func (o *oneUpstream) SetLogLevel(level string) {
	o.mu.Lock()
	o.level = level
	up := o.cur
	o.mu.Unlock()
	if up != nil {
		up.SetLogLevel(level)
	}
}

func (o *oneUpstream) SessionClosed(session string) {
	if up := o.current(); up != nil {
		up.SessionClosed(session)
	}
}

func (o *oneUpstream) Initialize() json.RawMessage {
	if up := o.current(); up != nil {
		return up.Initialize()
	}
	return nil
}

func (o *oneUpstream) List(method string) []json.RawMessage {
	if up := o.current(); up != nil {
		return up.List(method)
	}
	return nil
}

// Status is the current upstream's, saying which replica runs the server
// when it is another.
func (o *oneUpstream) Status() hub.UpstreamStatus {
	o.mu.Lock()
	up, on, mine := o.cur, o.on, o.mine
	o.mu.Unlock()
	if up == nil {
		return hub.UpstreamStatus{State: api.StateStarting}
	}
	st := up.Status()
	if !mine {
		st.Transport = "via replica " + on
	}
	return st
}

// Adopt hands a call of an earlier run to the current upstream; a
// replicas = "one" server's calls are resumed by its own replica only.
func (o *oneUpstream) Adopt(upstreamID json.RawMessage, hubToken string, progressToken json.RawMessage, peer jsonrpc.Peer, done func(json.RawMessage, error)) bool {
	return false
}

var (
	_ hub.Upstream = (*oneUpstream)(nil)
	_ hub.Relayer  = (*oneUpstream)(nil)
)
