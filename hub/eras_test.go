package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// TestSessionClientDualEraUpstream: a server that speaks both eras takes a
// session-era client's call over its session-era connection: its requests
// in the middle of the call reach the client as requests, and what it
// answers reaches the client unchanged. The client's capabilities go
// along in _meta, in case the call lands on a stateless connection.
func TestSessionClientDualEraUpstream(t *testing.T) {
	fake := newFake("alpha").setList("tools/list", toolItems("ask"))
	fake.setStatus(UpstreamStatus{State: api.StateConnected, Transport: "fake", Protocol: jsonrpc.Version20260728,
		SessionProtocol: jsonrpc.Version20251125, Since: time.Now()})
	calls := make(chan *fakeCall, 1)
	fake.setHandler(func(ctx context.Context, c *fakeCall) (json.RawMessage, error) {
		calls <- c
		answer, err := c.Peer.Request(ctx, "sampling/createMessage", json.RawMessage(`{"messages":[],"maxTokens":5}`))
		if err != nil {
			return nil, err
		}
		return fmt.Appendf(nil, `{"content":[{"type":"text","text":%q}]}`, answer), nil
	})
	th := startHub(t, twoServers, map[string]*fakeUpstream{"alpha": fake})
	c := th.connect("/mcp", "2025-11-25", `{"sampling":{}}`)
	s := c.postStream(rpc(7, "tools/call", `{"name":"alpha__ask","arguments":{"a":1}}`))
	req, _ := s.nextMsg()
	if req.Method != "sampling/createMessage" || !req.IsRequest() {
		t.Fatalf("first event = %s %s, want the server's sampling request", req.Method, req.Params)
	}
	if r := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}}`, req.ID)); r.status != http.StatusAccepted {
		t.Fatalf("posting the answer: %d %s", r.status, r.body)
	}
	call := <-calls
	if call.Session == "" || !call.SessionEra {
		t.Errorf("the call was made for session %q, session era %v; want the client's session over the session-era connection", call.Session, call.SessionEra)
	}
	if caps, _ := jsonrpc.MetaMember(call.Params, jsonrpc.MetaClientCapabilities); string(caps) != `{"sampling":{}}` {
		t.Errorf("the call carried capabilities %s, want the client's", caps)
	}
	m, _ := s.nextMsg()
	if string(m.ID) != "7" || m.Error != nil || !strings.Contains(string(m.Result), `model`) {
		t.Errorf("final event = id %s %s %+v, want the server's result with the sampled answer", m.ID, m.Result, m.Error)
	}
}

// TestDualEraUpstreamEraPerCall: which connection of a dual-era server a
// call asks for. A session-era client's call asks for the session-era one
// while the server offers it, and is translated over the stateless one
// otherwise; its subscriptions, and every stateless call, take the shared
// connection.
func TestDualEraUpstreamEraPerCall(t *testing.T) {
	fake := newFake("alpha").setList("tools/list", toolItems("echo")).
		setList("resources/list", []json.RawMessage{json.RawMessage(`{"uri":"file:///a","name":"a"}`)})
	dual := UpstreamStatus{State: api.StateConnected, Transport: "fake", Protocol: jsonrpc.Version20260728, SessionProtocol: jsonrpc.Version20251125, Since: time.Now()}
	fake.setStatus(dual)
	th := startHub(t, twoServers, map[string]*fakeUpstream{"alpha": fake})
	c := th.connect("/mcp", "2025-11-25", `{}`)

	c.call(1, "tools/call", `{"name":"alpha__echo"}`)
	if got := fake.nextCall(t); !got.SessionEra {
		t.Error("a session-era call did not ask for the session-era connection")
	}
	c.call(2, "resources/subscribe", `{"uri":"file:///a"}`)
	if got := fake.nextCall(t); got.Method != "resources/subscribe" || got.SessionEra {
		t.Errorf("%s asked for the session era %v; subscriptions stay on the shared connection", got.Method, got.SessionEra)
	}

	// The session-era connection is down: the call is translated.
	stateless := dual
	stateless.SessionProtocol = ""
	fake.setStatus(stateless)
	c.call(3, "tools/call", `{"name":"alpha__echo"}`)
	got := fake.nextCall(t)
	if got.SessionEra {
		t.Error("a call translated over the stateless connection asked for the session era")
	}
	if _, ok := jsonrpc.MetaMember(got.Params, jsonrpc.MetaClientCapabilities); !ok {
		t.Error("a translated call did not carry the client's capabilities")
	}
}

// TestSessionClientInputRequiredAfterAll: a session-era client's call that
// asked for the session era but got input_required (it landed on a
// stateless connection) is fulfilled all the same, and every retry takes
// the shared connection.
func TestSessionClientInputRequiredAfterAll(t *testing.T) {
	fake := newFake("alpha").setList("tools/list", toolItems("ask"))
	fake.setStatus(UpstreamStatus{State: api.StateConnected, Transport: "fake", Protocol: jsonrpc.Version20260728,
		SessionProtocol: jsonrpc.Version20251125, Since: time.Now()})
	calls := make(chan *fakeCall, 2)
	fake.setHandler(func(ctx context.Context, c *fakeCall) (json.RawMessage, error) {
		calls <- c
		if _, ok := jsonrpc.Member(c.Params, "inputResponses"); !ok {
			return json.RawMessage(`{"resultType":"input_required","inputRequests":{"who":{"method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object","properties":{}}}}},"requestState":"st"}`), nil
		}
		return json.RawMessage(`{"resultType":"complete","content":[{"type":"text","text":"hello"}]}`), nil
	})
	th := startHub(t, twoServers, map[string]*fakeUpstream{"alpha": fake})
	c := th.connect("/mcp", "2025-11-25", `{"elicitation":{}}`)
	s := c.postStream(rpc(7, "tools/call", `{"name":"alpha__ask","arguments":{}}`))
	req, _ := s.nextMsg()
	if req.Method != "elicitation/create" {
		t.Fatalf("first event = %s %s, want the elicitation request", req.Method, req.Params)
	}
	if r := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"n":"Ada"}}}`, req.ID)); r.status != http.StatusAccepted {
		t.Fatalf("posting the answer: %d %s", r.status, r.body)
	}
	if first := <-calls; !first.SessionEra {
		t.Error("the first call did not ask for the session era")
	}
	if retry := <-calls; retry.SessionEra {
		t.Error("the retry with the answers asked for the session era; it must take the stateless connection that asked")
	}
	m, _ := s.nextMsg()
	if string(m.ID) != "7" || m.Error != nil || strings.Contains(string(m.Result), "resultType") || !strings.Contains(string(m.Result), "hello") {
		t.Errorf("final event = id %s %s %+v, want the result without resultType", m.ID, m.Result, m.Error)
	}
}
