package hub

import (
	"strings"
	"testing"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/registry"
)

// A registry entry that points at the hub itself is refused, visibly: the
// hub never creates an upstream for it, and its status says why.
func TestSelfReferenceRefused(t *testing.T) {
	fakes := map[string]*fakeUpstream{"ok": newFake("ok").setList("tools/list", toolItems("echo"))}
	th := startHub(t, `
[hub]
listen = "127.0.0.1:7733"
[servers.ok]
command = "x"
[servers.loop]
url = "http://localhost:7733/mcp"
[servers.other]
url = "http://127.0.0.1:7734/mcp"
`, fakes)
	st := th.h.Status()
	byName := map[string]api.ServerStatus{}
	for _, s := range st.Servers {
		byName[s.Name] = s
	}
	loop := byName["loop"]
	if loop.State != api.StateFailed || !strings.Contains(loop.LastError, "points at this mcphub itself") {
		t.Fatalf("self-referencing server: %+v", loop)
	}
	if _, made := fakes["loop"]; made {
		t.Fatal("an upstream was created for a server pointing at the hub itself")
	}
	if _, made := fakes["other"]; !made {
		t.Fatal("a server on another port must be connected normally")
	}
	c := th.connect("/mcp", "2025-11-25", `{}`)
	if m := c.call(1, "tools/call", `{"name":"ok__echo"}`); m.Error != nil {
		t.Fatalf("the other server must keep working: %+v", m.Error)
	}
}

// A save with one server whose entry has a problem and another server
// added: the added one is served and callable, the first shows failed with
// the problem (its variable's name), and no upstream is made for it.
func TestProblemEntryDoesNotBlockTheSave(t *testing.T) {
	fakes := map[string]*fakeUpstream{
		"ok":    newFake("ok").setList("tools/list", toolItems("echo")),
		"added": newFake("added").setList("tools/list", toolItems("hello")),
	}
	th := startHub(t, "[servers.ok]\ncommand = \"x\"\n", fakes)
	next, err := registry.ParseServing("hub.toml", []byte(`
[servers.ok]
command = "x"
env = { TOKEN = "${MCPHUB_TEST_UNSET_VAR}" }
[servers.added]
command = "y"
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	th.h.Apply(next)
	// The entry fails as the save is applied, not after a reconnect in
	// the background: status says so at once.
	for _, s := range th.h.Status().Servers {
		if s.Name == "ok" && s.State != api.StateFailed {
			t.Fatalf("right after the save, the server with a problem is %+v", s)
		}
	}
	c := th.connect("/mcp", "2025-11-25", `{}`)
	if m := c.call(1, "tools/call", `{"name":"added__hello"}`); m.Error != nil {
		t.Fatalf("the added server must be callable: %+v", m.Error)
	}
	var ok api.ServerStatus
	for _, s := range th.h.Status().Servers {
		if s.Name == "ok" {
			ok = s
		}
	}
	if ok.State != api.StateFailed || !strings.Contains(ok.LastError, "MCPHUB_TEST_UNSET_VAR") || !strings.Contains(ok.LastError, "hub.toml:") {
		t.Fatalf("the server with an unset variable: %+v", ok)
	}
	if m := c.call(2, "tools/call", `{"name":"ok__echo"}`); m.Error == nil {
		t.Fatal("a failed server's tool was still callable")
	}
}

// A call to a tool of a server that is not connected says why, with the
// server's last error (a child's exit status and stderr), on /mcp and on
// the server's own endpoint; a tool of a connected server does not.
func TestUnknownToolNamesTheFailedServer(t *testing.T) {
	bad := newFake("bad")
	fakes := map[string]*fakeUpstream{"ok": newFake("ok").setList("tools/list", toolItems("echo")), "bad": bad}
	th := startHub(t, "[servers.ok]\ncommand = \"x\"\n[servers.bad]\ncommand = \"y\"\n", fakes)
	bad.setStatus(UpstreamStatus{State: api.StateCrashLoop, LastError: "initialize: server process exited (exit status 3); last stderr: npm ERR! SELF_SIGNED_CERT_IN_CHAIN"})
	for _, tc := range []struct{ path, tool string }{{"/mcp", "bad__install"}, {"/bad/mcp", "install"}} {
		c := th.connect(tc.path, "2025-11-25", `{}`)
		m := c.call(1, "tools/call", `{"name":"`+tc.tool+`"}`)
		if m.Error == nil || !strings.Contains(m.Error.Message, "exit status 3") || !strings.Contains(m.Error.Message, "SELF_SIGNED_CERT_IN_CHAIN") {
			t.Errorf("%s %s: %+v", tc.path, tc.tool, m.Error)
		}
	}
	c := th.connect("/mcp", "2025-11-25", `{}`)
	if m := c.call(2, "tools/call", `{"name":"ok__nope"}`); m.Error == nil || strings.Contains(m.Error.Message, "server") {
		t.Errorf("unknown tool of a connected server: %+v", m.Error)
	}
}
