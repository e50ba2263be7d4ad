package bridge

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// dualEraSetup makes fake connections of a server that speaks both eras:
// 2026-07-28 to a connection that finds its era, a session to one made
// for the session era. noSessions makes it a server of the stateless era
// alone, which refuses the session.
func dualEraSetup(noSessions bool) func(c *fakeConn) {
	return func(c *fakeConn) {
		if !c.cfg.SessionEra {
			c.init.ProtocolVersion = jsonrpc.Version20260728
			return
		}
		c.init.ProtocolVersion = jsonrpc.Version20251125
		if noSessions {
			c.startErr = fmt.Errorf("initialize: %w: it answered without an Mcp-Session-Id", client.ErrNoSessionEra)
		}
	}
}

// TestDualEraServerRelaysEachClientInItsEra: once the shared connection
// speaks 2026-07-28, the server gets a session-era connection too; calls of
// session-era sessions take it, stateless calls keep the shared one, and
// the status names both revisions.
func TestDualEraServerRelaysEachClientInItsEra(t *testing.T) {
	h := startHarness(t, Config{Client: client.Config{URL: "http://upstream.invalid/mcp"}}, dualEraSetup(false))
	modern := h.connect()
	if modern.cfg.SessionEra {
		t.Fatal("the shared connection was made for the session era; it must find the server's era")
	}
	session := h.dialer.next(t)
	if !session.cfg.SessionEra {
		t.Fatal("the second connection must be made for the session era")
	}
	st := h.nextChange()
	if st.Protocol != jsonrpc.Version20260728 || st.SessionProtocol != jsonrpc.Version20251125 {
		t.Fatalf("status protocols = %q and %q, want %q and %q", st.Protocol, st.SessionProtocol, jsonrpc.Version20260728, jsonrpc.Version20251125)
	}

	byClient := h.call(context.Background(), "s1", "tools/call", `{"name":"a"}`, newPeer("s1"))
	c := session.nextCall(t)
	c.answer(`{"content":[]}`)
	if r := recv(t, byClient, "the session-era call's result"); r.err != nil {
		t.Fatal(r.err)
	}
	stateless := h.call(context.Background(), "", "tools/call", `{"name":"a"}`, newPeer("modern"))
	c = modern.nextCall(t)
	c.answer(`{"resultType":"complete","content":[]}`)
	if r := recv(t, stateless, "the stateless call's result"); r.err != nil {
		t.Fatal(r.err)
	}
	modern.noMoreCalls(t)
	session.noMoreCalls(t)

	// The session-era connection offers no lists of its own: the
	// shared one's are served, and a change it hears of refetches them.
	if got := len(h.srv.List("tools/list")); got != 2 {
		t.Errorf("tools listed = %d, want the shared connection's 2", got)
	}
	modern.setList("tools/list", `{"name":"a"}`, `{"name":"b"}`, `{"name":"c"}`)
	session.handler.HandleNotification(jsonrpc.NewNotification("notifications/tools/list_changed", nil), nil)
	h.nextChange()
	if got := len(h.srv.List("tools/list")); got != 3 {
		t.Errorf("tools listed after the change = %d, want the shared connection's 3", got)
	}

	// While the session-era connection is down the status offers only
	// the stateless era, so the hub translates over the shared
	// connection rather than fail its session-era clients' calls.
	session.drop(errors.New("connection reset"))
	if st := h.nextChange(); st.SessionProtocol != "" {
		t.Errorf("session protocol %q while the session-era connection is down, want none", st.SessionProtocol)
	}
	translated := h.call(context.Background(), "", "tools/call", `{"name":"a"}`, newPeer("s1"))
	modern.nextCall(t).answer(`{"resultType":"complete","content":[]}`)
	if r := recv(t, translated, "the translated call's result"); r.err != nil {
		t.Fatal(r.err)
	}
}

