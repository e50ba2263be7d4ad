package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/registry"
)

// Turning auth on or off in the registry, or changing the token, applies to
// the next request without a restart; auth on without a readable token
// refuses every request rather than serve without one.
func TestAuthChangesApplyLive(t *testing.T) {
	var token string
	var tokenErr error
	resolve := func(h registry.Hub) (string, error) {
		if h.Auth != registry.AuthToken {
			return "", nil
		}
		return token, tokenErr
	}
	th := startHub(t, "[servers.a]\ncommand = \"x\"\n", nil, func(o *Options) { o.ResolveToken = resolve })
	ping := func(kv ...string) int {
		t.Helper()
		return th.send(http.MethodPost, "/mcp", initReq("2025-11-25", `{}`), kv...).status
	}
	apply := func(src string) {
		t.Helper()
		reg, err := registry.ParseServing("hub.toml", []byte(src), func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		th.h.Apply(reg)
	}
	if got := ping(); got != http.StatusOK {
		t.Fatalf("auth off: %d", got)
	}
	// A stream opened while auth was off ends when it is turned on: every
	// request needs the token, a stream's too.
	c := th.connect("/mcp", "2025-11-25", `{}`)
	stream := c.get()

	token = "first-token"
	apply("[hub]\nauth = \"token\"\n[servers.a]\ncommand = \"x\"\n")
	deadline := time.After(waitFor)
drain:
	for {
		select {
		case <-stream.events: // the priming event, pings
		case <-stream.end:
			break drain
		case <-deadline:
			t.Fatal("a stream opened without a token was still served after auth was turned on")
		}
	}
	if got := ping(); got != http.StatusUnauthorized {
		t.Errorf("auth turned on, no token sent: %d, want 401", got)
	}
	if got := ping("Authorization", "Bearer first-token"); got != http.StatusOK {
		t.Errorf("auth on, the token sent: %d", got)
	}

	token = "second-token"
	apply("[hub]\nauth = \"token\"\ntoken_env = \"OTHER\"\n[servers.a]\ncommand = \"x\"\n")
	if got := ping("Authorization", "Bearer first-token"); got != http.StatusUnauthorized {
		t.Errorf("the old token after a change: %d, want 401", got)
	}
	if got := ping("Authorization", "Bearer second-token"); got != http.StatusOK {
		t.Errorf("the new token: %d", got)
	}

	tokenErr = errors.New("auth is on but neither $OTHER nor token_file holds a token")
	apply("[hub]\nauth = \"token\"\ntoken_env = \"THIRD\"\n[servers.a]\ncommand = \"x\"\n")
	r := th.send(http.MethodPost, "/mcp", initReq("2025-11-25", `{}`), "Authorization", "Bearer second-token")
	if r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), "no token") || strings.Contains(string(r.body), "OTHER") {
		t.Errorf("auth on without a readable token: %d %s, want 503 saying why, without where the token lives", r.status, r.body)
	}

	tokenErr = nil
	apply("[servers.a]\ncommand = \"x\"\n")
	if got := ping(); got != http.StatusOK {
		t.Errorf("auth turned off: %d", got)
	}
}

// A listen address or TLS files changed in the registry cannot be applied
// to a running listener: they are reported as needing a restart, and a
// listen with port 0 on the same host is the running one.
func TestNeedsRestart(t *testing.T) {
	cur := registry.Hub{Listen: "127.0.0.1:40001", TLSCert: "a.pem", TLSKey: "a.key"}
	for _, tc := range []struct {
		next registry.Hub
		want []string
	}{
		{registry.Hub{Listen: "127.0.0.1:40001", TLSCert: "a.pem", TLSKey: "a.key"}, nil},
		{registry.Hub{Listen: "127.0.0.1:0", TLSCert: "a.pem", TLSKey: "a.key"}, nil},
		{registry.Hub{Listen: "127.0.0.1:7733", TLSCert: "a.pem", TLSKey: "a.key"}, []string{"listen"}},
		{registry.Hub{Listen: "0.0.0.0:0", TLSCert: "b.pem", TLSKey: "b.key"}, []string{"listen", "tls_cert", "tls_key"}},
	} {
		if got := needsRestart(cur, tc.next); !slices.Equal(got, tc.want) {
			t.Errorf("needsRestart(%+v) = %q, want %q", tc.next, got, tc.want)
		}
	}
	// Every interface is one host in any spelling: a hub started with
	// listen ":0" reports "[::]:port" back.
	every := registry.Hub{Listen: "[::]:40001"}
	for _, next := range []string{":0", "0.0.0.0:0", ":40001", "[::]:0"} {
		if got := needsRestart(every, registry.Hub{Listen: next}); got != nil {
			t.Errorf("needsRestart(%s running, %s in the file) = %q, want nothing", every.Listen, next, got)
		}
	}
	if got := needsRestart(every, registry.Hub{Listen: "127.0.0.1:0"}); !slices.Equal(got, []string{"listen"}) {
		t.Errorf("every interface to loopback: %q, want [listen]", got)
	}
}

