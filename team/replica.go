package team

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/hub"
	"github.com/mcphub/mcphub/registry"
	"github.com/mcphub/mcphub/store"
)

// Environment variables of a replica's identity, between the flags and the
// defaults.
const (
	ReplicaEnv   = "MCPHUB_REPLICA"
	AdvertiseEnv = "MCPHUB_ADVERTISE"
)

// Config is what a replica is told of itself.
type Config struct {
	// Name and Advertise are --replica and --advertise; "" for the
	// environment (ReplicaEnv, AdvertiseEnv), else the defaults
	// (Identity).
	Name, Advertise string
	// Registry is the registry served (its listen address, TLS, digest).
	Registry *registry.Registry
	Version  string
	Log      *slog.Logger
}

// Identity is a replica's name and the address other replicas forward to:
// name, else ReplicaEnv, else this host's name and the port it listens on;
// advertise, else AdvertiseEnv, else the listen address (this host's name
// when it listens on every interface), over https when the hub serves TLS.
func Identity(name, advertise string, h registry.Hub) (string, string, error) {
	host, port, err := net.SplitHostPort(h.Listen)
	if err != nil {
		return "", "", fmt.Errorf("listen %q: %w", h.Listen, err)
	}
	hostname := cmp.Or(hostName(), "localhost")
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = hostname
	}
	scheme := "http"
	if h.TLSCert != "" {
		scheme = "https"
	}
	return cmp.Or(name, os.Getenv(ReplicaEnv), net.JoinHostPort(hostname, port)),
		cmp.Or(advertise, os.Getenv(AdvertiseEnv), scheme+"://"+net.JoinHostPort(host, port)), nil
}

func hostName() string {
	h, _ := os.Hostname()
	return h
}

// Replica is this hub's membership of a team hub. Join → (the hub is made
// with Cluster and Upstreams) → Serve → Close.
type Replica struct {
	c   *store.Cluster
	db  *store.Store
	log *slog.Logger
	hub atomic.Pointer[hub.Hub]
	// lost receives why serving must stop: another process runs under
	// this replica's name.
	lost chan error
}

