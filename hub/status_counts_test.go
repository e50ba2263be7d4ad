package hub

import (
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/registry"
)

// countsRegistry filters two of its servers' tools: github denies the
// delete tools, linear allows only the read ones.
const countsRegistry = `
[servers.github]
command = "github-server"
deny = ["delete_*"]

[servers.linear]
command = "linear-server"
allow = ["read_*"]

[servers.plain]
command = "plain-server"

[servers.off]
command = "off-server"
enabled = false
`

// TestStatusCountsExposedTools checks that status counts the tools clients
// see, after each server's allow and deny globs, in Status and in /readyz,
// with every tool the server offers as tools_total, and that the counts
// follow an allow/deny change that needs no reconnect.
func TestStatusCountsExposedTools(t *testing.T) {
	fakes := map[string]*fakeUpstream{
		"github": newFake("github").setList("tools/list", toolItems("create_issue", "delete_repo", "delete_branch", "list_issues")),
		"linear": newFake("linear").setList("tools/list", append(toolItems("read_issue", "read_team", "write_issue"), items(`{"description":"no name"}`)...)),
		"plain":  newFake("plain").setList("tools/list", toolItems("a", "b")),
	}
	th := startHub(t, countsRegistry, fakes)
	want := map[string][2]int{ // exposed, total
		"github": {2, 4},
		"linear": {2, 4},
		"plain":  {2, 2},
		"off":    {0, 0},
	}
	check := func(when string, servers []api.ServerStatus) {
		t.Helper()
		if len(servers) != len(want) {
			t.Fatalf("%s: %d servers listed, want %d", when, len(servers), len(want))
		}
		for _, s := range servers {
			if got := [2]int{s.Tools, s.ToolsTotal}; got != want[s.Name] {
				t.Errorf("%s: %s has tools %d of %d, want %d of %d", when, s.Name, got[0], got[1], want[s.Name][0], want[s.Name][1])
			}
		}
	}
	check("Status", th.h.Status().Servers)

	resp, err := http.Get(th.srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var st struct {
		Servers []api.ServerStatus `json:"servers"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("/readyz: %v: %s", err, body)
	}
	check("/readyz", st.Servers)
	var raw struct {
		Servers []map[string]json.RawMessage `json:"servers"`
	}
	json.Unmarshal(body, &raw)
	for _, s := range raw.Servers {
		if _, ok := s["tools_total"]; !ok {
			t.Errorf("/readyz lists a server without tools_total: %s", body)
			break
		}
	}

	// Dropping github's deny list exposes all of its tools, on the same
	// connection.
	th.h.Apply(parseRegistry(t, `
[servers.github]
command = "github-server"

[servers.linear]
command = "linear-server"
allow = ["read_*"]

[servers.plain]
command = "plain-server"

[servers.off]
command = "off-server"
enabled = false
`))
	want["github"] = [2]int{4, 4}
	check("after the deny list was dropped", th.h.Status().Servers)
}

// listHook is a fake upstream whose List calls onList first.
type listHook struct {
	*fakeUpstream
	onList func(method string)
}

func (u *listHook) List(method string) []json.RawMessage {
	u.onList(method)
	return u.fakeUpstream.List(method)
}

// TestStatusCountsFromOneEntry checks that a server's row in Status takes
// its state and its tool counts from the same upstream, reading its tools
// once: a replacement swapped in while Status runs (here, as it reads the
// tools of the upstream it replaces) shows in the next Status, not mixed
// into this one.
func TestStatusCountsFromOneEntry(t *testing.T) {
	old := newFake("github").setList("tools/list", toolItems("create_issue", "delete_repo", "delete_branch", "list_issues"))
	fresh := newFake("github").setList("tools/list", toolItems("only_one"))
	fresh.status = UpstreamStatus{State: api.StateStarting}
	var (
		armed     atomic.Bool  // count and swap only inside Status
		toolLists atomic.Int64 // tools/list reads of old while armed
		swap      func()
	)
	hooked := &listHook{fakeUpstream: old, onList: func(method string) {
		if method != "tools/list" || !armed.Load() {
			return
		}
		toolLists.Add(1)
		if swap != nil {
			swap()
			swap = nil
		}
	}}
	fakes := map[string]*fakeUpstream{
		"linear": newFake("linear").setList("tools/list", toolItems("read_issue")),
		"plain":  newFake("plain").setList("tools/list", toolItems("a", "b")),
	}
	others := fakeFactory(fakes)
	th := startHub(t, countsRegistry, fakes, func(o *Options) {
		o.NewUpstream = func(spec *registry.Server, hub registry.Hub, events UpstreamEvents) Upstream {
			if spec.Name != "github" {
				return others(spec, hub, events)
			}
			old.mu.Lock()
			old.events = events
			old.mu.Unlock()
			return hooked
		}
	})
	ss := th.h.servers
	// Once the catalog holds every server's tools, the hub reads no list
	// on its own until something changes.
	eventually(t, "the catalog to be built", func() bool { return len(ss.view("").tools) == 2+1+2 })
	// The warm-up ends with a build that reads every server's lists again;
	// once it is over, no build reads lists while Status is being counted.
	select {
	case <-ss.warm:
	case <-time.After(waitFor):
		t.Fatal("the hub's warm-up did not end")
	}

	row := func() api.ServerStatus {
		t.Helper()
		armed.Store(true)
		defer armed.Store(false)
		for _, s := range th.h.Status().Servers {
			if s.Name == "github" {
				return s
			}
		}
		t.Fatal("Status does not list github")
		return api.ServerStatus{}
	}
	var replaced *serverEntry
	swap = func() {
		ss.mu.Lock()
		defer ss.mu.Unlock()
		e := ss.entries["github"]
		replaced = e
		ss.entries["github"] = &serverEntry{spec: e.spec, up: fresh}
	}
	s := row()
	if s.State != api.StateConnected || s.Tools != 2 || s.ToolsTotal != 4 {
		t.Errorf("github during the swap: %s with %d of %d tools, want connected with 2 of 4 (the replaced upstream's)", s.State, s.Tools, s.ToolsTotal)
	}
	if n := toolLists.Load(); n != 1 {
		t.Errorf("Status read the replaced upstream's tools %d times, want once", n)
	}
	s = row()
	if s.State != api.StateStarting || s.Tools != 1 || s.ToolsTotal != 1 {
		t.Errorf("github after the swap: %s with %d of %d tools, want starting with 1 of 1 (the replacement's)", s.State, s.Tools, s.ToolsTotal)
	}

	// The replaced upstream back in place: one read of its tools per
	// Status.
	ss.mu.Lock()
	ss.entries["github"] = replaced
	ss.mu.Unlock()
	toolLists.Store(0)
	row()
	if n := toolLists.Load(); n != 1 {
		t.Errorf("Status read github's tools %d times, want once", n)
	}
}