// A changed listen address shows in the status as needing a restart, and
// the hub keeps serving where it listens.
func TestStatusNeedsRestart(t *testing.T) {
	th := startHub(t, "[hub]\nlisten = \"127.0.0.1:40001\"\n[servers.a]\ncommand = \"x\"\n", nil)
	reg, err := registry.ParseServing("hub.toml", []byte("[hub]\nlisten = \"127.0.0.1:40002\"\n[servers.a]\ncommand = \"x\"\n"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	th.h.Apply(reg)
	st := th.h.Status()
	if !slices.Equal(st.NeedsRestart, []string{"listen"}) || !strings.Contains(st.URL, "40001") {
		t.Errorf("status: needs_restart %q, url %s; want [listen] and the running address", st.NeedsRestart, st.URL)
	}
}

// Beyond loopback the hub never turns auth off live, whatever the file
// says: serve --listen may have put it on every interface although the
// file's own listen is loopback.
func TestAuthStaysOnBeyondLoopback(t *testing.T) {
	var tokenErr error
	resolve := func(h registry.Hub) (string, error) {
		if h.Auth != registry.AuthToken {
			return "", nil
		}
		if tokenErr != nil {
			return "", tokenErr
		}
		return "the-token", nil
	}
	th := startHub(t, "[hub]\nlisten = \"0.0.0.0:40003\"\nauth = \"token\"\ntls_cert = \"c.pem\"\ntls_key = \"k.pem\"\n[servers.a]\ncommand = \"x\"\n", nil, func(o *Options) {
		o.ResolveToken = resolve
		o.Token = "the-token"
	})
	apply := func(src string) {
		t.Helper()
		reg, err := registry.ParseServing("hub.toml", []byte(src), func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		th.h.Apply(reg)
	}
	apply("[servers.a]\ncommand = \"x\"\n")
	if got := th.send(http.MethodPost, "/mcp", initReq("2025-11-25", `{}`), "Host", "example.com").status; got != http.StatusUnauthorized {
		t.Errorf("a request without a token after auth was removed from the file: %d, want 401", got)
	}
	// Nor from the state where its token could not be read.
	tokenErr = errors.New("no token")
	apply("[hub]\nauth = \"token\"\n[servers.a]\ncommand = \"x\"\n")
	tokenErr = nil
	apply("[servers.a]\ncommand = \"x\"\n")
	if got := th.send(http.MethodPost, "/mcp", initReq("2025-11-25", `{}`), "Host", "example.com").status; got == http.StatusOK {
		t.Errorf("auth off after a token that could not be read: %d, want a refusal", got)
	}
}

// max_response_bytes and request_timeout are built into each upstream's
// connection: a change in [hub] reconnects the running servers with the
// new value.
func TestUpstreamLimitsApplyLive(t *testing.T) {
	var mu sync.Mutex
	var seen []int64
	fakes := map[string]*fakeUpstream{}
	th := startHub(t, "[servers.a]\ncommand = \"x\"\n", fakes, func(o *Options) {
		inner := fakeFactory(fakes)
		o.NewUpstream = func(spec *registry.Server, h registry.Hub, ev UpstreamEvents) Upstream {
			mu.Lock()
			seen = append(seen, h.MaxResponseBytes)
			mu.Unlock()
			return inner(spec, h, ev)
		}
	})
	reg, err := registry.ParseServing("hub.toml", []byte("[hub]\nmax_response_bytes = 12345\n[servers.a]\ncommand = \"x\"\n"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	th.h.Apply(reg)
	deadline := time.After(waitFor)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		mu.Lock()
		got := slices.Clone(seen)
		mu.Unlock()
		if slices.Contains(got, 12345) {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("upstreams made with max_response_bytes %v; want one with the new 12345", got)
		}
	}
}

// A new token cuts the standalone streams opened with the old one, but not
// a call's POST stream: it carries only its own call, and a client that
// holds no event id of it could not resume it, so cutting it would cancel
// the call.
func TestTokenChangeCutsStreamsNotCalls(t *testing.T) {
	token := "first-token"
	resolve := func(h registry.Hub) (string, error) { return token, nil }
	fakes := map[string]*fakeUpstream{"alpha": newFake("alpha").setList("tools/list", toolItems("slow"))}
	th := startHub(t, "[hub]\nauth = \"token\"\n[servers.alpha]\ncommand = \"x\"\n", fakes, func(o *Options) {
		o.ResolveToken = resolve
		o.Token = token
	})
	release := make(chan struct{})
	cancelled := make(chan error, 1)
	fakes["alpha"].setHandler(func(ctx context.Context, fc *fakeCall) (json.RawMessage, error) {
		select {
		case <-release:
			return json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`), nil
		case <-ctx.Done():
			cancelled <- context.Cause(ctx)
			return nil, ctx.Err()
		}
	})
	auth := []string{"Authorization", "Bearer first-token"}
	r := th.send(http.MethodPost, "/mcp", initReq("2025-06-18", `{}`), auth...)
	if r.status != http.StatusOK {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	c := &client{th: th, path: "/mcp", sid: r.header.Get("Mcp-Session-Id")}
	if r := c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, auth...); r.status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", r.status, r.body)
	}
	get := c.get(auth...)
	call := c.postStream(rpc(7, "tools/call", `{"name":"alpha__slow"}`), auth...)
	fakes["alpha"].nextCall(t)

	token = "second-token"
	reg, err := registry.ParseServing("hub.toml", []byte("[hub]\nauth = \"token\"\ntoken_file = \"other\"\n[servers.alpha]\ncommand = \"x\"\n"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	th.h.Apply(reg)
	deadline := time.After(waitFor)
drain:
	for {
		select {
		case <-get.events:
		case <-get.end:
			break drain
		case <-deadline:
			t.Fatal("the GET stream opened with the old token was still served after the token changed")
		}
	}
	select {
	case err := <-cancelled:
		t.Fatalf("the call in flight was cancelled by the token change: %v", err)
	default:
	}
	close(release)
	m, _ := call.nextMsg()
	if string(m.ID) != "7" || !strings.Contains(string(m.Result), "done") {
		t.Fatalf("the call's stream gave %s %s, want its result", m.ID, m.Result)
	}
}

// Two quick edits of a [hub] limit: a replacement built with the older
// value that connects last is dropped, not swapped in over the newer one.
func TestUpstreamLimitsLastEditWins(t *testing.T) {
	var mu sync.Mutex
	made := map[int64]*fakeUpstream{}
	th := startHub(t, "[servers.a]\ncommand = \"x\"\n", nil, func(o *Options) {
		o.NewUpstream = func(spec *registry.Server, h registry.Hub, ev UpstreamEvents) Upstream {
			f := newFake(spec.Name).setList("tools/list", toolItems("echo"))
			if h.MaxResponseBytes != registry.DefaultMaxResponseBytes {
				f.setStatus(UpstreamStatus{State: api.StateStarting})
			}
			f.events = ev
			mu.Lock()
			made[int64(h.MaxResponseBytes)] = f
			mu.Unlock()
			return f
		}
	})
	made1 := func(n int64) *fakeUpstream {
		t.Helper()
		deadline := time.After(waitFor)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			mu.Lock()
			f := made[n]
			mu.Unlock()
			if f != nil {
				return f
			}
			select {
			case <-tick.C:
			case <-deadline:
				t.Fatalf("no upstream made with max_response_bytes %d", n)
			}
		}
	}
	for _, n := range []int{11111, 22222} {
		reg, err := registry.ParseServing("hub.toml", fmt.Appendf(nil, "[hub]\nmax_response_bytes = %d\n[servers.a]\ncommand = \"x\"\n", n), func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		th.h.Apply(reg)
		made1(int64(n))
	}
	newer, older := made1(22222), made1(11111)
	newer.setStatus(UpstreamStatus{State: api.StateConnected, Transport: "fake"})
	deadline := time.After(waitFor)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for th.h.servers.get("a").up != Upstream(newer) {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("the replacement with the newer limit was not swapped in")
		}
	}
	older.setStatus(UpstreamStatus{State: api.StateConnected, Transport: "fake"})
	for {
		older.mu.Lock()
		closed := older.closed
		older.mu.Unlock()
		if closed {
			break
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("the replacement with the older limit was never dropped")
		}
	}
	if th.h.servers.get("a").up != Upstream(newer) {
		t.Error("the replacement with the older limit was swapped in over the newer one")
	}
}

// The store cannot change under a running hub: a new [store] url is
// reported as needing a restart, and the hub keeps the store it has.
func TestStoreURLNeedsRestart(t *testing.T) {
	th := startHub(t, "[servers.a]\ncommand = \"x\"\n", nil)
	reg, err := registry.ParseServing("hub.toml", []byte("[store]\nurl = \"postgres://db/mcphub\"\n[servers.a]\ncommand = \"x\"\n"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	th.h.Apply(reg)
	if got := th.h.Status().NeedsRestart; !slices.Equal(got, []string{"store.url"}) {
		t.Errorf("NeedsRestart = %q, want [store.url]", got)
	}
	if got := th.h.servers.registry().Store.URL; got != "" {
		t.Errorf("the running hub's store URL became %q", got)
	}
}
