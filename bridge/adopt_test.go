package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// TestForwarded checks that a call on the shared connection tells its peer
// where it went upstream (what a restarted hub needs to adopt it), and that
// a call on a per-session connection, which no restart can resume, does
// not.
func TestForwarded(t *testing.T) {
	tests := []struct {
		name      string
		share     string
		params    string
		wantToken string // the client's token Forwarded reports
		wantNone  bool
	}{
		{"shared, with a progress token", ShareServer, `{"_meta":{"progressToken":"tok"}}`, `"tok"`, false},
		{"shared, without a progress token", ShareServer, `{}`, ``, false},
		{"per session", ShareSession, `{"_meta":{"progressToken":"tok"}}`, ``, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startHarness(t, Config{Share: tt.share}, nil)
			c := h.connect() // the shared connection
			peer := newPeer("p")
			result := h.call(context.Background(), "s1", "tools/call", tt.params, peer)
			if tt.share == ShareSession {
				c = h.dialer.next(t) // the session's own connection
			}
			up := c.nextCall(t)
			fw := peer.forwards()
			switch {
			case tt.wantNone:
				if len(fw) != 0 {
					t.Errorf("Forwarded = %+v on a per-session connection, want no call", fw)
				}
			case len(fw) != 1:
				t.Errorf("Forwarded called %d times, want once", len(fw))
			default:
				hubToken := ""
				if tok := member(t, up.params, "_meta", "progressToken"); tok != "" {
					hubToken = strings.Trim(tok, `"`)
				}
				want := forwarded{upID: string(up.id), hubToken: hubToken, progressToken: tt.wantToken}
				if fw[0] != want {
					t.Errorf("Forwarded = %+v, want %+v", fw[0], want)
				}
			}
			up.answer(`{}`)
			if r := recv(t, result, "the result"); r.err != nil {
				t.Errorf("call failed: %v", r.err)
			}
		})
	}
}

// storedSession is the upstream state an earlier run left: requests 7 and
// 8 had open streams.
func storedSession() *client.State {
	return &client.State{
		Transport: client.TransportStreamableHTTP, SessionID: "sess-1",
		LastEventIDs: map[string]string{"7": "ev-3", "8": "ev-4"},
		Initialize:   json.RawMessage(fakeInit),
	}
}

// TestAdoptRefused checks that Adopt reports false when nothing could
// finish the request, so the hub answers the client at once.
func TestAdoptRefused(t *testing.T) {
	noSession := storedSession()
	noSession.SessionID = ""
	tests := []struct {
		name    string
		resume  *client.State
		id      string
		started bool
	}{
		{"no stored session", nil, "7", false},
		{"a stored state without a session id", noSession, "7", false},
		{"a request whose stream was not open", storedSession(), "9", false},
		{"after the stored session was offered", storedSession(), "7", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Config{Client: client.Config{URL: "http://upstream.invalid/mcp", Resume: tt.resume}}, nil)
			if tt.started {
				h.srv.Start(context.Background())
				h.connect()
			}
			done := func(json.RawMessage, error) { t.Errorf("done called for a refused adoption") }
			if h.srv.Adopt(json.RawMessage(tt.id), "mcphub-1", nil, newPeer("p"), done) {
				t.Errorf("Adopt = true, want false")
			}
		})
	}
}

