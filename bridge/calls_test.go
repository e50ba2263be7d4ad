package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// TestIDsAreMintedPerCall checks both directions of id remapping. The hub
// keeps each call's downstream id to itself (two sessions may both be on
// id 1); what reaches the upstream is an id the connection minted for the
// call, and the result that comes back under that id reaches the call that
// made it, whatever order the answers arrive in.
func TestIDsAreMintedPerCall(t *testing.T) {
	tests := []struct {
		name     string
		sessions [2]string
		answer   [2]int // order in which the upstream answers the two calls
	}{
		{"two sessions, answered in order", [2]string{"s1", "s2"}, [2]int{0, 1}},
		{"two sessions, answered in reverse", [2]string{"s1", "s2"}, [2]int{1, 0}},
		{"one session, answered in reverse", [2]string{"s1", "s1"}, [2]int{1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startHarness(t, Config{}, nil)
			c := h.connect()
			// Both peers stand for a client request with downstream id 1.
			peers := [2]*fakePeer{newPeer("downstream-1-a"), newPeer("downstream-1-b")}
			var results [2]<-chan callResult
			var ups [2]*fakeCall
			for i := range 2 {
				results[i] = h.call(context.Background(), tt.sessions[i], "tools/call", fmt.Sprintf(`{"name":"t%d"}`, i), peers[i])
				ups[i] = c.nextCall(t)
			}
			if string(ups[0].id) == string(ups[1].id) {
				t.Fatalf("both calls went upstream as id %s", ups[0].id)
			}
			minted := c.mintedIDs()
			for i, up := range ups {
				if !slices.Contains(minted, string(up.id)) {
					t.Errorf("call %d went upstream as id %s, which the connection never minted (minted %v)", i, up.id, minted)
				}
				if want := fmt.Sprintf(`{"name":"t%d"}`, i); string(up.params) != want {
					t.Errorf("call %d params upstream = %s, want %s unchanged", i, up.params, want)
				}
				if fw := peers[i].forwards(); len(fw) != 1 || fw[0].upID != string(up.id) {
					t.Errorf("call %d: Forwarded = %+v, want the upstream id %s", i, fw, up.id)
				}
			}
			for _, i := range tt.answer {
				ups[i].answer(fmt.Sprintf(`{"for":%d}`, i))
			}
			for i := range 2 {
				r := recv(t, results[i], "a result")
				if want := fmt.Sprintf(`{"for":%d}`, i); r.err != nil || string(r.res) != want {
					t.Errorf("call %d got (%s, %v), want %s", i, r.res, r.err, want)
				}
			}
		})
	}
}

// TestProgressTokenMapping checks that a client's progress token never goes
// upstream: the call carries a token the bridge minted, and progress the
// upstream reports under it comes back to the caller with the caller's own
// token restored.
func TestProgressTokenMapping(t *testing.T) {
	tests := []struct {
		name      string
		params    string
		wantToken string // the client's token, "" when the call has none
	}{
		{"number token", `{"name":"t","_meta":{"progressToken":7,"other":true}}`, `7`},
		{"string token", `{"name":"t","_meta":{"progressToken":"abc"}}`, `"abc"`},
		{"no _meta", `{"name":"t"}`, ``},
		{"_meta without a token", `{"name":"t","_meta":{"other":true}}`, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startHarness(t, Config{}, nil)
			c := h.connect()
			peer := newPeer("p")
			result := h.call(context.Background(), "s1", "tools/call", tt.params, peer)
			up := c.nextCall(t)
			if member(t, up.params, "name") != `"t"` {
				t.Errorf("upstream params lost their other members: %s", up.params)
			}
			sent := member(t, up.params, "_meta", "progressToken")
			fw := peer.forwards()
			if len(fw) != 1 {
				t.Fatalf("Forwarded called %d times, want once", len(fw))
			}
			if tt.wantToken == "" {
				if string(up.params) != tt.params {
					t.Errorf("params upstream = %s, want %s unchanged", up.params, tt.params)
				}
				if fw[0].hubToken != "" || fw[0].progressToken != "" {
					t.Errorf("Forwarded = %+v, want no tokens", fw[0])
				}
				up.answer(`{}`)
				recv(t, result, "the result")
				return
			}
			if sent == tt.wantToken || !strings.HasPrefix(sent, `"mcphub-`) {
				t.Fatalf("progress token upstream = %s, want a minted one (the client's is %s)", sent, tt.wantToken)
			}
			if `"`+fw[0].hubToken+`"` != sent || fw[0].progressToken != tt.wantToken || fw[0].upID != string(up.id) {
				t.Errorf("Forwarded = %+v, want upstream id %s, hub token %s, client token %s", fw[0], up.id, sent, tt.wantToken)
			}
			if member(t, up.params, "_meta", "other") != member(t, json.RawMessage(tt.params), "_meta", "other") {
				t.Errorf("other _meta members changed: %s", up.params)
			}
			c.handler.HandleNotification(jsonrpc.NewNotification("notifications/progress",
				fmt.Appendf(nil, `{"progressToken":%s,"progress":3,"total":10}`, sent)), nil)
			notes := peer.notifications()
			if len(notes) != 1 {
				t.Fatalf("peer got %d notifications, want the progress", len(notes))
			}
			if got := member(t, notes[0].Params, "progressToken"); got != tt.wantToken {
				t.Errorf("progress reached the client with token %s, want its own %s", got, tt.wantToken)
			}
			if member(t, notes[0].Params, "progress") != "3" || member(t, notes[0].Params, "total") != "10" {
				t.Errorf("progress params changed: %s", notes[0].Params)
			}
			up.answer(`{}`)
			recv(t, result, "the result")
		})
	}
}

