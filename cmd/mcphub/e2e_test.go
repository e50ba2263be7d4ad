package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// twoUpstreams starts a hub over a stdio fake "a" (this binary re-executed)
// and an in-process Streamable HTTP fake "b".
func twoUpstreams(t *testing.T, extra ...string) *inprocHub {
	servers := childServer(t, "a", childOpts{}) + remoteServer("b", startUpstream(t, "b", upstreamOpts{}).url, "")
	return startInproc(t, servers+strings.Join(extra, ""), hubConfig{})
}

// TestE2ENamespacedTools: both upstreams' tools appear under their prefixes
// on /mcp, and each call reaches the server that owns the name.
func TestE2ENamespacedTools(t *testing.T) {
	f := twoUpstreams(t)
	cs := f.connect("/mcp", nil)
	names, err := cs.tools()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"a__echo", "b__echo", "a__progress", "b__progress", "a__block", "b__block", "a__sample", "b__sample", "a__crash"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}
	for _, n := range names {
		if !strings.HasPrefix(n, "a__") && !strings.HasPrefix(n, "b__") {
			t.Errorf("unprefixed tool %q on /mcp", n)
		}
	}
	if slices.Contains(names, "b__crash") {
		t.Errorf("b__crash listed, but only the stdio fake has crash")
	}
	if got := cs.mustCall(t, "a__echo", map[string]any{"text": "hi"}); got != "a:hi" {
		t.Errorf("a__echo = %q, want a:hi", got)
	}
	if got := cs.mustCall(t, "b__echo", map[string]any{"text": "hi"}); got != "b:hi" {
		t.Errorf("b__echo = %q, want b:hi", got)
	}
	// The stdio call reached the very process /readyz reports.
	st := cs.state(t, "a__state")
	if pid := f.server("a").PID; st.PID != pid || pid == 0 {
		t.Errorf("a__state ran in pid %d, /readyz says %d", st.PID, pid)
	}
	if _, err := cs.call("c__echo", map[string]any{"text": "x"}); err == nil {
		t.Errorf("an unknown prefix must fail")
	}
}

