package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

const remoteURL = "http://upstream.invalid/mcp"

// state returns a connection state with session id sid and one open stream.
func state(sid, lastEvent string) client.State {
	return client.State{
		Transport: client.TransportStreamableHTTP, SessionID: sid, ProtocolVersion: "2025-06-18",
		LastEventIDs: map[string]string{"12": lastEvent},
	}
}

// TestStateWritesCoalesced checks that state changes within the coalescing
// window make one write, of the latest state, in the layout earlier runs
// wrote, and that the next change opens a new window.
func TestStateWritesCoalesced(t *testing.T) {
	events := &eventLog{}
	st := newFakeStore(events)
	h := startHarness(t, Config{Client: client.Config{URL: remoteURL}, Store: st}, nil)
	c := h.connect()
	if c.cfg.OnState == nil {
		t.Fatal("the remote server's connection reports its state to nobody")
	}
	c.cfg.OnState(state("sess-1", "ev-1"))
	c.cfg.OnState(state("sess-1", "ev-2"))
	c.cfg.OnState(state("sess-1", "ev-3"))
	if d := h.clk.nextTimer(t); d != stateFlushDelay {
		t.Errorf("flush armed for %v, want %v", d, stateFlushDelay)
	}
	h.clk.noTimer(t)
	h.clk.advance(stateFlushDelay - 1)
	if w := st.writes(); len(w) != 0 {
		t.Fatalf("state written before the window closed: %q", w)
	}
	h.clk.advance(1)
	want := `{"transport":"streamable-http","sessionId":"sess-1","protocolVersion":"2025-06-18","lastEventIds":{"12":"ev-3"}}`
	if w := st.writes(); !slices.Equal(w, []string{want}) {
		t.Fatalf("writes = %q, want one of the latest state %s", w, want)
	}

	c.cfg.OnState(state("sess-1", "ev-4"))
	h.clk.advance(h.clk.nextTimer(t))
	if w := st.writes(); len(w) != 2 || member(t, json.RawMessage(w[1]), "lastEventIds", "12") != `"ev-4"` {
		t.Errorf("writes = %q, want a second write of ev-4", w)
	}
}

// TestCloseWritesPendingState checks that Close writes the state still
// waiting for its window, after the connection has stopped (so no later
// change is missed), and nothing after.
func TestCloseWritesPendingState(t *testing.T) {
	events := &eventLog{}
	st := newFakeStore(events)
	h := startHarness(t, Config{Client: client.Config{URL: remoteURL}, Store: st}, nil)
	c := h.connect()
	c.cfg.OnState(state("sess-1", "ev-9"))
	h.srv.Close()
	if got, want := events.list(), []string{"conn 1 closed", "state saved"}; !slices.Equal(got, want) {
		t.Errorf("steps = %q, want %q", got, want)
	}
	if w := st.writes(); len(w) != 1 || member(t, json.RawMessage(w[0]), "lastEventIds", "12") != `"ev-9"` {
		t.Errorf("writes = %q, want the pending state", w)
	}
	h.clk.advance(stateFlushDelay)
	c.cfg.OnState(state("sess-1", "ev-10"))
	h.clk.advance(stateFlushDelay)
	h.srv.Close()
	if w := st.writes(); len(w) != 1 {
		t.Errorf("writes after Close = %q, want none more", w)
	}
}

// TestCloseWithoutPendingState checks that Close writes nothing when the
// latest state is already stored.
func TestCloseWithoutPendingState(t *testing.T) {
	st := newFakeStore(&eventLog{})
	h := startHarness(t, Config{Client: client.Config{URL: remoteURL}, Store: st}, nil)
	c := h.connect()
	c.cfg.OnState(state("sess-1", "ev-1"))
	h.clk.advance(h.clk.nextTimer(t))
	h.srv.Close()
	if w := st.writes(); len(w) != 1 {
		t.Errorf("writes = %q, want only the one the window made", w)
	}
}

// TestStoreWiring checks what New takes from the store for each kind of
// server: only a remote server resumes its stored session and reports its
// state, and a Resume set by the caller wins.
func TestStoreWiring(t *testing.T) {
	stored := `{"transport":"streamable-http","sessionId":"stored","lastEventIds":{"3":"ev-1"}}`
	mine := &client.State{Transport: client.TransportStreamableHTTP, SessionID: "mine"}
	tests := []struct {
		name        string
		client      client.Config
		stored      string // "" for none
		noStore     bool
		wantSession string // the session offered to the first connection
		wantOnState bool
	}{
		{"remote with a stored session", client.Config{URL: remoteURL}, stored, false, "stored", true},
		{"remote with nothing stored", client.Config{URL: remoteURL}, "", false, "", true},
		{"remote with a stored state without a session", client.Config{URL: remoteURL}, `{"transport":"streamable-http"}`, false, "", true},
		{"remote with an unreadable state", client.Config{URL: remoteURL}, `{"transport":`, false, "", true},
		{"remote with Resume already set", client.Config{URL: remoteURL, Resume: mine}, stored, false, "mine", true},
		{"stdio", client.Config{Command: "server"}, stored, false, "", false},
		{"no store", client.Config{URL: remoteURL}, stored, true, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newFakeStore(&eventLog{})
			if tt.stored != "" {
				st.state["fake"] = []byte(tt.stored)
			}
			cfg := Config{Client: tt.client}
			if !tt.noStore {
				cfg.Store = st
			}
			h := startHarness(t, cfg, nil)
			c := h.dialer.next(t)
			got := ""
			if c.cfg.Resume != nil {
				got = c.cfg.Resume.SessionID
			}
			if got != tt.wantSession {
				t.Errorf("first connection offered session %q, want %q", got, tt.wantSession)
			}
			if (c.cfg.OnState != nil) != tt.wantOnState {
				t.Errorf("OnState set = %v, want %v", c.cfg.OnState != nil, tt.wantOnState)
			}
		})
	}
}

