package hub

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// flushNow ends the list_changed window at once: the pending timer is
// stopped and its flush runs on the test's goroutine, so every notification
// it sends has been delivered when it returns.
func flushNow(f *fanout) {
	f.mu.Lock()
	if f.timer != nil {
		f.timer.Stop()
	}
	f.mu.Unlock()
	f.flush()
}

// windowOpen reports whether list_changed notifications are pending.
func windowOpen(f *fanout) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.timer != nil || len(f.pending) > 0
}

// fanoutHub is a hub whose list_changed window never ends by itself within
// a test, so the test ends it with flushNow.
func fanoutHub(t *testing.T) *testHub {
	t.Helper()
	return startHub(t, twoServers, map[string]*fakeUpstream{
		"alpha": newFake("alpha").setList("tools/list", toolItems("a1")),
		"beta":  newFake("beta").setList("tools/list", toolItems("b1")),
	}, func(o *Options) { o.ListChangedDelay = time.Hour })
}

// TestFanoutListChangedCoalesced makes several list changes within one
// window: every session of a changed endpoint gets one notification per
// kind, sessions of other endpoints and sessions created after the change
// get none, and a rebuild that changes nothing sends nothing.
func TestFanoutListChangedCoalesced(t *testing.T) {
	const (
		tools     = "notifications/tools/list_changed"
		prompts   = "notifications/prompts/list_changed"
		resources = "notifications/resources/list_changed"
	)
	for _, tc := range []struct {
		name   string
		change func(alpha, beta *fakeUpstream)
		want   map[string][]string // session → the notifications it gets
	}{
		{"two tools changes", func(alpha, beta *fakeUpstream) {
			alpha.setList("tools/list", toolItems("a1", "a2")).changed()
			alpha.setList("tools/list", toolItems("a1", "a2", "a3")).changed()
		}, map[string][]string{"merged": {tools}, "alpha": {tools}}},
		{"tools and prompts", func(alpha, beta *fakeUpstream) {
			alpha.setList("prompts/list", items(`{"name":"p"}`)).changed()
			alpha.setList("tools/list", toolItems("a2")).changed()
			alpha.setList("prompts/list", items(`{"name":"q"}`)).changed()
		}, map[string][]string{"merged": {prompts, tools}, "alpha": {prompts, tools}}},
		{"resources and templates are one kind", func(alpha, beta *fakeUpstream) {
			beta.setList("resources/list", items(`{"uri":"x://1","name":"x"}`)).changed()
			beta.setList("resources/templates/list", items(`{"uriTemplate":"x://{id}","name":"t"}`)).changed()
		}, map[string][]string{"merged": {resources}, "beta": {resources}}},
		{"both servers", func(alpha, beta *fakeUpstream) {
			alpha.setList("tools/list", toolItems("a2")).changed()
			beta.setList("tools/list", toolItems("b2")).changed()
		}, map[string][]string{"merged": {tools}, "alpha": {tools}, "beta": {tools}}},
		{"a change and its undoing", func(alpha, beta *fakeUpstream) {
			alpha.setList("tools/list", toolItems("a1", "a2")).changed()
			alpha.setList("tools/list", toolItems("a1")).changed()
		}, map[string][]string{"merged": {tools}, "alpha": {tools}}},
		{"nothing changed", func(alpha, beta *fakeUpstream) {
			alpha.changed()
			beta.changed()
		}, map[string][]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := fanoutHub(t)
			sessions := map[string]*session{
				"merged": sessionOn(t, th.h, "", `{}`),
				"alpha":  sessionOn(t, th.h, "alpha", `{}`),
				"beta":   sessionOn(t, th.h, "beta", `{}`),
			}
			tc.change(th.fakes["alpha"], th.fakes["beta"])
			if open := windowOpen(th.h.fanout); open != (len(tc.want) > 0) {
				t.Errorf("a window is open = %v after the changes, want %v", open, len(tc.want) > 0)
			}
			// A session that starts after the change sees the new lists
			// in its first list call.
			sessions["late merged"] = sessionOn(t, th.h, "", `{}`)
			sessions["late alpha"] = sessionOn(t, th.h, "alpha", `{}`)
			sessions["late beta"] = sessionOn(t, th.h, "beta", `{}`)
			flushNow(th.h.fanout)
			for name, s := range sessions {
				want := tc.want[name]
				if want == nil {
					want = []string{}
				}
				if got := queuedMethods(t, s); !slices.Equal(got, want) {
					t.Errorf("%s got %q, want %q", name, got, want)
				}
			}
			if windowOpen(th.h.fanout) {
				t.Error("the window is still open after its flush")
			}
		})
	}
}

