package hub

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/api"
)

// TestWarmCatalogHoldsWhatConnectedServersOffer: an upstream shows itself
// connected a moment before it reports the change (a real one renews its
// subscriptions in between); a client that lists once the warm-up is over
// still sees its tools, since the warm-up ends with a build that looks at
// every server again.
func TestWarmCatalogHoldsWhatConnectedServersOffer(t *testing.T) {
	f := newFake("a")
	f.status, f.init = UpstreamStatus{State: api.StateStarting}, nil
	th := startHub(t, "[servers.a]\ncommand = \"x\"\n", map[string]*fakeUpstream{"a": f})
	// Connected, with its tools, and the change not reported.
	f.mu.Lock()
	f.init = json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"a","version":"1"}}`)
	f.lists["tools/list"] = toolItems("echo")
	f.status = UpstreamStatus{State: api.StateConnected, Transport: "fake", Since: time.Now()}
	f.mu.Unlock()
	c := th.connect("/mcp", "2025-06-18", "{}")
	if m := c.call(2, "tools/list", "{}"); !strings.Contains(string(m.Result), `"a__echo"`) {
		t.Fatalf("tools/list after the warm-up = %s %v, want a__echo", m.Result, m.Error)
	}
}
