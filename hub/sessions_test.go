package hub

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// sessionOn starts a session on endpoint ("" for /mcp) through the session
// set, as an initialize request would, with the given client capabilities.
func sessionOn(t *testing.T, h *Hub, endpoint, caps string) *session {
	t.Helper()
	m, err := jsonrpc.Decode([]byte(initReq("2025-11-25", caps)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	s, _, err := h.sessions.create(ctx, endpoint, m)
	if err != nil {
		t.Fatalf("a session on %s: %v", endpointName(endpoint), err)
	}
	return s
}

// queuedMethods returns the methods of the messages waiting in a session's
// queue for a standalone stream, oldest first.
func queuedMethods(t *testing.T, s *session) []string {
	t.Helper()
	s.mu.Lock()
	queue := slices.Clone(s.queue)
	s.mu.Unlock()
	out := []string{}
	for _, data := range queue {
		m, err := jsonrpc.Decode(data)
		if err != nil {
			t.Fatalf("a queued message %q is not JSON-RPC: %v", data, err)
		}
		out = append(out, m.Method)
	}
	return out
}

// clearQueue empties a session's queue, so the next case starts from nothing.
func clearQueue(s *session) {
	s.mu.Lock()
	s.queue = nil
	s.mu.Unlock()
}

// closedSessions returns the session ids an upstream was told had ended.
func closedSessions(f *fakeUpstream) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.closedSS)
}

// ended reports whether a session's context is done.
func ended(s *session) bool {
	select {
	case <-s.ctx.Done():
		return true
	default:
		return false
	}
}

// TestSessionsCaps fills an endpoint to its cap with sessions in use: the
// next session is refused with an *errSessionCap naming the cap, other
// endpoints are not affected, and a session no longer in use makes room: it
// is ended for the new one.
func TestSessionsCaps(t *testing.T) {
	for _, tc := range []struct {
		name     string
		endpoint string
		other    string // an endpoint this cap does not limit
		wantMsg  []string
	}{
		{"merged endpoint", "", "alpha", []string{"/mcp already has 2 sessions in use", "max_sessions = 2"}},
		{"per-server endpoint", "alpha", "beta", []string{"/alpha/mcp already has 2 sessions in use", "max_sessions_per_server = 2"}},
		{"per-server cap leaves /mcp alone", "beta", "", []string{"/beta/mcp already has 2 sessions in use", "max_sessions_per_server = 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := startHub(t, "[hub]\nmax_sessions = 2\nmax_sessions_per_server = 2\n"+twoServers, nil)
			set := th.h.sessions
			var inUse []*session
			var untrack []func()
			for i := range 2 {
				s := newSession(th.h.ctx, tc.endpoint, "2025-11-25", nil, nil)
				if err := set.add(s); err != nil {
					t.Fatalf("session %d of 2: %v", i+1, err)
				}
				done, err := s.track(json.RawMessage("1"), func(error) {})
				if err != nil {
					t.Fatal(err)
				}
				inUse, untrack = append(inUse, s), append(untrack, done)
			}
			extra := newSession(th.h.ctx, tc.endpoint, "2025-11-25", nil, nil)
			err := set.add(extra)
			var capErr *errSessionCap
			if !errors.As(err, &capErr) {
				t.Fatalf("a session past the cap: err = %v, want *errSessionCap", err)
			}
			for _, want := range tc.wantMsg {
				if !strings.Contains(capErr.Error(), want) {
					t.Errorf("cap error %q lacks %q", capErr.Error(), want)
				}
			}
			if set.get(extra.id) != nil || set.count(tc.endpoint) != 2 {
				t.Errorf("the refused session was added: count = %d", set.count(tc.endpoint))
			}
			if err := set.add(newSession(th.h.ctx, tc.other, "2025-11-25", nil, nil)); err != nil {
				t.Errorf("%s while %s is full: %v", endpointName(tc.other), endpointName(tc.endpoint), err)
			}
			untrack[1]() // the second session's call is answered
			next := newSession(th.h.ctx, tc.endpoint, "2025-11-25", nil, nil)
			if err := set.add(next); err != nil {
				t.Fatalf("a session once one is no longer in use: %v", err)
			}
			if set.get(inUse[1].id) != nil || !ended(inUse[1]) {
				t.Errorf("the session no longer in use was not ended for the new one")
			}
			if set.get(inUse[0].id) == nil || ended(inUse[0]) || set.count(tc.endpoint) != 2 {
				t.Errorf("the session in use was ended, or the count is %d, want 2", set.count(tc.endpoint))
			}
		})
	}
	t.Run("least recently active goes first", func(t *testing.T) {
		th := startHub(t, "[hub]\nmax_sessions = 3\n"+twoServers, nil)
		set := th.h.sessions
		var all []*session
		for range 3 {
			s := newSession(th.h.ctx, "", "2025-11-25", nil, nil)
			if err := set.add(s); err != nil {
				t.Fatal(err)
			}
			all = append(all, s)
		}
		all[0].lastSeen.Store(time.Now().Add(time.Minute).UnixNano())
		all[2].lastSeen.Store(time.Now().Add(-time.Hour).UnixNano())
		if err := set.add(newSession(th.h.ctx, "", "2025-11-25", nil, nil)); err != nil {
			t.Fatal(err)
		}
		for i, want := range []bool{true, true, false} {
			if got := set.get(all[i].id) != nil; got != want {
				t.Errorf("session %d (last seen %v) kept = %v, want %v", i, time.Unix(0, all[i].lastSeen.Load()), got, want)
			}
		}
	})
	t.Run("closing hub", func(t *testing.T) {
		th := startHub(t, twoServers, nil)
		th.h.Close()
		err := th.h.sessions.add(newSession(context.Background(), "", "2025-11-25", nil, nil))
		var capErr *errSessionCap
		if !errors.As(err, &capErr) || !strings.Contains(capErr.Error(), "shutting down") {
			t.Errorf("a session while the hub closes: err = %v, want *errSessionCap saying it is shutting down", err)
		}
	})
}