// TestFanoutWindowEnds: without anyone flushing it, the window ends by
// itself after ListChangedDelay and delivers what it gathered.
func TestFanoutWindowEnds(t *testing.T) {
	th := startHub(t, twoServers, nil, func(o *Options) { o.ListChangedDelay = 20 * time.Millisecond })
	s := sessionOn(t, th.h, "alpha", `{}`)
	th.fakes["alpha"].setList("tools/list", toolItems("new")).changed()
	eventually(t, "list_changed after the window", func() bool {
		return slices.Equal(queuedMethods(t, s), []string{"notifications/tools/list_changed"})
	})
	eventually(t, "the window closes", func() bool { return !windowOpen(th.h.fanout) })
}

// TestFanoutNotifications routes notifications that belong to no call:
// resources/updated to subscribed sessions only, notifications/message by
// each session's level, list_changed from an upstream to nobody (the hub
// sends its own), anything else to the server's own endpoint only; a
// per-session connection's notification reaches that session alone.
func TestFanoutNotifications(t *testing.T) {
	th := fanoutHub(t)
	byName := map[string]*session{
		"merged":       sessionOn(t, th.h, "", `{}`),      // level unset (info), subscribed
		"merged error": sessionOn(t, th.h, "", `{}`),      // level error, not subscribed
		"alpha":        sessionOn(t, th.h, "alpha", `{}`), // level debug, subscribed
		"alpha plain":  sessionOn(t, th.h, "alpha", `{}`), // level unset, not subscribed
		"beta":         sessionOn(t, th.h, "beta", `{}`),  // level debug, subscribed
	}
	set := func(name, level string, subscribed bool) {
		s := byName[name]
		s.mu.Lock()
		s.logLevel = level
		if subscribed {
			s.subs["file:///a.txt"] = struct{}{}
		}
		s.mu.Unlock()
	}
	set("merged", "", true)
	set("merged error", "error", false)
	set("alpha", "debug", true)
	set("beta", "debug", true)
	note := func(method, params string) *jsonrpc.Message {
		return jsonrpc.NewNotification(method, json.RawMessage(params))
	}
	updated := note("notifications/resources/updated", `{"uri":"file:///a.txt"}`)
	logAt := func(level string) *jsonrpc.Message {
		return note("notifications/message", `{"level":"`+level+`","data":"x"}`)
	}
	for _, tc := range []struct {
		name    string
		server  string
		session string // the per-session connection's session, by name
		msg     *jsonrpc.Message
		want    []string
	}{
		{"updated to subscribers", "alpha", "", updated, []string{"alpha", "merged"}},
		{"updated for another uri", "alpha", "", note("notifications/resources/updated", `{"uri":"file:///b.txt"}`), nil},
		{"updated from beta", "beta", "", updated, []string{"beta", "merged"}},
		{"log at warning", "alpha", "", logAt("warning"), []string{"alpha", "alpha plain", "merged"}},
		{"log at info", "alpha", "", logAt("info"), []string{"alpha", "alpha plain", "merged"}},
		{"log at debug", "alpha", "", logAt("debug"), []string{"alpha"}},
		{"log at error", "alpha", "", logAt("error"), []string{"alpha", "alpha plain", "merged", "merged error"}},
		{"log at emergency from beta", "beta", "", logAt("emergency"), []string{"beta", "merged", "merged error"}},
		{"log at an unknown level", "alpha", "", logAt("verbose"), []string{"alpha", "alpha plain", "merged", "merged error"}},
		{"upstream tools list_changed", "alpha", "", note("notifications/tools/list_changed", `{}`), nil},
		{"upstream resources list_changed", "beta", "", note("notifications/resources/list_changed", `{}`), nil},
		{"other notification", "alpha", "", note("notifications/custom", `{"a":1}`), []string{"alpha", "alpha plain"}},
		{"other notification from beta", "beta", "", note("notifications/custom", `{}`), []string{"beta"}},
		{"per-session log", "alpha", "alpha plain", logAt("error"), []string{"alpha plain"}},
		{"per-session updated", "alpha", "merged", updated, []string{"merged"}},
		{"per-session updated, not subscribed", "alpha", "merged error", updated, nil},
		{"per-session other notification of /mcp", "alpha", "merged", note("notifications/custom", `{}`), nil},
		{"per-session for an ended session", "alpha", "gone", logAt("error"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sid := freshStart(byName, tc.session)
			th.h.fanout.notification(tc.server, sid, tc.msg)
			var got []string
			for name, s := range byName {
				switch q := queuedMethods(t, s); {
				case len(q) == 1 && q[0] == tc.msg.Method:
					got = append(got, name)
				case len(q) > 0:
					t.Errorf("%s got %q", name, q)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("delivered to %q, want %q", got, tc.want)
			}
		})
	}
}

// TestFanoutRequests routes server-to-client requests that belong to no
// call: to the most recently active session that sees the server and
// declared the capability (or to the per-session connection's own session),
// and with no such session answers -32601.
func TestFanoutRequests(t *testing.T) {
	th := fanoutHub(t)
	byName := map[string]*session{
		"merged old":  sessionOn(t, th.h, "", `{"sampling":{}}`),
		"merged new":  sessionOn(t, th.h, "", `{"sampling":{},"roots":{}}`),
		"alpha roots": sessionOn(t, th.h, "alpha", `{"roots":{"listChanged":true}}`),
		"beta elicit": sessionOn(t, th.h, "beta", `{"elicitation":{}}`),
	}
	now := time.Now()
	for name, age := range map[string]time.Duration{"merged old": 4 * time.Second, "merged new": 3 * time.Second,
		"alpha roots": 2 * time.Second, "beta elicit": time.Second} {
		byName[name].lastSeen.Store(now.Add(-age).UnixNano())
	}
	for _, tc := range []struct {
		name    string
		server  string
		session string
		method  string
		want    string // the session that must answer; "" for none
	}{
		{"sampling: the newer of two", "alpha", "", "sampling/createMessage", "merged new"},
		{"roots: the server's own session is newer", "alpha", "", "roots/list", "alpha roots"},
		{"roots from beta: only /mcp sees beta", "beta", "", "roots/list", "merged new"},
		{"elicitation from beta", "beta", "", "elicitation/create", "beta elicit"},
		{"elicitation from alpha: nobody who sees alpha declared it", "alpha", "", "elicitation/create", ""},
		{"ping: any session, the newest", "beta", "", "ping", "beta elicit"},
		{"an undeclarable method", "alpha", "", "tools/call", ""},
		{"per-session: its own session, though older", "alpha", "merged old", "sampling/createMessage", "merged old"},
		{"per-session: its own session lacks the capability", "alpha", "merged old", "roots/list", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sid := freshStart(byName, tc.session)
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			type answer struct {
				res json.RawMessage
				err error
			}
			done := make(chan answer, 1)
			go func() {
				res, err := th.h.fanout.request(ctx, tc.server, sid, tc.method, json.RawMessage(`{}`))
				done <- answer{res, err}
			}()
			if tc.want == "" {
				a := <-done
				var rpcErr *jsonrpc.Error
				if !errors.As(a.err, &rpcErr) || rpcErr.Code != jsonrpc.CodeMethodNotFound ||
					!strings.Contains(rpcErr.Message, "no client connected to mcphub can answer "+tc.method) {
					t.Errorf("result %s, err %v; want -32601 saying no client can answer", a.res, a.err)
				}
				for name, s := range byName {
					if q := queuedMethods(t, s); len(q) != 0 {
						t.Errorf("%s was sent %q", name, q)
					}
				}
				return
			}
			s := byName[tc.want]
			var req *jsonrpc.Message
			eventually(t, "the request reaches "+tc.want, func() bool {
				s.mu.Lock()
				defer s.mu.Unlock()
				if len(s.queue) == 0 {
					return false
				}
				m, err := jsonrpc.Decode(s.queue[0])
				req = m
				return err == nil
			})
			if req.Method != tc.method || !req.IsRequest() {
				t.Fatalf("%s was sent %s (request %v), want the request %s", tc.want, req.Method, req.IsRequest(), tc.method)
			}
			for name, other := range byName {
				if other != s && len(queuedMethods(t, other)) != 0 {
					t.Errorf("%s was sent %q as well", name, queuedMethods(t, other))
				}
			}
			if !s.reply(&jsonrpc.Message{ID: req.ID, Result: json.RawMessage(`{"answered":true}`)}) {
				t.Fatal("the session had no request waiting for the reply")
			}
			if a := <-done; a.err != nil || string(a.res) != `{"answered":true}` {
				t.Errorf("result %s, err %v; want the session's answer", a.res, a.err)
			}
		})
	}
}

