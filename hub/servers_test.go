package hub

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/registry"
)

// serversRegistry is the registry the serverSet tests start from: two
// enabled servers and a disabled one.
const serversRegistry = `
[servers.alpha]
command = "alpha-server"
[servers.beta]
command = "beta-server"
[servers.gamma]
command = "gamma-server"
enabled = false
`

// serversFakes are the upstreams of serversRegistry.
func serversFakes() map[string]*fakeUpstream {
	return map[string]*fakeUpstream{
		"alpha": newFake("alpha").
			setList("tools/list", toolItems("t1", "t2")).
			setList("prompts/list", items(`{"name":"p"}`)).
			setList("resources/list", items(`{"uri":"file:///a","name":"a"}`)),
		"beta": newFake("beta").setList("tools/list", toolItems("b1")),
	}
}

// sameNames compares two name lists, nil and empty alike.
func sameNames(got, want []string) bool {
	return len(got) == 0 && len(want) == 0 || slices.Equal(got, want)
}

func entryNames(es []*serverEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.spec.Name)
	}
	slices.Sort(out)
	return out
}

// TestServersApply applies one registry change to a running set: an added
// or enabled server starts, a removed or disabled one is reported stopped,
// a changed one is reported for replacement (its old upstream serving
// until then), and a prefix-only change keeps the same upstream object and
// renames its tools.
func TestServersApply(t *testing.T) {
	for _, tc := range []struct {
		name        string
		text        string
		added       []string
		removed     []string
		changed     []string
		toggled     []string
		stopped     []string
		replace     []string
		running     []string // enabled servers afterwards
		started     []string // servers whose upstream was started by the change
		sameUp      []string // servers that keep their upstream object
		mergedTools []string
	}{
		{name: "nothing changed", text: serversRegistry,
			running: []string{"alpha", "beta"}, sameUp: []string{"alpha", "beta"},
			mergedTools: []string{"alpha__t1", "alpha__t2", "beta__b1"}},
		{name: "added", text: serversRegistry + "[servers.delta]\ncommand = \"delta-server\"\n",
			added: []string{"delta"}, running: []string{"alpha", "beta", "delta"}, started: []string{"delta"}, sameUp: []string{"alpha", "beta"}},
		{name: "enabled", text: strings.Replace(serversRegistry, "enabled = false", "enabled = true", 1),
			toggled: []string{"gamma"}, running: []string{"alpha", "beta", "gamma"}, started: []string{"gamma"}, sameUp: []string{"alpha", "beta"}},
		{name: "removed", text: strings.Replace(serversRegistry, "[servers.beta]\ncommand = \"beta-server\"\n", "", 1),
			removed: []string{"beta"}, stopped: []string{"beta"}, running: []string{"alpha"}, sameUp: []string{"alpha"},
			mergedTools: []string{"alpha__t1", "alpha__t2"}},
		{name: "disabled", text: strings.Replace(serversRegistry, "command = \"beta-server\"\n", "command = \"beta-server\"\nenabled = false\n", 1),
			toggled: []string{"beta"}, stopped: []string{"beta"}, running: []string{"alpha"}, sameUp: []string{"alpha"}},
		{name: "changed", text: strings.Replace(serversRegistry, "alpha-server", "alpha-server-2", 1),
			changed: []string{"alpha"}, replace: []string{"alpha"}, running: []string{"alpha", "beta"}, sameUp: []string{"alpha", "beta"}},
		{name: "prefix only", text: strings.Replace(serversRegistry, "command = \"alpha-server\"\n", "command = \"alpha-server\"\nprefix = \"x\"\n", 1),
			toggled: []string{"alpha"}, running: []string{"alpha", "beta"}, sameUp: []string{"alpha", "beta"},
			mergedTools: []string{"beta__b1", "x__t1", "x__t2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := startHub(t, serversRegistry, serversFakes())
			ss := th.h.servers
			before := map[string]Upstream{}
			for _, e := range ss.sorted() {
				before[e.spec.Name] = e.up
			}
			ch, stopped, replace := ss.apply(parseRegistry(t, tc.text))
			for _, l := range []struct {
				what      string
				got, want []string
			}{
				{"added", ch.Added, tc.added}, {"removed", ch.Removed, tc.removed},
				{"changed", ch.Changed, tc.changed}, {"toggled", ch.Toggled, tc.toggled},
				{"stopped", entryNames(stopped), tc.stopped},
				{"running", entryNames(ss.sorted()), tc.running},
			} {
				if !sameNames(l.got, l.want) {
					t.Errorf("%s = %q, want %q", l.what, l.got, l.want)
				}
			}
			for _, e := range stopped {
				if e.up != before[e.spec.Name] {
					t.Errorf("stopped %s is not the upstream that was running", e.spec.Name)
				}
			}
			var replaced []string
			for _, spec := range replace {
				replaced = append(replaced, spec.Name)
				if spec != ss.registry().Server(spec.Name) {
					t.Errorf("the replacement spec of %s is not the new registry's", spec.Name)
				}
				if e := ss.get(spec.Name); e == nil || e.spec == spec {
					t.Errorf("%s runs on the new spec before its replacement connected", spec.Name)
				}
			}
			if !sameNames(replaced, tc.replace) {
				t.Errorf("replace = %q, want %q", replaced, tc.replace)
			}
			for _, name := range tc.sameUp {
				if e := ss.get(name); e == nil || e.up != before[name] {
					t.Errorf("%s's upstream was replaced", name)
				}
			}
			for _, name := range tc.started {
				f := th.fakes[name]
				if f == nil {
					t.Fatalf("no upstream was created for %s", name)
				}
				f.mu.Lock()
				started := f.started
				f.mu.Unlock()
				if !started || ss.get(name) == nil || ss.get(name).up != Upstream(f) {
					t.Errorf("%s: started = %v, want its new upstream started and running", name, started)
				}
			}
			if tc.mergedTools != nil {
				var got []string
				for name := range ss.view("").toolIndex {
					got = append(got, name)
				}
				slices.Sort(got)
				if !slices.Equal(got, tc.mergedTools) {
					t.Errorf("merged tools = %q, want %q", got, tc.mergedTools)
				}
			}
			for name := range before {
				if spec := ss.registry().Server(name); spec != nil && !slices.Contains(tc.changed, name) {
					if e := ss.get(name); e != nil && e.spec != spec {
						t.Errorf("%s does not follow the new registry's spec", name)
					}
				}
			}
		})
	}
}

