package hub

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcphub/mcphub/api"
)

// countingStore is a Store that keeps nothing and counts what is asked of
// it once counting is on.
type countingStore struct {
	recreatingStore
	on    atomic.Bool
	calls atomic.Int64
}

func (s *countingStore) count() {
	if s.on.Load() {
		s.calls.Add(1)
	}
}
func (s *countingStore) Write(ops []StoreOp) error                      { s.count(); return nil }
func (s *countingStore) EventsAfter(string, int) ([]EventRecord, error) { s.count(); return nil, nil }
func (s *countingStore) Counts(string) (int, int64, error)              { s.count(); return 0, 0, nil }

// countingCluster is a Cluster of one replica that counts every question
// asked of it once counting is on.
type countingCluster struct {
	on    atomic.Bool
	calls atomic.Int64
}

func (c *countingCluster) count() {
	if c.on.Load() {
		c.calls.Add(1)
	}
}
func (c *countingCluster) Locate(context.Context, string) (SessionPlace, error) {
	c.count()
	return SessionPlace{}, nil
}
func (c *countingCluster) Claim(context.Context, SessionPlace) ([]string, error) {
	c.count()
	return nil, nil
}
func (c *countingCluster) Gone(context.Context, string, int64) <-chan struct{} {
	c.count()
	return make(chan struct{})
}
func (c *countingCluster) Session(string) (SessionRecord, error) {
	c.count()
	return SessionRecord{}, nil
}
func (c *countingCluster) Secret() string { return "s3cret" }
func (c *countingCluster) Name() string   { return "r0" }
func (c *countingCluster) Address(context.Context, string) (string, int64, bool, error) {
	c.count()
	return "", 0, false, nil
}
func (c *countingCluster) Status(context.Context) *api.ClusterStatus { return &api.ClusterStatus{} }
func (c *countingCluster) Deadline() time.Duration                   { return time.Second }
func (c *countingCluster) Problem() error                            { return nil }
func (c *countingCluster) Current(context.Context) bool              { c.count(); return true }

// On a replica of a team hub, 2026-07-28 requests are served where they
// land, without a store round trip: a tools/call (answered with JSON, or
// streaming its progress) and a list ask nothing of the store or of the
// other replicas.
func TestModernRequestsTouchNoStore(t *testing.T) {
	store := &countingStore{recreatingStore: recreatingStore{sessions: map[string]bool{}, streams: map[string]bool{}}}
	cluster := &countingCluster{}
	fake := newFake("alpha").setList("tools/list", toolItems("a"))
	th := startHub(t, twoServers, map[string]*fakeUpstream{"alpha": fake}, func(o *Options) {
		o.Store, o.Cluster = store, cluster
	})
	store.on.Store(true)
	cluster.on.Store(true)
	for i := range 3 {
		r := th.send(http.MethodPost, "/mcp", modernBody(2+i, "tools/call", `{"name":"alpha__a","arguments":{"x":1}}`), modernHeaders("tools/call", "alpha__a")...)
		if r.status != http.StatusOK {
			t.Fatalf("tools/call: %d %s", r.status, r.body)
		}
	}
	if r := th.send(http.MethodPost, "/mcp", modernBody(9, "tools/list", ""), modernHeaders("tools/list", "")...); r.status != http.StatusOK {
		t.Fatalf("tools/list: %d %s", r.status, r.body)
	}
	if n := store.calls.Load(); n != 0 {
		t.Errorf("2026-07-28 requests made %d store round trips, want none", n)
	}
	if n := cluster.calls.Load(); n != 0 {
		t.Errorf("2026-07-28 requests asked the cluster %d times, want never", n)
	}
}

// The cluster's secret stands for the token on MCP endpoints only (where a
// forwarded request carries its client's token too); the control routes
// still want the token.
func TestClusterSecretOnlyOnMCPEndpoints(t *testing.T) {
	th := startHub(t, twoServers, nil, func(o *Options) {
		o.Token = "the-token"
		o.Cluster = &countingCluster{}
		o.Store = &countingStore{recreatingStore: recreatingStore{sessions: map[string]bool{}, streams: map[string]bool{}}}
	})
	if r := th.send(http.MethodPost, "/mcp", initReq("2025-11-25", `{}`), ForwardedHeader, "s3cret"); r.status != http.StatusOK {
		t.Errorf("initialize from a replica, without a token: %d %s", r.status, r.body)
	}
	if r := th.send(http.MethodPost, "/mcp", initReq("2025-11-25", `{}`), ForwardedHeader, "guess"); r.status != http.StatusUnauthorized {
		t.Errorf("initialize with a wrong secret: %d, want 401", r.status)
	}
	if r := th.send(http.MethodGet, "/control/sessions", "", ForwardedHeader, "s3cret"); r.status != http.StatusUnauthorized {
		t.Errorf("a control route with the secret, without a token: %d, want 401", r.status)
	}
}
