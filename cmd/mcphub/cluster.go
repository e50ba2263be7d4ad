package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/hub"
	"github.com/mcphub/mcphub/registry"
	"github.com/mcphub/mcphub/store"
)

// Environment variables of a replica's identity, between the flags and the
// defaults.
const (
	replicaEnv   = "MCPHUB_REPLICA"
	advertiseEnv = "MCPHUB_ADVERTISE"
)

// replicaIdentity is a replica's name and the address other replicas
// forward to: --replica / MCPHUB_REPLICA, else this host's name and the
// port it listens on; --advertise / MCPHUB_ADVERTISE, else the listen
// address (this host's name when it listens on every interface), over
// https when the hub serves TLS.
func replicaIdentity(f serveFlags, reg *registry.Registry) (name, address string, err error) {
	host, port, err := net.SplitHostPort(reg.Hub.Listen)
	if err != nil {
		return "", "", fmt.Errorf("listen %q: %w", reg.Hub.Listen, err)
	}
	hostname, _ := os.Hostname()
	if hostname == "" {
		hostname = "localhost"
	}
	name = firstOf(f.replica, os.Getenv(replicaEnv), net.JoinHostPort(hostname, port))
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = hostname
	}
	scheme := "http"
	if reg.Hub.TLSCert != "" {
		scheme = "https"
	}
	address = firstOf(f.advertise, os.Getenv(advertiseEnv), scheme+"://"+net.JoinHostPort(host, port))
	return name, address, nil
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// joinCluster makes this hub a replica of the team hub whose PostgreSQL
// store db is: it registers under its name, takes back the sessions its
// earlier run held, and routes the store's takeovers, fences and stale
// heartbeats to the hub (*h, set once the hub exists). lost receives why
// serving must stop: another process runs under this replica's name.
func joinCluster(ctx context.Context, f serveFlags, reg *registry.Registry, db *store.Store, h **hub.Hub, lost chan<- error, log *slog.Logger) (*store.Cluster, error) {
	name, address, err := replicaIdentity(f, reg)
	if err != nil {
		return nil, err
	}
	return db.Join(ctx, store.ClusterConfig{Name: name, Address: address, Registry: reg.Digest(), Version: mcphubVersion(), Log: log,
		OnClaimed: func(ids []string) {
			if *h != nil {
				(*h).TakeOver(ids)
			}
		},
		OnFenced: func() {
			if *h != nil {
				(*h).LetGo()
			}
		},
		OnStale: func() {
			if *h != nil {
				(*h).CutStreams()
			}
		},
		OnLost: func(err error) {
			select {
			case lost <- err:
			default:
			}
		},
	})
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

func (hc hubCluster) Address(ctx context.Context, replica string) (string, int64, bool, error) {
	return hc.c.Address(ctx, replica)
}
func (hc hubCluster) Deadline() time.Duration { return hc.c.Deadline() }

// Status lists the replicas, and whether the live ones serve the same
// registry.
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