// TestServersApplyKeepsListen: the listen address cannot change under a
// running listener, so a new registry keeps the old one.
func TestServersApplyKeepsListen(t *testing.T) {
	th := startHub(t, serversRegistry, serversFakes())
	ch, _, _ := th.h.servers.apply(parseRegistry(t, "[hub]\nlisten = \"127.0.0.1:9999\"\n"+serversRegistry))
	if got := th.h.servers.registry().Hub.Listen; got != registry.DefaultListen {
		t.Errorf("listen = %q after apply, want the running %q", got, registry.DefaultListen)
	}
	if ch.HubChanged {
		t.Error("a change of listen alone is reported as a hub change, though it was not applied")
	}
}

// TestServersSelfReference decides which remote URLs point at the hub
// itself: loopback names and the listen host, on the listen port (80 and
// 443 when the URL names none).
func TestServersSelfReference(t *testing.T) {
	for _, tc := range []struct {
		listen string
		url    string
		self   bool
	}{
		{"127.0.0.1:7733", "http://localhost:7733/mcp", true},
		{"127.0.0.1:7733", "http://LocalHost:7733/mcp", true},
		{"127.0.0.1:7733", "http://127.0.0.1:7733/mcp", true},
		{"127.0.0.1:7733", "http://127.0.0.2:7733/mcp", true},
		{"127.0.0.1:7733", "http://[::1]:7733/mcp", true},
		{"127.0.0.1:7733", "https://localhost:7733/mcp", true},
		{"127.0.0.1:7733", "http://localhost:7734/mcp", false},
		{"127.0.0.1:7733", "http://example.com:7733/mcp", false},
		{"127.0.0.1:7733", "http://localhost/mcp", false},
		{"127.0.0.1:7733", "", false},
		{"127.0.0.1:7733", "http://%zz/mcp", false},
		{"localhost:7733", "http://127.0.0.1:7733/mcp", true},
		{"192.168.1.5:80", "http://192.168.1.5/mcp", true},
		{"192.168.1.5:80", "http://localhost/mcp", true},
		{"192.168.1.5:80", "https://192.168.1.5/mcp", false},
		{"192.168.1.5:80", "http://192.168.1.6/mcp", false},
		{"10.0.0.1:443", "https://10.0.0.1/mcp", true},
		{"10.0.0.1:443", "http://10.0.0.1/mcp", false},
		{"hub.lan:8443", "https://hub.lan:8443/mcp", true},
		{"hub.lan:8443", "https://other.lan:8443/mcp", false},
		{"no-port", "http://localhost/mcp", false},
	} {
		ss := &serverSet{reg: &registry.Registry{Hub: registry.Hub{Listen: tc.listen}}}
		ss.mu.Lock()
		self := ss.selfReferenceLocked(&registry.Server{Name: "s", URL: tc.url})
		ss.mu.Unlock()
		if self != tc.self {
			t.Errorf("listen %s, url %q: self = %v, want %v", tc.listen, tc.url, self, tc.self)
		}
	}
}