// TestStatelessOnlyServerKeepsOneConnection: a server that keeps no
// sessions refuses the session-era connection; it is not tried again, the
// status names one revision, and session-era calls take the shared
// connection (the hub translates them).
func TestStatelessOnlyServerKeepsOneConnection(t *testing.T) {
	h := startHarness(t, Config{Client: client.Config{URL: "http://upstream.invalid/mcp"}}, dualEraSetup(true))
	modern := h.connect()
	c := h.dialer.next(t)
	if !c.cfg.SessionEra {
		t.Fatal("the second connection must be made for the session era")
	}
	eraLink := c.handler.(*link)
	if st := h.nextChange(); st.SessionProtocol != "" || st.Protocol != jsonrpc.Version20260728 {
		t.Fatalf("status protocols = %q and %q, want %q alone", st.Protocol, st.SessionProtocol, jsonrpc.Version20260728)
	}
	byClient := h.call(context.Background(), "s1", "tools/call", `{"name":"a"}`, newPeer("s1"))
	modern.nextCall(t).answer(`{"resultType":"complete","content":[]}`)
	if r := recv(t, byClient, "the call's result"); r.err != nil {
		t.Fatal(r.err)
	}
	// The session-era link's supervisor ends: it waits for no retry.
	recv(t, eraLink.done, "the session-era link to stop")
	h.clk.noTimer(t)
	select {
	case c := <-h.dialer.conns:
		t.Fatalf("connection %d dialed after the server refused the session era", c.n)
	default:
	}
}

// TestSessionConnectionsFollowTheServersEras: with share = "session", a
// session's own connection asks for a session first; one that the server
// refuses is made again at once, finding the era.
func TestSessionConnectionsFollowTheServersEras(t *testing.T) {
	for _, noSessions := range []bool{false, true} {
		t.Run(fmt.Sprintf("noSessions=%v", noSessions), func(t *testing.T) {
			h := startHarness(t, Config{Share: ShareSession, Client: client.Config{URL: "http://upstream.invalid/mcp"}}, dualEraSetup(noSessions))
			h.connect()
			if c := h.dialer.next(t); !c.cfg.SessionEra {
				t.Fatal("the probe of the session era must be made for it")
			}
			h.nextChange()
			done := h.call(context.Background(), "s1", "tools/call", `{"name":"a"}`, newPeer("s1"))
			own := h.dialer.next(t)
			if !own.cfg.SessionEra {
				t.Fatal("the session's own connection must ask for a session first")
			}
			if noSessions {
				own = h.dialer.next(t)
				if own.cfg.SessionEra {
					t.Fatal("after the refusal the session's connection must find the era")
				}
			}
			own.nextCall(t).answer(`{"content":[]}`)
			if r := recv(t, done, "the call"); r.err != nil {
				t.Fatal(r.err)
			}
		})
	}
}

// TestErasAreAskedOnlyWhereOneEndpointCanServeBoth: a pinned revision, a
// stdio server and the legacy SSE transport get one connection.
func TestErasAreAskedOnlyWhereOneEndpointCanServeBoth(t *testing.T) {
	for name, cc := range map[string]client.Config{
		"pinned": {URL: "http://upstream.invalid/mcp", ProtocolVersion: jsonrpc.Version20260728},
		"stdio":  {Command: "server"},
		"sse":    {URL: "http://upstream.invalid/sse", Transport: client.TransportSSE},
	} {
		t.Run(name, func(t *testing.T) {
			h := startHarness(t, Config{Client: cc}, dualEraSetup(false))
			h.connect()
			// The era is looked at before the connection is reported:
			// a session-era connection would be on its way by now.
			h.srv.mu.Lock()
			era := h.srv.era
			h.srv.mu.Unlock()
			if era != nil {
				t.Fatal("a session-era connection was started")
			}
			if st := h.srv.Status(); st.SessionProtocol != "" {
				t.Fatalf("session protocol %q, want none", st.SessionProtocol)
			}
		})
	}
}
