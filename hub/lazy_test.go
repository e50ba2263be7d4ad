package hub

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// TestLazyReply: for a compliant client that ranks JSON first, a tools/call
// is answered as JSON when its result comes at once, and turns into an SSE
// stream when the call sends something first or takes longer than
// streamAfter; the stream then carries everything, in order, with event ids.
func TestLazyReply(t *testing.T) {
	old := streamAfter
	streamAfter = 150 * time.Millisecond
	t.Cleanup(func() { streamAfter = old })

	release := make(chan struct{})
	fake := newFake("alpha").setList("tools/list", toolItems("fast", "chatty", "slow")).setHandler(
		func(ctx context.Context, c *fakeCall) (json.RawMessage, error) {
			name, _ := jsonrpc.StringMember(c.Params, "name")
			switch name {
			case "chatty":
				c.Peer.Notify(jsonrpc.NewNotification("notifications/progress", json.RawMessage(`{"progressToken":"t","progress":1}`)))
				c.Peer.Notify(jsonrpc.NewNotification("notifications/progress", json.RawMessage(`{"progressToken":"t","progress":2}`)))
			case "slow":
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return json.RawMessage(`{"content":[{"type":"text","text":"` + name + `"}]}`), nil
		})
	th := startHub(t, "[servers.alpha]\ncommand = \"x\"\n", map[string]*fakeUpstream{"alpha": fake})
	c := th.connect("/mcp", "2025-11-25", `{}`)
	accept := "application/json, text/event-stream"

	r := c.post(rpc(1, "tools/call", `{"name":"alpha__fast"}`), "Accept", accept)
	if ct := r.header.Get("Content-Type"); r.status != http.StatusOK || ct != "application/json" {
		t.Fatalf("fast call: %d %q, want a JSON reply", r.status, ct)
	}
	if m := r.msg(t); string(m.ID) != "1" || m.Error != nil {
		t.Fatalf("fast call reply %s", r.body)
	}

	s := c.postStream(rpc(2, "tools/call", `{"name":"alpha__chatty","_meta":{"progressToken":"t"}}`), "Accept", accept)
	var got []string
	for {
		m, id := s.nextMsg()
		if id == "" {
			t.Fatalf("an event without an id: %v", m)
		}
		if m.Method != "" {
			p, _ := jsonrpc.Member(m.Params, "progress")
			got = append(got, m.Method+" "+string(p))
			continue
		}
		if string(m.ID) != "2" || m.Error != nil {
			t.Fatalf("chatty reply %+v", m)
		}
		break
	}
	if len(got) != 2 || got[0] != "notifications/progress 1" || got[1] != "notifications/progress 2" {
		t.Fatalf("chatty call streamed %v, want both progress notifications before the result", got)
	}
	s.wantEnd()

	start := time.Now()
	s = c.postStream(rpc(3, "tools/call", `{"name":"alpha__slow"}`), "Accept", accept)
	ev := s.next() // the stream opened after streamAfter, primed
	if !ev.HasID || ev.Data != "" {
		t.Fatalf("slow call's first event %+v, want a priming event", ev)
	}
	if d := time.Since(start); d < streamAfter {
		t.Fatalf("the slow call turned into a stream after %v, before streamAfter", d)
	}
	close(release)
	m, _ := s.nextMsg()
	if string(m.ID) != "3" || m.Error != nil {
		t.Fatalf("slow reply %+v", m)
	}
	s.wantEnd()
}