// TestServersStatus reports every registry server: disabled ones as
// disabled, running ones with their upstream's state and list counts, a
// refused one as failed, and the registry error while there is one.
func TestServersStatus(t *testing.T) {
	fakes := serversFakes()
	fakes["beta"].setStatus(UpstreamStatus{State: api.StateRestarting, Transport: "stdio", LastError: "exit status 1", Restarts: 3})
	th := startHub(t, serversRegistry+"[servers.loop]\nurl = \"http://localhost:7733/mcp\"\n", fakes)
	servers, reg, regErr := th.h.servers.status()
	if reg != th.h.servers.registry() || regErr != "" {
		t.Errorf("status gave registry %p and error %q, want the running one and none", reg, regErr)
	}
	var names []string
	for _, s := range servers {
		names = append(names, s.Name)
	}
	if want := []string{"alpha", "beta", "gamma", "loop"}; !slices.Equal(names, want) {
		t.Fatalf("servers = %q, want %q", names, want)
	}
	for i, want := range []api.ServerStatus{
		{Name: "alpha", State: api.StateConnected, Transport: "fake", Tools: 2, ToolsTotal: 2, Prompts: 1, Resources: 1},
		{Name: "beta", State: api.StateRestarting, Transport: "stdio", Tools: 1, ToolsTotal: 1, LastError: "exit status 1", Restarts: 3},
		{Name: "gamma", State: api.StateDisabled},
		{Name: "loop", State: api.StateFailed},
	} {
		got := servers[i]
		got.UptimeSeconds, got.Conflicts = 0, nil
		if want.Name == "loop" {
			if !strings.Contains(got.LastError, "points at this mcphub itself") {
				t.Errorf("loop's last error = %q, want it to say why it was refused", got.LastError)
			}
			got.LastError = ""
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("status of %s = %+v, want %+v", want.Name, got, want)
		}
	}
	th.h.servers.setError(errors.New("hub.toml:3: bad"))
	if _, _, regErr := th.h.servers.status(); regErr != "hub.toml:3: bad" {
		t.Errorf("registry error = %q after setError", regErr)
	}
	th.h.servers.apply(parseRegistry(t, serversRegistry))
	if _, _, regErr := th.h.servers.status(); regErr != "" {
		t.Errorf("registry error = %q after a good registry was applied, want none", regErr)
	}
}

