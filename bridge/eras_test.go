package bridge

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// dualEraSetup makes fake connections of a server that speaks both eras:
// 2026-07-28 to a connection that finds its era, a session to one made
// for the session era. While noSessions holds it is a server of the
// stateless era alone, which refuses the session.
func dualEraSetup(noSessions *atomic.Bool) func(c *fakeConn) {
	return func(c *fakeConn) {
		if !c.cfg.SessionEra {
			c.init.ProtocolVersion = jsonrpc.Version20260728
			c.init.SupportedVersions = []string{jsonrpc.Version20260728, jsonrpc.Version20251125}
			return
		}
		c.init.ProtocolVersion = jsonrpc.Version20251125
		if noSessions != nil && noSessions.Load() {
			c.startErr = fmt.Errorf("initialize: %w: it answered without an Mcp-Session-Id", client.ErrNoSessionEra)
		}
	}
}

// untilConnected returns the first status the server reports with its
// shared connection connected: the session-era connection's outcome is
// reported before it, as the shared one waits for it.
func (h *harness) untilConnected() Status {
	h.t.Helper()
	for {
		if st := h.nextChange(); st.State == StateConnected {
			return st
		}
	}
}

// keepsSessions is whether dualEraSetup's server keeps sessions.
func keepsSessions(on bool) *atomic.Bool {
	var b atomic.Bool
	b.Store(!on)
	return &b
}

// TestDualEraServerRelaysEachClientInItsEra: once the shared connection
// speaks 2026-07-28, the server gets a session-era connection too; calls of
// session-era sessions take it, stateless calls keep the shared one, and
// the status names both revisions.
func TestDualEraServerRelaysEachClientInItsEra(t *testing.T) {
	h := startHarness(t, Config{Client: client.Config{URL: "http://upstream.invalid/mcp"}}, dualEraSetup(keepsSessions(true)))
	modern := h.dialer.next(t)
	if modern.cfg.SessionEra {
		t.Fatal("the shared connection was made for the session era; it must find the server's era")
	}
	session := h.dialer.next(t)
	if !session.cfg.SessionEra {
		t.Fatal("the second connection must be made for the session era")
	}
	// The server is reported connected with both eras at once.
	st := h.untilConnected()
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
	// Changes reported before the drop (the refetch above may report
	// more than one) come first: the drop's is the one without the
	// session era, and it comes within the changes reported.
	for st := h.nextChange(); st.SessionProtocol != ""; st = h.nextChange() {
	}
	translated := h.call(context.Background(), "s1", "tools/call", `{"name":"a"}`, newPeer("s1"))
	modern.nextCall(t).answer(`{"resultType":"complete","content":[]}`)
	if r := recv(t, translated, "the translated call's result"); r.err != nil {
		t.Fatal(r.err)
	}
}

// TestStatelessOnlyServerIsAskedAgainSlowly: a server that keeps no
// sessions refuses the session-era connection; the status names one
// revision, session-era calls take the shared connection (the hub
// translates them), and the session is asked for again only after
// Backoff.SlowRetry, when a server that keeps sessions by then becomes
// dual-era.
func TestStatelessOnlyServerIsAskedAgainSlowly(t *testing.T) {
	noSessions := keepsSessions(false)
	h := startHarness(t, Config{Client: client.Config{URL: "http://upstream.invalid/mcp"}}, dualEraSetup(noSessions))
	modern := h.dialer.next(t)
	if c := h.dialer.next(t); !c.cfg.SessionEra {
		t.Fatal("the second connection must be made for the session era")
	}
	if st := h.untilConnected(); st.SessionProtocol != "" || st.Protocol != jsonrpc.Version20260728 {
		t.Fatalf("status protocols = %q and %q, want %q alone", st.Protocol, st.SessionProtocol, jsonrpc.Version20260728)
	}
	byClient := h.call(context.Background(), "s1", "tools/call", `{"name":"a"}`, newPeer("s1"))
	modern.nextCall(t).answer(`{"resultType":"complete","content":[]}`)
	if r := recv(t, byClient, "the call's result"); r.err != nil {
		t.Fatal(r.err)
	}
	if d := h.clk.nextTimer(t); d != time.Minute {
		t.Fatalf("the session was to be asked for again in %v, want Backoff.SlowRetry (1m)", d)
	}
	select {
	case c := <-h.dialer.conns:
		t.Fatalf("connection %d dialed before the slow retry", c.n)
	default:
	}
	noSessions.Store(false)
	h.clk.advance(time.Minute)
	if c := h.dialer.next(t); !c.cfg.SessionEra {
		t.Fatal("the retry must be made for the session era")
	}
	if st := h.nextChange(); st.SessionProtocol != jsonrpc.Version20251125 {
		t.Fatalf("session protocol %q once the server keeps sessions, want %q", st.SessionProtocol, jsonrpc.Version20251125)
	}
}

