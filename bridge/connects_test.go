package bridge

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// TestConnectLimitBoundsConnects starts more servers than a shared limit
// allows, with every handshake held: no more than the limit are ever being
// made at once, and as each one finishes the next starts, until all are
// connected.
func TestConnectLimitBoundsConnects(t *testing.T) {
	const servers, limit = 7, 3
	var (
		inFlight atomic.Int64
		mu       sync.Mutex
		gates    []chan struct{}
		dialed   = make(chan struct{}, servers)
	)
	setup := func(c *fakeConn) {
		if n := inFlight.Add(1); n > limit {
			t.Errorf("%d connections being made at once, limit %d", n, limit)
		}
		c.startGate = make(chan struct{})
		mu.Lock()
		gates = append(gates, c.startGate)
		mu.Unlock()
		dialed <- struct{}{}
	}
	shared := NewConnectLimit(limit)
	var hs []*harness
	for range servers {
		hs = append(hs, startHarness(t, Config{Client: client.Config{Command: "server"}, Connects: shared}, setup))
	}
	for i := range servers {
		recv(t, dialed, "a connection to be started")
		if i+1 >= limit {
			// The limit is reached: one handshake finishes, making room.
			mu.Lock()
			gate := gates[i+1-limit]
			mu.Unlock()
			inFlight.Add(-1)
			close(gate)
		}
	}
	mu.Lock()
	for _, gate := range gates[servers+1-limit:] {
		inFlight.Add(-1)
		close(gate)
	}
	mu.Unlock()
	for i, h := range hs {
		h.dialer.next(t)
		if st := h.nextChange(); st.State != StateConnected {
			t.Errorf("server %d: state %q, want connected", i, st.State)
		}
	}
}

// TestConnectLimitWaitEndsWithClose: a server waiting for a slot stops
// waiting when it is closed, without dialing.
func TestConnectLimitWaitEndsWithClose(t *testing.T) {
	shared := NewConnectLimit(1)
	gate := make(chan struct{})
	defer close(gate)
	first := startHarness(t, Config{Connects: shared}, func(c *fakeConn) { c.startGate = gate })
	first.dialer.next(t)
	second := startHarness(t, Config{Connects: shared}, nil)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		second.srv.Close()
	}()
	select {
	case <-closed:
	case <-time.After(within):
		t.Fatal("Close waited for a connect slot")
	}
	select {
	case c := <-second.dialer.conns:
		t.Errorf("a closed server dialed connection %d", c.n)
	default:
	}
}

// TestConnectLimitPerSessionNotBound: a per-session connection, made for a
// call that waits for it, does not wait for a slot the shared connections
// hold.
func TestConnectLimitPerSessionNotBound(t *testing.T) {
	shared := NewConnectLimit(1)
	gate := make(chan struct{})
	defer close(gate)
	other := startHarness(t, Config{Connects: shared}, func(c *fakeConn) { c.startGate = gate })
	other.dialer.next(t)
	h := newHarness(t, Config{Share: ShareSession, Connects: shared}, nil)
	h.srv.Start(context.Background())
	h.call(context.Background(), "s1", "tools/call", `{}`, newPeer("p"))
	// The shared connection waits for the slot; the session's is dialed
	// and carries the call.
	c := h.dialer.next(t)
	if call := recv(t, c.calls, "the call on the session's connection"); call.method != "tools/call" {
		t.Errorf("the session's connection got %s, want the tools/call", call.method)
	}
}

// TestSessionlessStateNotWritten: a state without a session, which is never
// resumed, is not written while the store holds none either; once a
// session was written, losing it is written so it is not offered again.
func TestSessionlessStateNotWritten(t *testing.T) {
	st := newFakeStore(&eventLog{})
	h := startHarness(t, Config{Client: client.Config{URL: remoteURL}, Store: st}, nil)
	c := h.connect()
	stateless := client.State{Transport: client.TransportStreamableHTTP, ProtocolVersion: "2025-06-18"}
	c.cfg.OnState(stateless)
	h.clk.advance(h.clk.nextTimer(t))
	if w := st.writes(); len(w) != 0 {
		t.Fatalf("a state without a session was written over nothing: %q", w)
	}
	c.cfg.OnState(state("sess-1", "ev-1"))
	h.clk.advance(h.clk.nextTimer(t))
	c.cfg.OnState(stateless)
	h.clk.advance(h.clk.nextTimer(t))
	w := st.writes()
	if len(w) != 2 || member(t, json.RawMessage(w[1]), "sessionId") != "" {
		t.Errorf("writes = %q, want the session, then its loss", w)
	}
}

// TestStoredStateNotRewritten: a state the store already holds is not
// written again, neither as the connection reports it nor at Close.
func TestStoredStateNotRewritten(t *testing.T) {
	st := newFakeStore(&eventLog{})
	stored, err := json.Marshal(state("sess-1", "ev-1"))
	if err != nil {
		t.Fatal(err)
	}
	st.state["fake"] = stored
	h := startHarness(t, Config{Client: client.Config{URL: remoteURL}, Store: st}, nil)
	c := h.connect()
	c.cfg.OnState(state("sess-1", "ev-1"))
	h.clk.advance(h.clk.nextTimer(t))
	c.cfg.OnState(state("sess-1", "ev-1"))
	h.srv.Close()
	if w := st.writes(); len(w) != 0 {
		t.Errorf("the stored state was written again: %q", w)
	}
}

// TestCachedCatalogNotRewritten: a server whose catalog is what the store
// holds writes nothing when it connects; a changed one is written.
func TestCachedCatalogNotRewritten(t *testing.T) {
	st := newFakeStore(&eventLog{})
	st.catalog["fake"] = map[string][]byte{"initialize": []byte(fakeInit), "tools/list": []byte(`[{"name":"a"},{"name":"b"}]`)}
	h := startHarness(t, Config{Client: client.Config{Command: "server"}, Store: st}, nil)
	c := h.connect()
	if n := len(st.catalogSaved); n != 0 {
		t.Errorf("the stored catalog was written %d times again", n)
	}
	c.setList("tools/list", `{"name":"a"}`)
	c.handler.HandleNotification(jsonrpc.NewNotification("notifications/tools/list_changed", nil), nil)
	saved := recv(t, st.catalogSaved, "the changed catalog saved")
	if got := string(saved["tools/list"]); got != `[{"name":"a"}]` {
		t.Errorf("saved tools = %s, want the changed list", got)
	}
	if keys := slices.Sorted(maps.Keys(saved)); !slices.Equal(keys, []string{"initialize", "tools/list"}) {
		t.Errorf("saved keys = %q", keys)
	}
}
