package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// inFlight is a call a routing test keeps open: who made it, and the fake
// peer it reports to ("" for a call made without one).
type inFlight struct{ session, peer string }

// openCalls starts the calls and returns the upstream side of each.
func openCalls(t *testing.T, h *harness, c *fakeConn, calls []inFlight) []*fakeCall {
	t.Helper()
	ups := make([]*fakeCall, len(calls))
	for i, spec := range calls {
		var peer jsonrpc.Peer
		if spec.peer != "" {
			peer = newPeer(spec.peer)
		}
		h.call(context.Background(), spec.session, "tools/call", `{}`, peer)
		ups[i] = c.nextCall(t)
	}
	return ups
}

// relatedID picks the related id a routing case hands the link: one of the
// calls' upstream ids, none (-1), or an id no call has (-2).
func relatedID(ups []*fakeCall, related int) json.RawMessage {
	switch related {
	case -1:
		return nil
	case -2:
		return json.RawMessage(`424242`)
	}
	return ups[related].id
}

// TestServerRequestRouting checks where a server-to-client request (such as
// sampling) goes: to the client whose call caused it, known by the request
// the upstream relates it to or inferred when only one session has calls in
// flight; refused when it could belong to several sessions; to the hub's
// Request handler when no call is in flight.
func TestServerRequestRouting(t *testing.T) {
	tests := []struct {
		name       string
		calls      []inFlight
		related    int
		hubRequest bool
		want       string // who answers: a peer's name or "hub"
		wantCode   int    // the JSON-RPC error code when it is refused
	}{
		{"related id picks the second session's call", []inFlight{{"s1", "a"}, {"s2", "b"}}, 1, false, "b", 0},
		{"related id picks the first session's call", []inFlight{{"s1", "a"}, {"s2", "b"}}, 0, false, "a", 0},
		{"the only call in flight", []inFlight{{"s1", "a"}}, -1, false, "a", 0},
		{"several calls of one session: the latest", []inFlight{{"s1", "a1"}, {"s1", "a2"}}, -1, false, "a2", 0},
		{"calls of two sessions are ambiguous", []inFlight{{"s1", "a"}, {"s2", "b"}}, -1, true, "", jsonrpc.CodeInternalError},
		{"an unknown related id falls back to the only session", []inFlight{{"s1", "a"}}, -2, false, "a", 0},
		{"an unknown related id with two sessions is ambiguous", []inFlight{{"s1", "a"}, {"s2", "b"}}, -2, false, "", jsonrpc.CodeInternalError},
		{"a call without a peer is no candidate", []inFlight{{"s1", ""}, {"s2", "b"}}, -1, false, "b", 0},
		{"no call in flight goes to the hub", nil, -1, true, "hub", 0},
		{"no call in flight and no hub handler", nil, -1, false, "", jsonrpc.CodeMethodNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg Config
			var hubSessions []string
			if tt.hubRequest {
				cfg.Request = func(_ context.Context, session, method string, _ json.RawMessage) (json.RawMessage, error) {
					hubSessions = append(hubSessions, session)
					return json.RawMessage(`{"answeredBy":"hub"}`), nil
				}
			}
			h := startHarness(t, cfg, nil)
			c := h.connect()
			ups := openCalls(t, h, c, tt.calls)
			req := jsonrpc.NewRequest(jsonrpc.IntID(9), "sampling/createMessage", json.RawMessage(`{"messages":[]}`))
			res, err := c.handler.HandleRequest(context.Background(), req, relatedID(ups, tt.related))
			if tt.wantCode != 0 {
				var e *jsonrpc.Error
				if !errors.As(err, &e) || e.Code != tt.wantCode {
					t.Fatalf("HandleRequest = (%s, %v), want error code %d", res, err, tt.wantCode)
				}
				if tt.wantCode == jsonrpc.CodeInternalError && !strings.Contains(e.Message, "cannot tell which client") {
					t.Errorf("refusal %q does not say why", e.Message)
				}
				if len(hubSessions) != 0 {
					t.Errorf("a refused request also went to the hub")
				}
				return
			}
			if err != nil {
				t.Fatalf("HandleRequest: %v", err)
			}
			if got := member(t, res, "answeredBy"); got != fmt.Sprintf("%q", tt.want) {
				t.Errorf("answered by %s, want %q", got, tt.want)
			}
			if tt.want == "hub" && !slices.Equal(hubSessions, []string{""}) {
				t.Errorf("hub Request got sessions %q, want the shared connection's \"\"", hubSessions)
			}
		})
	}
}

// TestLogMessageRouting checks that a log message goes to a call's client
// only when it surely belongs to that call, and to the hub otherwise.
func TestLogMessageRouting(t *testing.T) {
	tests := []struct {
		name    string
		calls   []inFlight
		related int
		want    string // the peer that gets it, or "hub"
	}{
		{"the only call in flight", []inFlight{{"s1", "a"}}, -1, "a"},
		{"related to the second of two calls", []inFlight{{"s1", "a1"}, {"s1", "a2"}}, 1, "a2"},
		{"two calls of one session, unrelated", []inFlight{{"s1", "a1"}, {"s1", "a2"}}, -1, "hub"},
		{"calls of two sessions, unrelated", []inFlight{{"s1", "a"}, {"s2", "b"}}, -1, "hub"},
		{"no call in flight", nil, -1, "hub"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var toHub []string
			h := startHarness(t, Config{Notification: func(session string, m *jsonrpc.Message) {
				mu.Lock()
				defer mu.Unlock()
				toHub = append(toHub, session+" "+m.Method)
			}}, nil)
			c := h.connect()
			peers := map[string]*fakePeer{}
			ups := make([]*fakeCall, len(tt.calls))
			for i, spec := range tt.calls {
				peers[spec.peer] = newPeer(spec.peer)
				h.call(context.Background(), spec.session, "tools/call", `{}`, peers[spec.peer])
				ups[i] = c.nextCall(t)
			}
			msg := jsonrpc.NewNotification("notifications/message", json.RawMessage(`{"level":"info","data":"hello"}`))
			c.handler.HandleNotification(msg, relatedID(ups, tt.related))
			for name, p := range peers {
				got := len(p.notifications())
				if want := map[bool]int{true: 1}[name == tt.want]; got != want {
					t.Errorf("peer %s got %d messages, want %d", name, got, want)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if want := map[bool][]string{true: {" notifications/message"}}[tt.want == "hub"]; !slices.Equal(toHub, want) {
				t.Errorf("hub got %q, want %q", toHub, want)
			}
		})
	}
}

// TestListChangedRefreshes checks that a list_changed notification refetches
// the list, reports the change, and still reaches the hub.
func TestListChangedRefreshes(t *testing.T) {
	notes := make(chan string, 4)
	h := startHarness(t, Config{Notification: func(session string, m *jsonrpc.Message) { notes <- session + " " + m.Method }}, nil)
	c := h.connect()
	if got := h.srv.List("tools/list"); len(got) != 2 {
		t.Fatalf("tools before the change = %s, want the two the server offered", got)
	}
	c.setList("tools/list", `{"name":"new"}`)
	c.handler.HandleNotification(jsonrpc.NewNotification("notifications/tools/list_changed", nil), nil)
	if got := recv(t, notes, "the notification at the hub"); got != " notifications/tools/list_changed" {
		t.Errorf("hub got %q", got)
	}
	h.nextChange()
	if got := h.srv.List("tools/list"); len(got) != 1 || string(got[0]) != `{"name":"new"}` {
		t.Errorf("tools after the change = %s, want the new list", got)
	}
}