// TestSessionConnectionsFollowTheServersEras: with share = "session", a
// session's own connection asks for a session unless the server is known
// to refuse them, and one the server refuses is made again at once,
// finding the era.
func TestSessionConnectionsFollowTheServersEras(t *testing.T) {
	for _, sessions := range []bool{true, false} {
		t.Run(fmt.Sprintf("keepsSessions=%v", sessions), func(t *testing.T) {
			h := startHarness(t, Config{Share: ShareSession, Client: client.Config{URL: "http://upstream.invalid/mcp"}}, dualEraSetup(keepsSessions(sessions)))
			h.dialer.next(t)
			if c := h.dialer.next(t); !c.cfg.SessionEra {
				t.Fatal("the probe of the session era must be made for it")
			}
			h.untilConnected()
			done := h.call(context.Background(), "s1", "tools/call", `{"name":"a"}`, newPeer("s1"))
			own := h.dialer.next(t)
			if own.cfg.SessionEra != sessions {
				t.Fatalf("the session's own connection asked for the session era: %v, want %v", own.cfg.SessionEra, sessions)
			}
			own.nextCall(t).answer(`{"content":[]}`)
			if r := recv(t, done, "the call"); r.err != nil {
				t.Fatal(r.err)
			}
		})
	}
	t.Run("refused before the eras are known", func(t *testing.T) {
		gate := make(chan struct{})
		setup := dualEraSetup(keepsSessions(false))
		h := startHarness(t, Config{Share: ShareSession, Client: client.Config{URL: "http://upstream.invalid/mcp"}}, func(c *fakeConn) {
			setup(c)
			if c.n == 2 {
				c.startGate = gate // the probe answers when the test says
			}
		})
		h.dialer.next(t)
		h.dialer.next(t)
		done := h.call(context.Background(), "s1", "tools/call", `{"name":"a"}`, newPeer("s1"))
		if own := h.dialer.next(t); !own.cfg.SessionEra {
			t.Fatal("the session's own connection must ask for a session while the eras are not known")
		}
		own := h.dialer.next(t)
		if own.cfg.SessionEra {
			t.Fatal("after the refusal the session's connection must find the era")
		}
		own.nextCall(t).answer(`{"content":[]}`)
		if r := recv(t, done, "the call"); r.err != nil {
			t.Fatal(r.err)
		}
		close(gate)
	})
}

// TestSessionConnectionKeepsItsEraAcrossAnOutage: a session's own
// connection to a dual-era server lost to an outage (a 502 while the
// server is redeployed) asks for a session again; only a refusal of the
// session makes it find the era.
func TestSessionConnectionKeepsItsEraAcrossAnOutage(t *testing.T) {
	h := startHarness(t, Config{Share: ShareSession, Client: client.Config{URL: "http://upstream.invalid/mcp"}}, dualEraSetup(keepsSessions(true)))
	h.dialer.next(t)
	h.dialer.next(t)
	h.untilConnected()
	done := h.call(context.Background(), "s1", "tools/call", `{"name":"a"}`, newPeer("s1"))
	own := h.dialer.next(t)
	own.nextCall(t).answer(`{"content":[]}`)
	if r := recv(t, done, "the call"); r.err != nil {
		t.Fatal(r.err)
	}
	own.drop(fmt.Errorf("the server stopped answering: ping: %w", &client.HTTPError{Status: 502}))
	h.clk.advance(h.clk.nextTimer(t))
	if again := h.dialer.next(t); !again.cfg.SessionEra {
		t.Fatal("after an outage the session's connection must ask for a session again")
	}
}

// TestSessionCallsTakeTheSharedConnectionWhenTheSessionEraIsDown: a call
// that asks for the session era takes the shared connection while the
// server's session-era connection is not up: here a server that refused
// sessions, rolled back to one of the session era alone.
func TestSessionCallsTakeTheSharedConnectionWhenTheSessionEraIsDown(t *testing.T) {
	var rolledBack atomic.Bool
	setup := dualEraSetup(keepsSessions(false))
	h := startHarness(t, Config{Client: client.Config{URL: "http://upstream.invalid/mcp"}}, func(c *fakeConn) {
		setup(c)
		if !c.cfg.SessionEra && rolledBack.Load() {
			c.init.ProtocolVersion = jsonrpc.Version20251125
		}
	})
	modern := h.dialer.next(t)
	h.dialer.next(t) // the probe, refused
	h.untilConnected()
	if d := h.clk.nextTimer(t); d != time.Minute {
		t.Fatalf("slow retry in %v, want 1m", d)
	}
	rolledBack.Store(true)
	modern.drop(errors.New("redeployed"))
	for {
		if d := h.clk.nextTimer(t); d < time.Minute {
			h.clk.advance(d)
			break
		}
	}
	shared := h.dialer.next(t)
	if st := h.untilConnected(); st.Protocol != jsonrpc.Version20251125 || st.SessionProtocol != "" {
		t.Fatalf("status protocols %q and %q, want %q alone", st.Protocol, st.SessionProtocol, jsonrpc.Version20251125)
	}
	done := h.call(context.Background(), "s1", "tools/call", `{"name":"a"}`, newPeer("s1"))
	shared.nextCall(t).answer(`{"content":[]}`)
	if r := recv(t, done, "the call"); r.err != nil {
		t.Fatal(r.err)
	}
}

// TestErasAreAskedOnlyWhereOneEndpointCanServeBoth: a pinned revision, a
// stdio server, the legacy SSE transport and a server whose
// server/discover names 2026-07-28 alone get one connection.
func TestErasAreAskedOnlyWhereOneEndpointCanServeBoth(t *testing.T) {
	dual := dualEraSetup(keepsSessions(true))
	for name, tt := range map[string]struct {
		cc    client.Config
		setup func(c *fakeConn)
	}{
		"pinned": {cc: client.Config{URL: "http://upstream.invalid/mcp", ProtocolVersion: jsonrpc.Version20260728}, setup: dual},
		"stdio":  {cc: client.Config{Command: "server"}, setup: dual},
		"sse":    {cc: client.Config{URL: "http://upstream.invalid/sse", Transport: client.TransportSSE}, setup: dual},
		"stateless era alone": {cc: client.Config{URL: "http://upstream.invalid/mcp"}, setup: func(c *fakeConn) {
			dual(c)
			c.init.SupportedVersions = []string{jsonrpc.Version20260728}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			h := startHarness(t, Config{Client: tt.cc}, tt.setup)
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