// TestE2EConcurrentSessionsCollidingIDs: four sessions call at once from
// several goroutines each. Their request ids collide (every SDK client counts
// 1, 2, 3…) and so do their progress tokens (the same values in every
// session); each session must get exactly its own progress and results.
func TestE2EConcurrentSessionsCollidingIDs(t *testing.T) {
	f := twoUpstreams(t)
	const sessions, workers, rounds, steps = 4, 3, 2, 5

	type note struct{ token, msg string }
	// Worker 0 uses a number, the others strings: both kinds must come
	// back exactly as sent.
	token := func(w int) any {
		if w == 0 {
			return 7
		}
		return fmt.Sprintf("tok-%d", w)
	}
	got := make([][]note, sessions)
	var mu sync.Mutex
	css := make([]*sdkSession, sessions)
	for s := range sessions {
		css[s] = f.connect("/mcp", &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				mu.Lock()
				got[s] = append(got[s], note{fmt.Sprint(req.Params.ProgressToken), req.Params.Message})
				mu.Unlock()
			},
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, sessions*workers*rounds)
	for s := range sessions {
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := range rounds {
					server := []string{"a", "b"}[(s+w+r)%2]
					tag := fmt.Sprintf("s%d-w%d-r%d", s, w, r)
					p := &mcp.CallToolParams{Name: server + "__progress",
						Arguments: map[string]any{"tag": tag, "n": steps, "delayMs": 3}}
					p.SetProgressToken(token(w)) // the same in every session
					out, err := css[s].callParams(ctx, p)
					if err != nil {
						errs <- fmt.Errorf("session %d %s: %v", s, tag, err)
					} else if out != "done:"+tag {
						errs <- fmt.Errorf("session %d %s got result %q", s, tag, out)
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// Each session's expected notifications: its own tags, each step once,
	// each with the token that call used.
	want := make([][]note, sessions)
	for s := range sessions {
		for w := range workers {
			for r := range rounds {
				for i := range steps {
					want[s] = append(want[s], note{fmt.Sprint(token(w)), fmt.Sprintf("s%d-w%d-r%d/%d", s, w, r, i)})
				}
			}
		}
	}
	total := func(s int) int {
		mu.Lock()
		defer mu.Unlock()
		return len(got[s])
	}
	for s := range sessions {
		poll(5*time.Second, func() bool { return total(s) >= len(want[s]) })
	}
	// Late strays would show up now: none may come in a moment past the
	// calls.
	holds(100*time.Millisecond, func() bool {
		for s := range sessions {
			if total(s) > len(want[s]) {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	for s := range sessions {
		g := slices.Clone(got[s])
		less := func(a, b note) int { return strings.Compare(a.msg+"\x00"+a.token, b.msg+"\x00"+b.token) }
		slices.SortFunc(g, less)
		slices.SortFunc(want[s], less)
		if !slices.Equal(g, want[s]) {
			t.Errorf("session %d: got %d progress notifications, want %d\n got: %v\nwant: %v", s, len(g), len(want[s]), g, want[s])
		}
	}
}

// TestE2ECancellationReachesOnlyItsCall: two sessions have the same blocking
// call in flight (same downstream request id); cancelling one cancels only
// its own upstream request, and the other completes when released.
func TestE2ECancellationReachesOnlyItsCall(t *testing.T) {
	f := twoUpstreams(t)
	for _, server := range []string{"a", "b"} {
		t.Run(server, func(t *testing.T) {
			s1, s2, obs := f.connect("/mcp", nil), f.connect("/mcp", nil), f.connect("/mcp", nil)
			tag1, tag2 := "cancel-me-"+server, "keep-me-"+server
			ctx1, cancel1 := context.WithCancel(context.Background())
			defer cancel1()
			ctx2, cancel2 := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel2()
			type outcome struct {
				out string
				err error
			}
			done1, done2 := make(chan outcome, 1), make(chan outcome, 1)
			go func() {
				out, err := s1.callText(ctx1, server+"__block", map[string]any{"tag": tag1})
				done1 <- outcome{out, err}
			}()
			go func() {
				out, err := s2.callText(ctx2, server+"__block", map[string]any{"tag": tag2})
				done2 <- outcome{out, err}
			}()
			var st fakeState
			if !poll(10*time.Second, func() bool {
				st = obs.state(t, server+"__state")
				return slices.Contains(st.Inflight, tag1) && slices.Contains(st.Inflight, tag2)
			}) {
				t.Fatalf("both calls never reached the upstream: %+v", st)
			}
			cancel1()
			select {
			case o := <-done1:
				if !errors.Is(o.err, context.Canceled) {
					t.Errorf("cancelled call returned %q, %v", o.out, o.err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the cancelled call did not return")
			}
			if !poll(5*time.Second, func() bool {
				st = obs.state(t, server+"__state")
				return slices.Contains(st.Cancelled, tag1)
			}) {
				t.Fatalf("upstream never saw the cancellation of %s: %+v", tag1, st)
			}
			if slices.Contains(st.Cancelled, tag2) || !slices.Contains(st.Inflight, tag2) {
				t.Fatalf("the other session's call was disturbed: %+v", st)
			}
			select {
			case o := <-done2:
				t.Fatalf("the other call ended before it was released: %q %v", o.out, o.err)
			default:
			}
			obs.mustCall(t, server+"__release", map[string]any{"tag": tag2})
			select {
			case o := <-done2:
				if o.err != nil || o.out != "released:"+tag2 {
					t.Errorf("released call returned %q, %v", o.out, o.err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the released call did not return")
			}
			if st = obs.state(t, server+"__state"); !slices.Equal(st.Cancelled, []string{tag1}) {
				t.Errorf("upstream cancellations = %v, want only %s", st.Cancelled, tag1)
			}
		})
	}
}

// barrier lets n sampling handlers wait for each other, so the calls that
// caused them are surely in flight together; it gives up after a while so a
// misrouted request fails the test instead of hanging it.
type barrier struct {
	mu sync.Mutex
	n  int
	ch chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{n: n, ch: make(chan struct{})} }

func (b *barrier) wait() {
	b.mu.Lock()
	b.n--
	if b.n == 0 {
		close(b.ch)
	}
	b.mu.Unlock()
	select {
	case <-b.ch:
	case <-time.After(3 * time.Second):
	}
}

// TestE2ESamplingRoutedToCaller: a sampling request an upstream sends while
// handling a call goes to the session that made the call.
func TestE2ESamplingRoutedToCaller(t *testing.T) {
	f := twoUpstreams(t, childServer(t, "c", childOpts{lines: `share = "session"`}))
	cases := []struct {
		name, server string
		concurrent   bool
	}{
		// A shared stdio connection cannot tell which call a server request
		// belongs to; with one call in flight it is exact.
		{"stdio-shared-one-at-a-time", "a", false},
		// Concurrent calls of two sessions on a shared stdio connection:
		// the bridge cannot tell which call a sampling request belongs to,
		// so it refuses rather than guess (bridge/link.go, owner). No
		// session may ever see the other's prompt.
		{"stdio-shared-concurrent", "a", true},
		// Streamable HTTP carries the request on the call's own stream.
		{"http-shared-concurrent", "b", true},
		{"http-shared-one-at-a-time", "b", false},
		// share = "session": one process per session.
		{"stdio-per-session-concurrent", "c", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var bar *barrier
			if tc.concurrent {
				bar = newBarrier(2)
			}
			sessions := make([]*sdkSession, 2)
			var calls [2]atomic.Int32
			for i := range sessions {
				label := fmt.Sprintf("from-s%d", i+1)
				sessions[i] = f.connect("/mcp", &mcp.ClientOptions{
					CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
						calls[i].Add(1)
						if bar != nil {
							bar.wait()
						}
						prompt := ""
						if len(req.Params.Messages) > 0 {
							if txt, ok := req.Params.Messages[0].Content.(*mcp.TextContent); ok {
								prompt = txt.Text
							}
						}
						return &mcp.CreateMessageResult{Role: "assistant", Model: "test",
							Content: &mcp.TextContent{Text: label + "|" + prompt}}, nil
					},
				})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			results := make([]string, 2)
			errs := make([]error, 2)
			run := func(i int) {
				results[i], errs[i] = sessions[i].callText(ctx, tc.server+"__sample",
					map[string]any{"prompt": fmt.Sprintf("prompt-%d", i+1)})
			}
			if tc.concurrent {
				var wg sync.WaitGroup
				for i := range sessions {
					wg.Add(1)
					go func() { defer wg.Done(); run(i) }()
				}
				wg.Wait()
			} else {
				for i := range sessions {
					run(i)
				}
			}
			for i := range sessions {
				want := fmt.Sprintf("sampled:from-s%d|prompt-%d", i+1, i+1)
				if tc.name == "stdio-shared-concurrent" {
					refused := errs[i] != nil && strings.Contains(errs[i].Error(), "cannot tell which client")
					if !refused && (errs[i] != nil || results[i] != want) {
						t.Errorf("session %d: got %q, %v; want %q or a refusal, never another session's answer", i+1, results[i], errs[i], want)
					}
					if n := calls[i].Load(); n > 1 {
						t.Errorf("session %d's sampling handler ran %d times", i+1, n)
					}
					continue
				}
				if errs[i] != nil || results[i] != want {
					t.Errorf("session %d: got %q, %v; want %q", i+1, results[i], errs[i], want)
				}
				if n := calls[i].Load(); n != 1 {
					t.Errorf("session %d's sampling handler ran %d times, want 1", i+1, n)
				}
			}
			if tc.server == "c" {
				for _, cs := range sessions {
					f.addPID(cs.state(t, "c__state").PID)
				}
			}
		})
	}
}

// TestE2EListChangedCoalesced: two quick changes of an upstream's tool list
// give every session that sees that server exactly one
// notifications/tools/list_changed, and the new tools are listed.
func TestE2EListChangedCoalesced(t *testing.T) {
	f := twoUpstreams(t)
	paths := []string{"/mcp", "/mcp", "/a/mcp", "/b/mcp"}
	want := []int64{1, 1, 1, 0} // b's view did not change
	css := make([]*sdkSession, len(paths))
	for i, p := range paths {
		css[i] = f.connect(p, nil)
	}
	total := func() int64 {
		var n int64
		for _, cs := range css {
			n += cs.changed.Load()
		}
		return n
	}
	// The servers connected just before these sessions started; the
	// list_changed of that startup window may still reach them (harmless:
	// they re-list), once at most: the sessions started after the servers
	// connected, so only the last coalescing window can reach them. Let it
	// pass, then count from there.
	steady(600*time.Millisecond, 5*time.Second, total)
	base := make([]int64, len(paths))
	for i, cs := range css {
		base[i] = cs.changed.Load()
		if base[i] > 1 {
			t.Errorf("%s got %d tools/list_changed before any change, want at most the startup one", paths[i], base[i])
		}
	}
	delta := func(i int) int64 { return css[i].changed.Load() - base[i] }
	// Two separate upstream list_changed (the SDK debounces 10 ms), both
	// inside the hub's 200 ms window.
	css[0].mustCall(t, "a__mutate", map[string]any{"add": []string{"x1", "x2"}, "gapMs": 50})
	first := time.Now()
	listed := func(cs *sdkSession, names ...string) bool {
		have, err := cs.tools()
		if err != nil {
			return false
		}
		for _, n := range names {
			if !slices.Contains(have, n) {
				return false
			}
		}
		return true
	}
	if !poll(5*time.Second, func() bool { return delta(0) > 0 && delta(1) > 0 && delta(2) > 0 }) {
		t.Fatalf("list_changed not received: %d %d %d since the change", delta(0), delta(1), delta(2))
	}
	if !listed(css[1], "a__x1", "a__x2") || !listed(css[2], "x1", "x2") {
		t.Errorf("tools/list lacks the new tools after list_changed")
	}
	// Anything else would come within a window; watch well past it.
	holds(time.Until(first.Add(800*time.Millisecond)), func() bool {
		for i := range css {
			if delta(i) > want[i] {
				return false
			}
		}
		return true
	})
	for i, p := range paths {
		if n := delta(i); n != want[i] {
			t.Errorf("session %d on %s got %d tools/list_changed for the change, want %d", i, p, n, want[i])
		}
	}
}