// Join makes this hub a replica of the team hub whose PostgreSQL store db
// is: it registers under its name, taking back the sessions its earlier run
// held. What the store reports (sessions taken over from a replica that
// stopped, this replica fenced, its heartbeat stale) reaches the hub once
// Serve has named it.
func Join(ctx context.Context, db *store.Store, cfg Config) (*Replica, error) {
	name, address, err := Identity(cfg.Name, cfg.Advertise, cfg.Registry.Hub)
	if err != nil {
		return nil, err
	}
	r := &Replica{db: db, log: cfg.Log, lost: make(chan error, 1)}
	r.c, err = db.Join(ctx, store.ClusterConfig{Name: name, Address: address, Registry: cfg.Registry.Digest(), Version: cfg.Version, Log: cfg.Log,
		OnClaimed: func(ids []string) { r.withHub(func(h *hub.Hub) { h.TakeOver(ids) }) },
		OnFenced:  func() { r.withHub((*hub.Hub).LetGo) },
		// A sign-in or sign-out for the team: every replica connects to
		// the server again with the grant the store now holds.
		OnGrant: func(server string) {
			r.withHub(func(h *hub.Hub) {
				if server == "" {
					// Announcements may have been missed: the servers
					// waiting for a sign-in look at the store again.
					for _, s := range h.Status().Servers {
						if s.State == api.StateNeedsLogin {
							h.Restart(s.Name)
						}
					}
					return
				}
				if err := h.Restart(server); err != nil {
					r.log.Debug("a server's shared grant changed, but this replica does not serve it", "server", server, "err", err)
				}
			})
		},
		OnStale: func() { r.withHub((*hub.Hub).CutStreams) },
		OnLost: func(err error) {
			select {
			case r.lost <- err:
			default:
			}
		},
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// withHub runs f on the hub once Serve has named it.
func (r *Replica) withHub(f func(*hub.Hub)) {
	if h := r.hub.Load(); h != nil {
		f(h)
	}
}

// Serve starts the heartbeat for h, the hub made with Cluster.
func (r *Replica) Serve(ctx context.Context, h *hub.Hub) {
	r.hub.Store(h)
	r.c.Start(ctx)
}

// Lost receives why serving must stop.
func (r *Replica) Lost() <-chan error { return r.lost }

// SetRegistry records the registry served after a live reload.
func (r *Replica) SetRegistry(reg *registry.Registry) { r.c.SetRegistry(reg.Digest()) }

// Close stops the heartbeat and tells the others this replica stopped, so
// they take its sessions at once. It is idempotent.
func (r *Replica) Close() error { return r.c.Close() }

// Cluster is the replica's membership as the hub's Cluster.
func (r *Replica) Cluster() hub.Cluster { return hubCluster{r.c, r.db} }

// Slots counts each caller's calls in progress across the replicas, for
// their caps ([hub.limits] concurrent_calls, a key's own).
func (r *Replica) Slots() hub.SlotKeeper { return slotKeeper{r.c} }

// slotKeeper is the store's cluster as the hub's SlotKeeper.
type slotKeeper struct{ c *store.Cluster }

func (k slotKeeper) AcquireSlot(subject string, max int) (func(), bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return k.c.AcquireSlot(ctx, subject, max)
}

// hubCluster adapts store.Cluster to hub.Cluster.
type hubCluster struct {
	c  *store.Cluster
	db *store.Store
}

func (hc hubCluster) Locate(ctx context.Context, session string) (hub.SessionPlace, error) {
	p, err := hc.c.Locate(ctx, session)
	return hub.SessionPlace(p), err
}

func (hc hubCluster) Claim(ctx context.Context, p hub.SessionPlace) ([]string, error) {
	return hc.c.Claim(ctx, store.Place(p))
}

func (hc hubCluster) Gone(ctx context.Context, replica string, gen int64) <-chan struct{} {
	return hc.c.Gone(ctx, replica, gen)
}

func (hc hubCluster) Session(id string) (hub.SessionRecord, error) {
	rec, err := hc.db.Session(id)
	return hub.SessionRecord(rec), err
}

func (hc hubCluster) Secret() string                   { return hc.c.Secret() }
func (hc hubCluster) Current(ctx context.Context) bool { return hc.c.Current(ctx) }
func (hc hubCluster) Name() string                     { return hc.c.Name() }
func (hc hubCluster) Problem() error                   { return hc.c.Problem() }
func (hc hubCluster) Deadline() time.Duration          { return hc.c.Deadline() }

func (hc hubCluster) Address(ctx context.Context, replica string) (string, int64, bool, error) {
	return hc.c.Address(ctx, replica)
}

// Status lists the replicas, whether the live ones serve the same
// registry, and which replica runs each replicas = "one" server.
func (hc hubCluster) Status(ctx context.Context) *api.ClusterStatus {
	st := &api.ClusterStatus{Self: hc.c.Name(), Replicas: []api.ReplicaStatus{}}
	reps, now, err := hc.c.Replicas(ctx)
	if err != nil {
		st.Error = err.Error()
		return st
	}
	digests := map[string]bool{}
	for _, r := range reps {
		st.Replicas = append(st.Replicas, api.ReplicaStatus{Name: r.Name, Address: r.Address, Alive: r.Alive,
			UpSeconds: now.Sub(r.Started).Seconds(), HeartbeatAgeMS: now.Sub(r.Heartbeat).Milliseconds(),
			Generation: r.Generation, Sessions: r.Sessions, Registry: r.Registry, Version: r.Version, Self: r.Self})
		if r.Alive {
			digests[r.Registry] = true
		}
	}
	st.RegistriesDiffer = len(digests) > 1
	if owners, err := hc.c.ServerOwners(ctx); err == nil && len(owners) > 0 {
		st.Servers = owners
	}
	return st
}

var _ hub.Cluster = hubCluster{}