// TestPerSessionStateNotStored checks that a per-session connection's state
// is not written over the shared connection's, which is what a restarted
// hub resumes.
func TestPerSessionStateNotStored(t *testing.T) {
	st := newFakeStore(&eventLog{})
	h := startHarness(t, Config{Client: client.Config{URL: remoteURL}, Share: ShareSession, Store: st}, nil)
	shared := h.connect()
	h.call(context.Background(), "s1", "tools/call", `{}`, newPeer("p"))
	own := h.dialer.next(t)
	if shared.cfg.OnState == nil {
		t.Error("the shared connection's state is not stored")
	}
	if own.cfg.OnState != nil || own.cfg.Resume != nil {
		t.Errorf("per-session connection: OnState set %v, Resume %+v; want neither", own.cfg.OnState != nil, own.cfg.Resume)
	}
}

// TestCatalogCache checks that a stored catalog answers before the server
// connects, that the fresh one replaces it, and that it is stored in the
// layout earlier runs wrote.
func TestCatalogCache(t *testing.T) {
	cachedInit := `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"cached","version":"0"}}`
	st := newFakeStore(&eventLog{})
	st.catalog["fake"] = map[string][]byte{
		"initialize": []byte(cachedInit),
		"tools/list": []byte(`[{"name":"cached"}]`),
	}
	gate := make(chan struct{})
	h := newHarness(t, Config{Client: client.Config{Command: "server"}, Store: st}, func(c *fakeConn) { c.startGate = gate })
	check := func(when, wantInit, wantTools string) {
		t.Helper()
		if got := string(h.srv.Initialize()); got != wantInit {
			t.Errorf("%s: initialize = %s, want %s", when, got, wantInit)
		}
		tools, _ := json.Marshal(h.srv.List("tools/list"))
		if string(tools) != wantTools {
			t.Errorf("%s: tools = %s, want %s", when, tools, wantTools)
		}
	}
	check("before Start", cachedInit, `[{"name":"cached"}]`)
	h.srv.Start(context.Background())
	c := h.dialer.next(t)
	check("while connecting", cachedInit, `[{"name":"cached"}]`)
	close(gate)
	if s := h.nextChange(); s.State != StateConnected {
		t.Fatalf("state = %q, want connected", s.State)
	}
	check("connected", fakeInit, `[{"name":"a"},{"name":"b"}]`)
	saved := recv(t, st.catalogSaved, "the catalog saved")
	if len(saved) != 2 || string(saved["initialize"]) != fakeInit || string(saved["tools/list"]) != `[{"name":"a"},{"name":"b"}]` {
		t.Errorf("catalog saved = %q, want initialize and the tools array", saved)
	}
	// A lost connection and a reconnect change the state, not the catalog:
	// it is not written again.
	c.drop(errors.New("gone"))
	if got := h.nextChange(); got.State != StateRestarting {
		t.Fatalf("state after the loss = %q, want restarting", got.State)
	}
	h.clk.advance(h.clk.nextTimer(t))
	h.connect()
	if n := len(st.catalogSaved); n != 0 {
		t.Errorf("an unchanged catalog was written %d more times", n)
	}
}

// TestCloseSavesTheCatalogOfALateChange: a Server closed while the report
// of its connection is still under way (the catalog not yet saved) saves
// its catalog before it gives the records up, so the next run has it.
func TestCloseSavesTheCatalogOfALateChange(t *testing.T) {
	st := newFakeStore(&eventLog{})
	h := newHarness(t, Config{Client: client.Config{Command: "server"}, Store: st, Claims: NewClaims()}, nil)
	entered, hold := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	defer release() // a failure below must not leave Close waiting
	h.hold = func(s Status) {
		if s.State == StateConnected {
			close(entered)
			<-hold
		}
	}
	h.srv.Start(context.Background())
	h.dialer.next(t)
	recv(t, entered, "the connection reported")
	closed := make(chan struct{})
	go func() {
		h.srv.Close()
		close(closed)
	}()
	saved := recv(t, st.catalogSaved, "the catalog saved by Close")
	release()
	recv(t, closed, "Close to return")
	if string(saved["initialize"]) != fakeInit || string(saved["tools/list"]) != `[{"name":"a"},{"name":"b"}]` {
		t.Errorf("catalog saved = %q, want initialize and the tools array", saved)
	}
}

