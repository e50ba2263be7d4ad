package team

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcphub/mcphub/hub"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/registry"
	"github.com/mcphub/mcphub/store"
	"github.com/mcphub/mcphub/store/pgtest"
)

func TestIdentity(t *testing.T) {
	t.Setenv(ReplicaEnv, "")
	t.Setenv(AdvertiseEnv, "")
	host := hostName()
	for _, tc := range []struct {
		name, advertise string
		h               registry.Hub
		wantName, addr  string
	}{
		{"", "", registry.Hub{Listen: "10.0.0.5:7733"}, host + ":7733", "http://10.0.0.5:7733"},
		{"", "", registry.Hub{Listen: "0.0.0.0:7733", TLSCert: "c.pem"}, host + ":7733", "https://" + host + ":7733"},
		{"r1", "http://lb.internal:1", registry.Hub{Listen: "[::]:80"}, "r1", "http://lb.internal:1"},
	} {
		name, addr, err := Identity(tc.name, tc.advertise, tc.h)
		if err != nil || name != tc.wantName || addr != tc.addr {
			t.Errorf("Identity(%q, %q, %s) = %q, %q, %v; want %q, %q", tc.name, tc.advertise, tc.h.Listen, name, addr, err, tc.wantName, tc.addr)
		}
	}
	t.Setenv(ReplicaEnv, "from-env")
	if name, _, _ := Identity("", "", registry.Hub{Listen: "127.0.0.1:1"}); name != "from-env" {
		t.Errorf("name from %s = %q", ReplicaEnv, name)
	}
	if _, _, err := Identity("", "", registry.Hub{Listen: "no port"}); err == nil {
		t.Error("a listen address without a port was taken")
	}
}

// fakeUp is an Upstream that records the spec it was made for.
type fakeUp struct {
	spec    *registry.Server
	started chan struct{}
	once    sync.Once
}

func (f *fakeUp) Start(context.Context) { f.once.Do(func() { close(f.started) }) }
func (f *fakeUp) Close() error          { return nil }
func (f *fakeUp) Call(context.Context, string, bool, string, json.RawMessage, jsonrpc.Peer) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}
func (f *fakeUp) Notify(context.Context, string, string, json.RawMessage) error { return nil }
func (f *fakeUp) SetLogLevel(string)                                            {}
func (f *fakeUp) SessionClosed(string)                                          {}
func (f *fakeUp) Initialize() json.RawMessage                                   { return nil }
func (f *fakeUp) List(string) []json.RawMessage                                 { return nil }
func (f *fakeUp) Status() hub.UpstreamStatus                                    { return hub.UpstreamStatus{State: "connected"} }
func (f *fakeUp) Adopt(json.RawMessage, string, json.RawMessage, jsonrpc.Peer, func(json.RawMessage, error)) bool {
	return false
}

// A replicas = "one" server runs on one replica; the other reaches it
// through that replica's /{server}/mcp with the cluster's secret, and takes
// it over when the first gives it up.
func TestUpstreamsRunOnce(t *testing.T) {
	u := pgtest.URL(t)
	reg, err := registry.Parse("hub.toml", []byte("[hub]\nlisten = \"127.0.0.1:7001\"\n[servers.one]\ncommand = \"x\"\nreplicas = \"one\"\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	spec := reg.Server("one")
	join := func(name string) (*Replica, chan *fakeUp) {
		db, err := store.OpenURL(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		r, err := Join(context.Background(), db, Config{Name: name, Advertise: "http://" + name + ".test", Registry: reg, Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		made := make(chan *fakeUp, 4)
		return r, made
	}
	factory := func(made chan *fakeUp) hub.NewUpstreamFunc {
		return func(s *registry.Server, _ registry.Hub, _ hub.UpstreamEvents) hub.Upstream {
			f := &fakeUp{spec: s, started: make(chan struct{})}
			made <- f
			return f
		}
	}
	next := func(made chan *fakeUp) *fakeUp {
		t.Helper()
		select {
		case f := <-made:
			<-f.started
			return f
		case <-time.After(20 * time.Second):
			t.Fatal("no upstream was made")
		}
		return nil
	}
	a, madeA := join("a")
	b, madeB := join("b")
	upA := a.Upstreams(factory(madeA))(spec, reg.Hub, hub.UpstreamEvents{})
	upA.Start(context.Background())
	if f := next(madeA); f.spec.Command != "x" {
		t.Fatalf("a, first to ask, runs %+v; want the process", f.spec)
	}
	upB := b.Upstreams(factory(madeB))(spec, reg.Hub, hub.UpstreamEvents{})
	upB.Start(context.Background())
	defer upB.Close()
	f := next(madeB)
	if f.spec.Command != "" || f.spec.URL != "http://a.test/one/mcp" || f.spec.Headers[hub.ForwardedHeader] != a.c.Secret() || f.spec.Headers[hub.RelayHeader] == "" {
		t.Fatalf("b reaches the server by %+v; want a's /one/mcp with the cluster's secret", f.spec)
	}
	if rl, ok := upB.(hub.Relayer); !ok || !rl.Relays() || !strings.HasPrefix(upB.Status().Transport, "via replica a") {
		t.Errorf("b's upstream: relays %v, status %+v", ok && rl.Relays(), upB.Status())
	}
	// a stops running it (its last upstream closes): b takes it.
	upA.Close()
	if f := next(madeB); f.spec.Command != "x" {
		t.Errorf("after a gave the server up, b runs %+v; want the process", f.spec)
	}
}