// TestFanoutApplyLevels: each upstream is told the lowest level any session
// wants (info for a session that never set one), once per change, and
// nothing while no session exists.
func TestFanoutApplyLevels(t *testing.T) {
	th := fanoutHub(t)
	levels := func(f *fakeUpstream) []string {
		f.mu.Lock()
		defer f.mu.Unlock()
		return slices.Clone(f.levels)
	}
	setLevel := func(s *session, level string) {
		s.mu.Lock()
		s.logLevel = level
		s.mu.Unlock()
	}
	var first, second *session
	for _, step := range []struct {
		name string
		do   func()
		want []string // the levels each upstream has been told so far
	}{
		{"no session", func() { th.h.fanout.applyLevels() }, []string{}},
		{"a session at the default", func() { first = sessionOn(t, th.h, "", `{}`) }, []string{"info"}},
		{"a second session at the default", func() { second = sessionOn(t, th.h, "alpha", `{}`) }, []string{"info"}},
		{"one session lowers it", func() { setLevel(first, "debug"); th.h.fanout.applyLevels() }, []string{"info", "debug"}},
		{"applied again", func() { th.h.fanout.applyLevels() }, []string{"info", "debug"}},
		{"a session above the lowest", func() { setLevel(second, "error"); th.h.fanout.applyLevels() }, []string{"info", "debug"}},
		{"the lowest raises it", func() { setLevel(first, "warning"); th.h.fanout.applyLevels() }, []string{"info", "debug", "warning"}},
		{"the lowest session ends", func() { th.h.sessions.end(first) }, []string{"info", "debug", "warning", "error"}},
		{"the last session ends", func() { th.h.sessions.end(second) }, []string{"info", "debug", "warning", "error"}},
	} {
		step.do()
		for _, name := range []string{"alpha", "beta"} {
			if got := levels(th.fakes[name]); !slices.Equal(got, step.want) {
				t.Errorf("%s: %s was told %q, want %q", step.name, name, got, step.want)
			}
		}
	}
}