// TestRegainWritesTheServingCatalog: when the Server that owned the
// records closes, the one the hub serves on writes its own catalog even if
// it is the one it loaded at its start: the closing one may have written
// another since.
func TestRegainWritesTheServingCatalog(t *testing.T) {
	st := newFakeStore(&eventLog{})
	cfg := Config{Client: client.Config{Command: "server"}, Store: st, Claims: NewClaims()}
	old := startHarness(t, cfg, nil)
	c1 := old.connect()
	recv(t, st.catalogSaved, "the first catalog saved")
	next := startHarness(t, cfg, nil) // loads that catalog, and connects to the same
	next.connect()
	c1.setList("tools/list", `{"name":"a"}`)
	c1.handler.HandleNotification(jsonrpc.NewNotification("notifications/tools/list_changed", nil), nil)
	recv(t, st.catalogSaved, "the old Server's changed catalog saved")
	old.srv.Close()
	saved := recv(t, st.catalogSaved, "the serving Server's catalog saved")
	if got := string(saved["tools/list"]); got != `[{"name":"a"},{"name":"b"}]` {
		t.Errorf("stored tools = %s, want the serving Server's", got)
	}
}

// TestCatalogCacheSources checks where the catalog served before the first
// connection comes from.
func TestCatalogCacheSources(t *testing.T) {
	stored := map[string][]byte{"initialize": []byte(`{"from":"store"}`), "tools/list": []byte(`[]`)}
	tests := []struct {
		name     string
		stored   map[string][]byte
		cache    *Cache
		wantInit string
	}{
		{"the store", stored, nil, `{"from":"store"}`},
		{"Config.Cache over the store", stored, &Cache{Init: json.RawMessage(`{"from":"config"}`)}, `{"from":"config"}`},
		{"nothing without an initialize result", map[string][]byte{"tools/list": []byte(`[{"name":"x"}]`)}, nil, ``},
		{"nothing stored", nil, nil, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newFakeStore(&eventLog{})
			if tt.stored != nil {
				st.catalog["fake"] = tt.stored
			}
			h := newHarness(t, Config{Store: st, Cache: tt.cache}, nil)
			if got := string(h.srv.Initialize()); got != tt.wantInit {
				t.Errorf("initialize = %s, want %s", got, tt.wantInit)
			}
		})
	}
}

// TestClaimsGiveTheStoredSessionToTheServingOne replaces a server's Server
// the way the hub does: the new one is made while the old one still serves,
// and the old one closes once the new one is swapped in. Only the first of
// the run resumes the stored session; the old one's state is kept until it
// closes, then the new one's newest state is written at once, and nothing
// the old one does while closing (it ends its session) is written; a
// replacement thrown away never writes.
func TestClaimsGiveTheStoredSessionToTheServingOne(t *testing.T) {
	st := newFakeStore(&eventLog{})
	st.state["fake"] = []byte(`{"transport":"streamable-http","sessionId":"stored"}`)
	claims := NewClaims()
	cfg := Config{Client: client.Config{URL: remoteURL}, Store: st, Claims: claims}
	stored := func() string {
		t.Helper()
		data, err := st.Upstream("fake")
		if err != nil {
			t.Fatal(err)
		}
		return member(t, json.RawMessage(data), "sessionId")
	}
	write := func(h *harness, c *fakeConn, session string) {
		c.cfg.OnState(state(session, "ev-1"))
		h.clk.advance(stateFlushDelay)
	}

	first := startHarness(t, cfg, nil)
	c1 := first.connect()
	if c1.cfg.Resume == nil || c1.cfg.Resume.SessionID != "stored" {
		t.Fatalf("the first Server of the run was not offered the stored session: %+v", c1.cfg.Resume)
	}
	write(first, c1, "sess-A")

	second := startHarness(t, cfg, nil) // the replacement, connecting
	c2 := second.connect()
	if c2.cfg.Resume != nil {
		t.Errorf("a replacement was offered the session %q its predecessor still uses", c2.cfg.Resume.SessionID)
	}
	write(second, c2, "sess-B")
	write(first, c1, "sess-A2") // the old one still serves the calls
	if got := stored(); got != `"sess-A2"` {
		t.Errorf("stored session = %s while the old Server serves, want its \"sess-A2\"", got)
	}
	c1.cfg.OnState(state("sess-A3", "ev-2")) // pending as the swap happens
	first.srv.Close()
	if got := stored(); got != `"sess-B"` {
		t.Errorf("stored session = %s once the old Server closed, want the replacement's \"sess-B\"", got)
	}

	third := startHarness(t, cfg, nil) // a replacement thrown away
	c3 := third.connect()
	write(third, c3, "sess-C")
	third.srv.Close()
	if got := stored(); got != `"sess-B"` {
		t.Errorf("stored session = %s after a thrown-away replacement, want the serving one's \"sess-B\"", got)
	}
	write(second, c2, "sess-B2")
	if got := stored(); got != `"sess-B2"` {
		t.Errorf("stored session = %s, want \"sess-B2\"", got)
	}
}
