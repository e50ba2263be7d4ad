package probe_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcphub/mcphub/oauth"
	"github.com/mcphub/mcphub/probe"
	"github.com/mcphub/mcphub/registry"
)

// memKeeper is a Keeper in memory.
type memKeeper struct {
	mu   sync.Mutex
	m    map[string][]byte
	fail error
}

func (k *memKeeper) Load(key string) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.m[key], nil
}

func (k *memKeeper) Save(key string, data []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string][]byte{}
	}
	k.m[key] = data
	return nil
}

func (k *memKeeper) Delete(key string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fail != nil {
		return k.fail
	}
	delete(k.m, key)
	return nil
}

func (k *memKeeper) Backend() string { return "memory" }

const loginRegistry = `
[servers.tracker]
url = "https://mcp.tracker.example/mcp"
[servers.tracker.oauth]
client_id = "mcphub"
scopes = ["read"]

[servers.trackers]
url = "https://mcp.trackers.example/mcp"

[servers.local]
command = "srv"

[servers.broken]
url = "https://broken.example/mcp"
prefix = "tracker"
`

// TestRemoteServer: a sign-in is for a remote server of the registry;
// the messages suggest close names, say why a stdio server needs none,
// and show an entry's problem.
func TestRemoteServer(t *testing.T) {
	reg, err := registry.ParseServing("hub.toml", []byte(loginRegistry), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if s, err := probe.RemoteServer(reg, "hub.toml", "tracker"); err != nil || s.URL != "https://mcp.tracker.example/mcp" {
		t.Errorf("tracker: %v, %v", s, err)
	}
	for name, want := range map[string]string{
		"trackr": `hub.toml has no server "trackr" (did you mean tracker, trackers?)`,
		"local":  "local is a stdio server: it gets its credentials from its env in hub.toml, not from a sign-in",
		"broken": "fix the entry of broken first:\n",
	} {
		if _, err := probe.RemoteServer(reg, "hub.toml", name); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
}

// TestOAuthConfig: the registry's oauth key becomes the client's
// settings; none leaves discovery and registration to decide.
func TestOAuthConfig(t *testing.T) {
	if c := probe.OAuthConfig(nil); c == nil || c.ClientID != "" || c.Scopes != nil {
		t.Errorf("no oauth key: %+v", c)
	}
	c := probe.OAuthConfig(&registry.OAuth{ClientID: "id", ClientSecret: "s", ClientMetadataURL: "https://m.example/c.json", Scopes: []string{"a"}})
	if c.ClientID != "id" || c.ClientSecret != "s" || c.ClientMetadataURL != "https://m.example/c.json" || len(c.Scopes) != 1 {
		t.Errorf("oauth key: %+v", c)
	}
}

// TestSignOut: the grant stored under the server's canonical URL goes,
// and a store that cannot delete says which server's logout failed.
func TestSignOut(t *testing.T) {
	spec := &registry.Server{Name: "tracker", URL: "https://MCP.tracker.example/mcp"}
	k := &memKeeper{}
	k.Save(oauth.CanonicalResource(spec.URL), []byte("{}"))
	res, err := probe.SignOut(spec, k)
	if err != nil || res.Server != "tracker" || res.Store != "memory" || res.SignedIn || len(k.m) != 0 {
		t.Errorf("SignOut: %+v, %v; left %v", res, err, k.m)
	}
	k.fail = errors.New("locked")
	if _, err := probe.SignOut(spec, k); err == nil || err.Error() != "logout tracker: locked" {
		t.Errorf("a store that fails: %v", err)
	}
}

// TestSignInUnreachable: a server that cannot be reached is a login
// error, and nothing is kept.
func TestSignInUnreachable(t *testing.T) {
	spec := &registry.Server{Name: "tracker", URL: "http://127.0.0.1:1/mcp"}
	k := &memKeeper{}
	_, err := probe.SignIn(context.Background(), spec, k, probe.SignInOptions{Timeout: 10 * time.Second, Log: io.Discard})
	if err == nil || !strings.HasPrefix(err.Error(), "login tracker: ") {
		t.Errorf("got %v", err)
	}
	if len(k.m) != 0 {
		t.Errorf("kept %v", k.m)
	}
}