// TestSessionsCountAndOf checks which sessions see a server: a per-session
// id gives just that session, "" gives every /mcp session and the server's
// own.
func TestSessionsCountAndOf(t *testing.T) {
	th := startHub(t, twoServers, nil)
	byName := map[string]*session{
		"m1": sessionOn(t, th.h, "", `{}`),
		"m2": sessionOn(t, th.h, "", `{}`),
		"a1": sessionOn(t, th.h, "alpha", `{}`),
		"b1": sessionOn(t, th.h, "beta", `{}`),
		"b2": sessionOn(t, th.h, "beta", `{}`),
	}
	nameOf := map[*session]string{}
	for n, s := range byName {
		nameOf[s] = n
	}
	set := th.h.sessions
	for endpoint, want := range map[string]int{"": 2, "alpha": 1, "beta": 2, "ghost": 0} {
		if got := set.count(endpoint); got != want {
			t.Errorf("count(%q) = %d, want %d", endpoint, got, want)
		}
	}
	for _, tc := range []struct {
		server, session string
		want            []string
	}{
		{"alpha", "", []string{"a1", "m1", "m2"}},
		{"beta", "", []string{"b1", "b2", "m1", "m2"}},
		{"ghost", "", []string{"m1", "m2"}},
		{"alpha", "a1", []string{"a1"}},
		{"alpha", "m2", []string{"m2"}},
		{"beta", "b2", []string{"b2"}},
		{"alpha", "unknown", nil},
	} {
		id := tc.session
		if s := byName[tc.session]; s != nil {
			id = s.id
		}
		var got []string
		for _, s := range set.of(tc.server, id) {
			got = append(got, nameOf[s])
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("of(%q, %q) = %q, want %q", tc.server, tc.session, got, tc.want)
		}
	}
}

// TestSessionsEnd ends a session: it leaves the set, its context ends, each
// upstream of its endpoint hears SessionClosed, its subscription is released
// upstream, and another session is untouched.
func TestSessionsEnd(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		told     []string // the upstreams that must hear SessionClosed
		untold   []string
	}{
		{"", []string{"alpha", "beta"}, nil},
		{"alpha", []string{"alpha"}, []string{"beta"}},
	} {
		t.Run(endpointName(tc.endpoint), func(t *testing.T) {
			th := routedHub(t)
			s := sessionOn(t, th.h, tc.endpoint, `{}`)
			bystander := sessionOn(t, th.h, tc.endpoint, `{}`)
			sub := &jsonrpc.Message{ID: jsonrpc.IntID(1), Method: "resources/subscribe", Params: json.RawMessage(`{"uri":"file:///a.txt"}`)}
			if _, err := th.h.router.route(context.Background(), s, sub, nil); err != nil {
				t.Fatalf("subscribe: %v", err)
			}
			th.h.sessions.end(s)
			if th.h.sessions.get(s.id) != nil {
				t.Error("the ended session is still in the set")
			}
			if !ended(s) {
				t.Error("the ended session's context is not done")
			}
			if ended(bystander) || th.h.sessions.get(bystander.id) == nil {
				t.Error("another session of the endpoint ended too")
			}
			for _, name := range tc.told {
				if got := closedSessions(th.fakes[name]); !slices.Equal(got, []string{s.id}) {
					t.Errorf("%s heard SessionClosed for %q, want just %s", name, got, s.id)
				}
			}
			for _, name := range tc.untold {
				if got := closedSessions(th.fakes[name]); len(got) != 0 {
					t.Errorf("%s, not an upstream of %s, heard SessionClosed for %q", name, endpointName(tc.endpoint), got)
				}
			}
			if n := th.fakes["alpha"].callCount("resources/unsubscribe"); n != 1 {
				t.Errorf("alpha got %d resources/unsubscribe, want 1 for the released subscription", n)
			}
		})
	}
}