// TestProgressStaysWithItsCall checks that progress reaches only the call
// whose token it carries, even when two clients chose the same token, and
// that progress for a call that ended, or for a token never minted, reaches
// nobody.
func TestProgressStaysWithItsCall(t *testing.T) {
	var toHub []string
	h := startHarness(t, Config{Notification: func(_ string, m *jsonrpc.Message) { toHub = append(toHub, m.Method) }}, nil)
	c := h.connect()
	pa, pb := newPeer("a"), newPeer("b")
	ra := h.call(context.Background(), "s1", "tools/call", `{"_meta":{"progressToken":"same"}}`, pa)
	upA := c.nextCall(t)
	rb := h.call(context.Background(), "s2", "tools/call", `{"_meta":{"progressToken":"same"}}`, pb)
	upB := c.nextCall(t)
	tokA, tokB := member(t, upA.params, "_meta", "progressToken"), member(t, upB.params, "_meta", "progressToken")
	if tokA == tokB {
		t.Fatalf("two calls went upstream with the same progress token %s", tokA)
	}
	progress := func(tok string) {
		c.handler.HandleNotification(jsonrpc.NewNotification("notifications/progress",
			fmt.Appendf(nil, `{"progressToken":%s,"progress":1}`, tok)), nil)
	}

	progress(tokB)
	if n := len(pa.notifications()); n != 0 {
		t.Errorf("call A got %d notifications meant for call B", n)
	}
	if notes := pb.notifications(); len(notes) != 1 || member(t, notes[0].Params, "progressToken") != `"same"` {
		t.Errorf("call B got %v, want one progress with its own token", notes)
	}

	upA.answer(`{}`)
	recv(t, ra, "call A's result")
	progress(tokA)           // the call ended
	progress(`"mcphub-999"`) // never minted
	progress(`"same"`)       // a client's token, which the upstream never saw
	if n := len(pa.notifications()); n != 0 {
		t.Errorf("call A got %d notifications after it ended", n)
	}
	if n := len(pb.notifications()); n != 1 {
		t.Errorf("call B got %d notifications, want only its own one", n)
	}
	if len(toHub) != 0 {
		t.Errorf("progress belonging to no call went to the hub: %v", toHub)
	}
	upB.answer(`{}`)
	recv(t, rb, "call B's result")
}