// TestFanoutLevelReachesAReplacedUpstream restarts a server: the fresh
// upstream that takes over is told the level the sessions want, as the one
// it replaces was (levels are remembered per upstream, not per name).
func TestFanoutLevelReachesAReplacedUpstream(t *testing.T) {
	ups := startUpstreamLog(t, nil)
	h := ups.h
	s := sessionOn(t, h, "", `{}`)
	s.mu.Lock()
	s.logLevel = "debug"
	s.mu.Unlock()
	h.fanout.applyLevels()
	if err := h.Restart("alpha"); err != nil {
		t.Fatal(err)
	}
	told := func(f *fakeUpstream) []string {
		f.mu.Lock()
		defer f.mu.Unlock()
		return slices.Clone(f.levels)
	}
	eventually(t, "the restarted alpha is told the sessions' level", func() bool {
		fresh := ups.nth(2)
		return fresh != nil && slices.Equal(told(fresh), []string{"debug"})
	})
}

// freshStart empties every session's queue and returns the id of the named
// session, or the name itself for one that does not exist (a per-session id
// of an ended session).
func freshStart(byName map[string]*session, name string) string {
	for _, s := range byName {
		clearQueue(s)
	}
	if s := byName[name]; s != nil {
		return s.id
	}
	return name
}