// TestServersView returns each endpoint's catalog: the merged view with
// prefixed names, a server's own view with its own names, and nil for a
// server that is unknown or disabled.
func TestServersView(t *testing.T) {
	th := startHub(t, serversRegistry, serversFakes())
	for _, tc := range []struct {
		endpoint string
		tools    []string // nil: no view
	}{
		{"", []string{"alpha__t1", "alpha__t2", "beta__b1"}},
		{"alpha", []string{"t1", "t2"}},
		{"beta", []string{"b1"}},
		{"gamma", nil},
		{"ghost", nil},
		{"alpha/mcp", nil},
	} {
		c := th.h.servers.view(tc.endpoint)
		if tc.tools == nil {
			if c != nil {
				t.Errorf("view(%q) = %p, want nil", tc.endpoint, c)
			}
			continue
		}
		if c == nil {
			t.Errorf("view(%q) = nil", tc.endpoint)
			continue
		}
		wantNames(t, "view("+tc.endpoint+") tools", c.items["tools/list"], tc.tools...)
	}
}

// TestServersApplyRacesReaders applies registry changes that keep every
// connection (a new prefix) while sessions come and go and the status is
// read: under -race, readers of a server's spec must not race the apply
// that changes it.
func TestServersApplyRacesReaders(t *testing.T) {
	th := startHub(t, twoServers, map[string]*fakeUpstream{"alpha": newFake("alpha"), "beta": newFake("beta")})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200 {
			th.h.Apply(parseRegistry(t, strings.Replace(twoServers, `prefix = ""`, fmt.Sprintf(`prefix = "p%d"`, i), 1)))
		}
	}()
	s := sessionOn(t, th.h, "", `{}`)
	defer th.h.sessions.end(s)
	for {
		select {
		case <-done:
			return
		default:
		}
		th.h.fanout.applyLevels()
		if e := th.h.servers.get("beta"); e != nil && e.spec.Name != "beta" {
			t.Errorf("the entry of beta has the spec of %s", e.spec.Name)
		}
		th.h.Status()
	}
}

// TestServersReplaceKeepsALaterSpec restarts a server and, while the fresh
// connection is still connecting, applies a change that needs no new
// connection (a prefix): the swap keeps the spec in force, not the one the
// restart started from.
func TestServersReplaceKeepsALaterSpec(t *testing.T) {
	ups := startUpstreamLog(t, func(n int, f *fakeUpstream) {
		if n >= 2 {
			f.status.State = api.StateStarting // the replacement connects when the test says so
		}
	})
	h := ups.h
	if err := h.Restart("alpha"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the replacement is made", func() bool { return ups.nth(2) != nil })
	h.Apply(parseRegistry(t, strings.Replace(twoServers, `command = "alpha-server"`, "command = \"alpha-server\"\nprefix = \"new\"", 1)))
	fresh := ups.nth(2)
	fresh.mu.Lock()
	fresh.status.State = api.StateConnected
	fresh.mu.Unlock()
	eventually(t, "the replacement is swapped in", func() bool { return h.servers.get("alpha").up == Upstream(fresh) })
	if p := h.servers.get("alpha").spec.Prefix; p != "new" {
		t.Errorf("after the swap alpha's prefix = %q, want the registry's \"new\"", p)
	}
}

// TestServersChangesRaceClose restarts servers and applies registry changes
// while the hub closes, as a /control/restart or a registry save can arrive
// during shutdown: under -race nothing may start as Close waits, and no
// upstream may be started that Close does not also close.
func TestServersChangesRaceClose(t *testing.T) {
	withGamma := twoServers + "[servers.gamma]\ncommand = \"gamma-server\"\n"
	for range 30 {
		ups := startUpstreamLog(t, nil)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range 20 {
				ups.h.Restart("alpha")
				if i%2 == 0 {
					ups.h.Apply(parseRegistry(t, withGamma))
				} else {
					ups.h.Apply(parseRegistry(t, twoServers))
				}
			}
		}()
		ups.h.Close()
		<-done
		for n := 0; ups.nth(n) != nil; n++ {
			f := ups.nth(n)
			f.mu.Lock()
			leaked := f.started && !f.closed
			f.mu.Unlock()
			if leaked {
				t.Fatalf("upstream %d (%s) was started and never closed", n, f.name)
			}
		}
	}
}