// TestCancellation checks that ending a caller's context cancels exactly
// that call upstream, by the id the bridge minted for it, and leaves the
// other calls alone. *client.Conn sends the notifications/cancelled when the
// context passed to CallWithID ends; the fake does the same, so this
// asserts that the bridge hands the connection the caller's context with
// the right id.
func TestCancellation(t *testing.T) {
	tests := []struct {
		name   string
		cancel []int // calls whose callers give up
	}{
		{"first of two", []int{0}},
		{"second of two", []int{1}},
		{"both", []int{0, 1}},
		{"none", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startHarness(t, Config{}, nil)
			c := h.connect()
			var cancels [2]context.CancelFunc
			var results [2]<-chan callResult
			var ups [2]*fakeCall
			for i := range 2 {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				cancels[i] = cancel
				results[i] = h.call(ctx, fmt.Sprintf("s%d", i), "tools/call", `{}`, newPeer("p"))
				ups[i] = c.nextCall(t)
			}
			var want []string
			for _, i := range tt.cancel {
				cancels[i]()
				if r := recv(t, results[i], "the cancelled call"); !errors.Is(r.err, context.Canceled) {
					t.Errorf("cancelled call %d returned %v, want context.Canceled", i, r.err)
				}
				want = append(want, fmt.Sprintf(`{"requestId":%s}`, ups[i].id))
			}
			for i := range 2 {
				if slices.Contains(tt.cancel, i) {
					continue
				}
				if err := ups[i].ctx.Err(); err != nil {
					t.Errorf("call %d, not cancelled, reached the connection with an ended context: %v", i, err)
				}
				ups[i].answer(`{"ok":true}`)
				if r := recv(t, results[i], "the result"); r.err != nil {
					t.Errorf("call %d failed: %v", i, r.err)
				}
			}
			var got []string
			for _, n := range c.notifications() {
				if n.Method == "notifications/cancelled" {
					got = append(got, string(n.Params))
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("cancellations upstream = %v, want %v", got, want)
			}
		})
	}
}

