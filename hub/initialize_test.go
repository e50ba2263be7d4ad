package hub

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestInitializeFollowsUpstreamResults: the merged initialize result takes
// each upstream's capabilities and instructions, and follows a new result
// (an upstream that reconnected to a newer server) rather than a cached one.
func TestInitializeFollowsUpstreamResults(t *testing.T) {
	th := routedHub(t)
	ss := th.h.servers
	first := string(ss.initializeResult("", "2025-11-25", "test"))
	if strings.Contains(first, "subscribe") || strings.Contains(first, "instructions") || strings.Contains(first, "completions") {
		t.Fatalf("initialize of plain upstreams = %s; want no subscribe, completions or instructions", first)
	}
	alpha := th.fakes["alpha"]
	alpha.mu.Lock()
	alpha.init = json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{"resources":{"subscribe":true},"completions":{}},"instructions":"  use alpha wisely  ","serverInfo":{"name":"alpha","version":"2"}}`)
	alpha.mu.Unlock()
	got := string(ss.initializeResult("", "2025-11-25", "test"))
	for _, want := range []string{`"subscribe":true`, `"completions":{}`, `## alpha\nuse alpha wisely`} {
		if !strings.Contains(got, want) {
			t.Errorf("initialize after alpha's result changed = %s; want %s", got, want)
		}
	}
	alpha.mu.Lock()
	alpha.init = json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"alpha","version":"3"}}`)
	alpha.mu.Unlock()
	if got := string(ss.initializeResult("", "2025-11-25", "test")); got != first {
		t.Errorf("initialize after alpha's result changed back = %s; want %s", got, first)
	}
}