// TestAdopt checks calls of an earlier run: one whose id the resumed
// session reports is finished through Await, with its progress mapped back
// to its client; one the session did not resume is answered with an error;
// tokens this run mints do not collide with the adopted ones; later
// connections do not offer the stored session again.
func TestAdopt(t *testing.T) {
	h := newHarness(t, Config{Client: client.Config{URL: "http://upstream.invalid/mcp", Resume: storedSession()}}, func(c *fakeConn) {
		if c.n == 1 {
			c.resumed = []json.RawMessage{json.RawMessage(`7`)}
		}
	})
	type outcome struct {
		res json.RawMessage
		err error
	}
	doneA, doneB := make(chan outcome, 1), make(chan outcome, 1)
	pa, pb := newPeer("a"), newPeer("b")
	if !h.srv.Adopt(json.RawMessage(`7`), "mcphub-1", json.RawMessage(`"tokA"`), pa, func(r json.RawMessage, err error) { doneA <- outcome{r, err} }) {
		t.Fatal("Adopt(7) = false, want true")
	}
	if !h.srv.Adopt(json.RawMessage(`8`), "mcphub-2", json.RawMessage(`5`), pb, func(r json.RawMessage, err error) { doneB <- outcome{r, err} }) {
		t.Fatal("Adopt(8) = false, want true")
	}
	h.srv.Start(context.Background())
	c := h.dialer.next(t)
	if c.cfg.Resume == nil || c.cfg.Resume.SessionID != "sess-1" {
		t.Fatalf("first connection offered %+v, want the stored session", c.cfg.Resume)
	}

	var unavailable interface{ Unavailable() bool }
	if o := recv(t, doneB, "the outcome of the call that was not resumed"); !errors.As(o.err, &unavailable) || !strings.Contains(o.err.Error(), "did not resume") {
		t.Errorf("call 8 ended with (%s, %v), want an unavailable error saying the session was not resumed", o.res, o.err)
	}
	await := c.nextCall(t)
	if await.method != "await" || string(await.id) != "7" {
		t.Fatalf("the resumed call was finished by %s %s, want Await of 7", await.method, await.id)
	}
	if st := h.nextChange(); st.State != StateConnected {
		t.Fatalf("state = %q, want connected", st.State)
	}

	progress := func(tok string) {
		c.handler.HandleNotification(jsonrpc.NewNotification("notifications/progress",
			fmt.Appendf(nil, `{"progressToken":%q,"progress":2}`, tok)), nil)
	}
	progress("mcphub-1")
	if notes := pa.notifications(); len(notes) != 1 || member(t, notes[0].Params, "progressToken") != `"tokA"` {
		t.Errorf("adopted call's client got %v, want its progress with token \"tokA\"", notes)
	}

	pc := newPeer("c")
	resultC := h.call(context.Background(), "s3", "tools/call", `{"_meta":{"progressToken":"tokC"}}`, pc)
	upC := c.nextCall(t)
	tokC := strings.Trim(member(t, upC.params, "_meta", "progressToken"), `"`)
	if tokC == "mcphub-1" || tokC == "mcphub-2" {
		t.Fatalf("a new call was given %s, a token of an adopted call", tokC)
	}
	progress(tokC)
	if n := len(pa.notifications()); n != 1 {
		t.Errorf("the adopted call got the new call's progress (%d notifications)", n)
	}
	if n := len(pc.notifications()); n != 1 {
		t.Errorf("the new call got %d notifications, want its progress", n)
	}

	await.answer(`{"content":"late"}`)
	if o := recv(t, doneA, "the adopted call's outcome"); o.err != nil || string(o.res) != `{"content":"late"}` {
		t.Errorf("adopted call ended with (%s, %v), want its result", o.res, o.err)
	}
	upC.answer(`{}`)
	recv(t, resultC, "the new call's result")

	c.drop(errors.New("lost"))
	h.nextChange()
	h.clk.advance(h.clk.nextTimer(t))
	if c2 := h.dialer.next(t); c2.cfg.Resume != nil {
		t.Errorf("second connection offered %+v, want a fresh session", c2.cfg.Resume)
	}
}

// TestAdoptUnreachable checks that adopted calls are answered when the
// first connection cannot be made.
func TestAdoptUnreachable(t *testing.T) {
	h := newHarness(t, Config{Client: client.Config{URL: "http://upstream.invalid/mcp", Resume: storedSession()}}, func(c *fakeConn) {
		c.startErr = errors.New("connection refused")
	})
	done := make(chan error, 1)
	if !h.srv.Adopt(json.RawMessage(`7`), "mcphub-1", nil, newPeer("a"), func(_ json.RawMessage, err error) { done <- err }) {
		t.Fatal("Adopt = false, want true")
	}
	h.srv.Start(context.Background())
	err := recv(t, done, "the adopted call's outcome")
	if err == nil || !strings.Contains(err.Error(), "could not be reached") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("adopted call ended with %v, want an error naming the failed connection", err)
	}
}

// TestAdoptAnsweredWhenClosing closes a Server whose resumed connection
// comes up just as Close begins: the adopted call cannot be awaited any
// more, but it is answered with an error, never left waiting (its client's
// stream would not end).
func TestAdoptAnsweredWhenClosing(t *testing.T) {
	var h *harness
	h = newHarness(t, Config{Client: client.Config{URL: remoteURL, Resume: storedSession()}}, func(c *fakeConn) {
		c.resumed = []json.RawMessage{json.RawMessage(`7`)}
		// The connection comes up only once Close has begun.
		deadline := time.Now().Add(within)
		for time.Now().Before(deadline) {
			h.srv.mu.Lock()
			closed := h.srv.closed
			h.srv.mu.Unlock()
			if closed {
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
	done := make(chan error, 1)
	if !h.srv.Adopt(json.RawMessage(`7`), "mcphub-x-1", nil, newPeer("a"), func(_ json.RawMessage, err error) { done <- err }) {
		t.Fatal("Adopt refused a call on a Server that has not connected yet")
	}
	h.srv.Start(context.Background())
	h.srv.Close()
	if err := recv(t, done, "the adopted call's answer"); err == nil {
		t.Error("the adopted call was answered without an error though the Server stopped")
	}
}