// TestCallErrors checks what a caller gets when its call does not succeed.
func TestCallErrors(t *testing.T) {
	type unavailable interface{ Unavailable() bool }
	type tooLarge interface{ TooLarge() bool }
	tests := []struct {
		name    string
		max     int64
		respond func(up *fakeCall)
		check   func(t *testing.T, err error)
	}{
		{
			name:    "an upstream JSON-RPC error reaches the caller unchanged",
			respond: func(up *fakeCall) { up.fail(jsonrpc.NewError(-32001, "no such tool")) },
			check: func(t *testing.T, err error) {
				var e *jsonrpc.Error
				if !errors.As(err, &e) || e.Code != -32001 || e.Message != "no such tool" {
					t.Errorf("err = %v, want the upstream's -32001", err)
				}
			},
		},
		{
			name:    "a result over MaxResponseBytes is refused",
			max:     16,
			respond: func(up *fakeCall) { up.answer(`{"content":"more than sixteen bytes"}`) },
			check: func(t *testing.T, err error) {
				var e tooLarge
				if !errors.As(err, &e) || !e.TooLarge() {
					t.Errorf("err = %v, want a too-large error", err)
				}
			},
		},
		{
			name:    "a result at MaxResponseBytes passes",
			max:     int64(len(`{"ok":true}`)),
			respond: func(up *fakeCall) { up.answer(`{"ok":true}`) },
			check: func(t *testing.T, err error) {
				if err != nil {
					t.Errorf("err = %v, want the result", err)
				}
			},
		},
		{
			name:    "a connection that closes under the call makes the server unavailable",
			respond: func(up *fakeCall) { up.fail(fmt.Errorf("stream: %w", client.ErrSessionExpired)) },
			check: func(t *testing.T, err error) {
				var e unavailable
				if !errors.As(err, &e) || !strings.Contains(err.Error(), "not retried") {
					t.Errorf("err = %v, want an unavailable error saying it is not retried", err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startHarness(t, Config{MaxResponseBytes: tt.max}, nil)
			c := h.connect()
			result := h.call(context.Background(), "s1", "tools/call", `{}`, newPeer("p"))
			tt.respond(c.nextCall(t))
			tt.check(t, recv(t, result, "the result").err)
		})
	}
}

// TestSubscriptionsRenewedOnReconnect checks that the resources clients
// subscribed to are subscribed again on a new connection, and the ones they
// unsubscribed from are not.
func TestSubscriptionsRenewedOnReconnect(t *testing.T) {
	h := startHarness(t, Config{}, nil)
	c1 := h.connect()
	for _, m := range []struct{ method, uri string }{
		{"resources/subscribe", "file:///kept"},
		{"resources/subscribe", "file:///dropped"},
		{"resources/unsubscribe", "file:///dropped"},
	} {
		r := h.call(context.Background(), "s1", m.method, fmt.Sprintf(`{"uri":%q}`, m.uri), newPeer("p"))
		c1.nextCall(t).answer(`{}`)
		recv(t, r, "the result")
	}
	c1.drop(errors.New("lost"))
	h.nextChange() // restarting
	h.clk.advance(h.clk.nextTimer(t))
	c2 := h.dialer.next(t)
	up := c2.nextCall(t)
	if up.method != "resources/subscribe" || member(t, up.params, "uri") != `"file:///kept"` {
		t.Errorf("first request on the new connection = %s %s, want resources/subscribe of file:///kept", up.method, up.params)
	}
	up.answer(`{}`)
	if st := h.nextChange(); st.State != StateConnected {
		t.Fatalf("state = %q, want connected", st.State)
	}
	c2.noMoreCalls(t)
}

// TestProgressTokensDifferFromAnEarlierRun checks that a token an earlier
// run minted (mcphub-1, mcphub-2, ...), which a resumed upstream stream may
// still carry, never matches a call of this run, and that a call the hub
// makes without a peer still sends no client token upstream.
func TestProgressTokensDifferFromAnEarlierRun(t *testing.T) {
	h := startHarness(t, Config{}, nil)
	c := h.connect()
	p := newPeer("a")
	r := h.call(context.Background(), "s1", "tools/call", `{"_meta":{"progressToken":"t"}}`, p)
	up := c.nextCall(t)
	tok := member(t, up.params, "_meta", "progressToken")
	for n := 1; n <= 3; n++ {
		old := fmt.Sprintf(`"mcphub-%d"`, n)
		if tok == old {
			t.Fatalf("this run minted %s, a token an earlier run minted too", tok)
		}
		c.handler.HandleNotification(jsonrpc.NewNotification("notifications/progress",
			fmt.Appendf(nil, `{"progressToken":%s,"progress":1}`, old)), nil)
	}
	if n := len(p.notifications()); n != 0 {
		t.Errorf("an earlier run's progress reached a call of this run: %v", p.notifications())
	}
	up.answer(`{}`)
	recv(t, r, "the call's result")

	r = h.call(context.Background(), "s1", "resources/subscribe", `{"uri":"u","_meta":{"progressToken":"client-token"}}`, nil)
	up = c.nextCall(t)
	if got := member(t, up.params, "_meta", "progressToken"); got == `"client-token"` {
		t.Errorf("a call without a peer sent the client's progress token upstream as it is")
	}
	c.handler.HandleNotification(jsonrpc.NewNotification("notifications/progress",
		fmt.Appendf(nil, `{"progressToken":%s,"progress":1}`, member(t, up.params, "_meta", "progressToken"))), nil)
	up.answer(`{}`)
	recv(t, r, "the subscription's result")
}

// TestTokensDifferBetweenServersOfOneName makes a call on two Servers of
// the same name, as a hub that restarts in one process or replaces a
// connection has: their first tokens differ, so a call one adopts from the
// other can never share its token with a new call.
func TestTokensDifferBetweenServersOfOneName(t *testing.T) {
	var toks []string
	for range 2 {
		h := startHarness(t, Config{}, nil)
		c := h.connect()
		r := h.call(context.Background(), "s1", "tools/call", `{"_meta":{"progressToken":"t"}}`, newPeer("a"))
		up := c.nextCall(t)
		toks = append(toks, member(t, up.params, "_meta", "progressToken"))
		up.answer(`{}`)
		recv(t, r, "the call's result")
	}
	if toks[0] == toks[1] {
		t.Errorf("two Servers of one name both minted %s", toks[0])
	}
}

// TestSetLogLevelRacesClose sets the log level while the Server closes, as
// the hub does when a session comes or goes as a server is replaced: under
// -race, nothing may start a goroutine while Close waits for them.
func TestSetLogLevelRacesClose(t *testing.T) {
	withLogging := func(c *fakeConn) {
		c.init = &client.InitializeResult{Capabilities: json.RawMessage(`{"logging":{}}`),
			Raw: json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{"logging":{}},"serverInfo":{"name":"fake","version":"1"}}`)}
		c.calls = make(chan *fakeCall, 1000)
	}
	for range 2000 {
		h := startHarness(t, Config{}, withLogging)
		h.connect()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for j := range 40 {
				h.srv.SetLogLevel([]string{"debug", "info"}[j%2])
			}
		}()
		h.srv.Close()
		<-done
	}
}
