package hub

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/registry"
)

// TestServersSelfReferenceStdio: a stdio server that leads back to the
// hub, through "mcphub stdio" on the hub's registry or through mcp-remote
// to the hub's address, is refused like a URL that points at it; mcphub
// stdio on another registry and mcp-remote elsewhere are upstreams.
func TestServersSelfReferenceStdio(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "hub.toml")
	other := filepath.Join(dir, "other.toml")
	t.Setenv("MCPHUB_CONFIG", other) // the default registry is not the hub's
	for _, tc := range []struct {
		command string
		args    []string
		self    bool
	}{
		{"mcphub", []string{"--config", own, "stdio"}, true},
		{"/usr/local/bin/mcphub", []string{"stdio", "--config=" + own, "--server", "github"}, true},
		{"mcphub.exe", []string{"--data-dir", dir, "--config", own, "stdio"}, true},
		{"npx", []string{"-y", "mcp-remote@latest", "http://127.0.0.1:7733/mcp"}, true},
		{"npx", []string{"-y", "mcp-remote@0.1.29", "--allow-http", "http://localhost:7733/github/mcp"}, true},
		{"npx", []string{"mcp-remote", "http://127.0.0.1:7733/mcp"}, true},
		{"mcphub", []string{"--config", other, "stdio"}, false},
		{"mcphub", []string{"stdio"}, false},
		{"npx", []string{"-y", "mcp-remote@latest", "http://127.0.0.1:7734/mcp"}, false},
		{"npx", []string{"-y", "server-files"}, false},
	} {
		ss := &serverSet{reg: &registry.Registry{Path: own, Hub: registry.Hub{Listen: "127.0.0.1:7733"}}}
		ss.mu.Lock()
		self := ss.selfReferenceLocked(&registry.Server{Name: "s", Command: tc.command, Args: tc.args})
		ss.mu.Unlock()
		if self != tc.self {
			t.Errorf("%s %q: self = %v, want %v", tc.command, tc.args, self, tc.self)
		}
	}

	// "mcphub stdio" without --config runs the default registry: the hub's
	// when the hub runs it.
	t.Setenv("MCPHUB_CONFIG", own)
	ss := &serverSet{reg: &registry.Registry{Path: own, Hub: registry.Hub{Listen: "127.0.0.1:7733"}}}
	ss.mu.Lock()
	self := ss.selfReferenceLocked(&registry.Server{Name: "s", Command: "mcphub", Args: []string{"stdio"}})
	ss.mu.Unlock()
	if !self {
		t.Errorf("mcphub stdio on the hub's own default registry is not refused")
	}
}

// TestSelfReferenceRefusedStdio: the running hub refuses a stdio entry
// that leads back to it, "mcphub stdio" or mcp-remote@latest to its
// address, as it refuses a URL: no upstream is made and the status says
// why; the other servers are served.
func TestSelfReferenceRefusedStdio(t *testing.T) {
	fakes := map[string]*fakeUpstream{"ok": newFake("ok").setList("tools/list", toolItems("echo"))}
	th := startHub(t, `
[hub]
listen = "127.0.0.1:7733"
[servers.ok]
command = "x"
[servers.hubstdio]
command = "/usr/local/bin/mcphub"
args = ["stdio"]
[servers.remote]
command = "npx"
args = ["-y", "mcp-remote@latest", "http://127.0.0.1:7733/mcp"]
[servers.elsewhere]
command = "npx"
args = ["-y", "mcp-remote@latest", "https://mcp.example.com/mcp"]
`, fakes)
	byName := map[string]api.ServerStatus{}
	for _, s := range th.h.Status().Servers {
		byName[s.Name] = s
	}
	for _, name := range []string{"hubstdio", "remote"} {
		if s := byName[name]; s.State != api.StateFailed || !strings.Contains(s.LastError, "the command ") || !strings.Contains(s.LastError, "points at this mcphub itself") {
			t.Errorf("%s: %+v, want failed as pointing at the hub", name, s)
		}
		if _, made := fakes[name]; made {
			t.Errorf("an upstream was created for %s, which leads back to the hub", name)
		}
	}
	if _, made := fakes["elsewhere"]; !made {
		t.Error("mcp-remote to another server must be connected normally")
	}
	c := th.connect("/mcp", "2025-11-25", `{}`)
	if m := c.call(1, "tools/call", `{"name":"ok__echo"}`); m.Error != nil {
		t.Fatalf("the other server must keep working: %+v", m.Error)
	}
}
