package hub

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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
	resolve := func(h registry.Hub) (string, error) {
		if h.Auth != registry.AuthToken {
			return "", nil
		}
		return "the-token", nil
	}
	th := startHub(t, "[hub]\nlisten = \"0.0.0.0:40003\"\nauth = \"token\"\ntls_cert = \"c.pem\"\ntls_key = \"k.pem\"\n[servers.a]\ncommand = \"x\"\n", nil, func(o *Options) {
		o.ResolveToken = resolve
		o.Token = "the-token"
	})
	reg, err := registry.ParseServing("hub.toml", []byte("[servers.a]\ncommand = \"x\"\n"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	th.h.Apply(reg)
	if got := th.send(http.MethodPost, "/mcp", initReq("2025-11-25", `{}`), "Host", "example.com").status; got != http.StatusUnauthorized {
		t.Errorf("a request without a token after auth was removed from the file: %d, want 401", got)
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