// TestSessionsEndEndpoint ends the sessions of one server's endpoint only.
func TestSessionsEndEndpoint(t *testing.T) {
	th := startHub(t, twoServers, nil)
	merged := sessionOn(t, th.h, "", `{}`)
	a1, a2 := sessionOn(t, th.h, "alpha", `{}`), sessionOn(t, th.h, "alpha", `{}`)
	b := sessionOn(t, th.h, "beta", `{}`)
	th.h.sessions.endEndpoint("alpha")
	for name, s := range map[string]*session{"a1": a1, "a2": a2} {
		if th.h.sessions.get(s.id) != nil || !ended(s) {
			t.Errorf("%s of /alpha/mcp was not ended", name)
		}
	}
	for name, s := range map[string]*session{"merged": merged, "beta": b} {
		if th.h.sessions.get(s.id) == nil || ended(s) {
			t.Errorf("the %s session was ended with /alpha/mcp", name)
		}
	}
	got := closedSessions(th.fakes["alpha"])
	slices.Sort(got)
	want := []string{a1.id, a2.id}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("alpha heard SessionClosed for %q, want %q", got, want)
	}
	if got := closedSessions(th.fakes["beta"]); len(got) != 0 {
		t.Errorf("beta heard SessionClosed for %q, want none", got)
	}
}

// TestSessionsSweep ends a session idle past session_ttl, but keeps one
// that is busy (a request in flight or a stream attached) and one seen
// recently.
func TestSessionsSweep(t *testing.T) {
	th := startHub(t, "[hub]\nsession_ttl = \"1h\"\n"+twoServers, nil)
	long := time.Now().Add(-2 * time.Hour).UnixNano()
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, s *session)
		kept    bool
	}{
		{"idle", func(t *testing.T, s *session) { s.lastSeen.Store(long) }, false},
		{"idle with a detached stream", func(t *testing.T, s *session) {
			if _, err := s.openStream(false); err != nil {
				t.Fatal(err)
			}
			s.lastSeen.Store(long)
		}, false},
		{"idle with a request in flight", func(t *testing.T, s *session) {
			if _, err := s.track(json.RawMessage(`1`), func(error) {}); err != nil {
				t.Fatal(err)
			}
			s.lastSeen.Store(long)
		}, true},
		{"idle with an attached stream", func(t *testing.T, s *session) {
			st, err := s.openStream(false)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.attach(-1); err != nil {
				t.Fatal(err)
			}
			s.lastSeen.Store(long)
		}, true},
		{"seen recently", func(t *testing.T, s *session) {
			s.lastSeen.Store(time.Now().Add(-59 * time.Minute).UnixNano())
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sessionOn(t, th.h, "", `{}`)
			tc.prepare(t, s)
			th.h.sessions.sweep()
			if kept := th.h.sessions.get(s.id) != nil; kept != tc.kept {
				t.Errorf("after a sweep the session is kept = %v, want %v", kept, tc.kept)
			}
			if ended(s) == tc.kept {
				t.Errorf("after a sweep the session's context is done = %v, want %v", ended(s), !tc.kept)
			}
			if told := slices.Contains(closedSessions(th.fakes["alpha"]), s.id); told == tc.kept {
				t.Errorf("alpha heard SessionClosed = %v, want %v", told, !tc.kept)
			}
		})
	}
}

// TestSessionsLegacyIDServed: a session restored from an older mcphub keeps
// its base32 id and is served, while an unknown id of that form is
// malformed now.
func TestSessionsLegacyIDServed(t *testing.T) {
	th := startHub(t, twoServers, nil)
	s := newSession(th.h.ctx, "", "2025-11-25", nil, nil)
	s.id = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	if err := th.h.sessions.add(s); err != nil {
		t.Fatal(err)
	}
	const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	if r := th.send(http.MethodPost, "/mcp", ping, "Mcp-Session-Id", s.id); r.status != http.StatusOK {
		t.Errorf("the restored session: %d %s, want 200", r.status, r.body)
	}
	if r := th.send(http.MethodPost, "/mcp", ping, "Mcp-Session-Id", "ZYXWVUTSRQPONMLKJIHGFEDCBA"); r.status != http.StatusBadRequest {
		t.Errorf("an unknown id of the old form: %d %s, want 400", r.status, r.body)
	}
}

// TestSessionsRequestAfterEnd: a request that found its session just before
// the session ended (deleted, or evicted for room) is answered 404, as the
// spec asks for an ended session, not with a JSON-RPC error.
func TestSessionsRequestAfterEnd(t *testing.T) {
	th := startHub(t, twoServers, nil)
	c := th.connect("/mcp", "2025-11-25", `{}`)
	s := c.session()
	th.h.sessions.end(s)
	rec := httptest.NewRecorder()
	req := th.request(context.Background(), http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":4,"method":"ping"}`, "Mcp-Session-Id", c.sid)
	m, err := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":4,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	th.h.sessions.request(rec, req, s, m, noLimit)
	if rec.Code != http.StatusNotFound {
		t.Errorf("a request of a session that ended meanwhile: %d %s, want 404", rec.Code, rec.Body)
	}
}
