package main

// Durable sessions, tested from outside: sessions, streams and every SSE
// event live in SQLite, so a client keeps its Mcp-Session-Id across a hub
// restart, even kill -9, and resumes a stream with GET + Last-Event-ID.
// A request in flight on a stdio upstream when the hub died is answered with
// an error on the resumed stream; one in flight on an HTTP upstream that
// supports resumption is finished by that upstream and its real result
// delivered. Replay never crosses streams.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// durKill9Case is one upstream of the kill -9 test.
type durKill9Case struct {
	servers  string         // the registry's [servers.slow] table
	tool     string         // the namespaced tool that streams progress
	args     map[string]any // its arguments: 200 notifications ~12 ms apart
	stdio    bool
	upstream *durUpstream // the in-process HTTP upstream, nil for stdio
}

const (
	durK9Total   = 200 // progress notifications the call sends
	durK9KillAt  = 60  // progress notifications seen before kill -9
	durK9ReqID   = 7
	durK9Token   = "k9-token"
	durK9DelayMs = 12
)

// TestKill9ResumesStdioCall: the upstream is a stdio Go SDK server (this
// test binary in fake-server mode; its "progress" tool sends n progress
// notifications delayMs apart). The call cannot survive the hub: the child
// dies with it (stdin EOF), and the restarted hub answers the resumed
// stream with a JSON-RPC error for the same request id, after the progress
// the client had not seen yet; nothing is duplicated.
func TestKill9ResumesStdioCall(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// GORACE keeps a -race child from sleeping a second on exit.
	servers := fmt.Sprintf("[servers.slow]\ncommand = %q\nenv = { %s = \"slow\", GORACE = \"atexit_sleep_ms=0\" }\nconnect_timeout = \"20s\"\n\n", exe, fakeEnv)
	durKill9(t, durKill9Case{
		servers: servers, tool: "slow__progress", stdio: true,
		args: map[string]any{"tag": "k9", "n": durK9Total, "delayMs": durK9DelayMs},
	})
}

// TestKill9ResumesHTTPCall: the upstream is a Go SDK Streamable HTTP server
// with an EventStore in the test process, so it outlives the hub and keeps
// running the tool. The restarted hub resumes its upstream session and the
// call's upstream stream; the client sees every progress notification
// 1..200 exactly once, in order, across its two connections, and the real
// result "done 200".
func TestKill9ResumesHTTPCall(t *testing.T) {
	u := durNewUpstream(t, true)
	durKill9(t, durKill9Case{
		servers: durRemoteTable("slow", u.url), tool: "slow__slow_progress", upstream: u,
		args: map[string]any{"n": durK9Total, "delay_ms": durK9DelayMs},
	})
}

func durKill9(t *testing.T, tc durKill9Case) {
	d := durNewHubDir(t, tc.servers)
	run1 := d.start()
	st := d.waitConnected(run1, "slow")
	childPID := st.PID
	if tc.stdio && childPID <= 0 {
		t.Fatalf("/readyz shows no PID for the stdio server: %+v", st)
	}

	c := durNewClient(t, "http://"+d.addr+"/mcp")
	c.initialize()
	oldSID := c.sid

	// The call, on its own SSE stream.
	resp, err := c.post(context.Background(), durRequest(durK9ReqID, "tools/call", durToolCall(tc.tool, tc.args, durK9Token)))
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		resp.Body.Close()
		t.Fatalf("tools/call: HTTP %d %q, want 200 text/event-stream", resp.StatusCode, ct)
	}
	s1 := durFollow(resp.Body)
	var first []durEvent
	seen := 0
	timeout := time.After(20 * time.Second)
	for seen < durK9KillAt {
		select {
		case ev, ok := <-s1.events:
			if !ok {
				t.Fatalf("the call's stream ended after %d progress notifications: %v", seen, s1.err)
			}
			first = append(first, ev)
			if _, ok := durAsProgress(ev.Msg); ok {
				seen++
			}
		case <-timeout:
			t.Fatalf("only %d progress notifications within 20 s", seen)
		}
	}

	// kill -9 mid-call. What was already on the wire still counts as
	// received; the connection then breaks.
	run1.kill9(t)
	for ev := range s1.events {
		first = append(first, ev)
	}
	s1.body.Close()
	lastID := ""
	for _, ev := range first {
		if ev.ID != "" {
			lastID = ev.ID
		}
	}
	t.Logf("first connection: %d events, last id %s (connection ended: %v)", len(first), lastID, s1.err)

	if tc.stdio {
		// The child sees stdin EOF when its parent dies.
		deadline := time.Now().Add(10 * time.Second)
		for {
			gone, how := durProcGone(childPID)
			if gone {
				t.Logf("stdio child %d died with the hub: %s", childPID, how)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("stdio child %d survived the hub's kill -9 by 10 s", childPID)
			}
			time.Sleep(durPollEvery)
		}
	}

	d.logStored("slow")
	// Same data directory, same port; the client keeps its old session id
	// and resumes the call's stream.
	d.start()
	s2 := c.resume(lastID, 20*time.Second)
	var second []durEvent
	var response *jsonrpc.Message
	timeout = time.After(20 * time.Second)
read:
	for {
		select {
		case ev, ok := <-s2.events:
			if !ok {
				break read
			}
			second = append(second, ev)
			if ev.Msg != nil && ev.Msg.IsResponse() {
				response = ev.Msg
			}
		case <-timeout:
			t.Fatalf("the resumed stream gave no end within 20 s after %d events (response: %v)", len(second), response != nil)
		}
	}
	s2.body.Close()
	if response == nil {
		t.Fatalf("the resumed stream ended without the response (%d events; %v)", len(second), s2.err)
	}

	// One stream, its events numbered without a gap or repeat across the
	// two connections, starting with the priming event.
	all := append(slices.Clone(first), second...)
	streamID, _ := durSplitID(t, all[0].ID)
	for i, ev := range all {
		sid, seq := durSplitID(t, ev.ID)
		if sid != streamID || seq != i {
			t.Errorf("event %d has id %s, want %s_%d", i, ev.ID, streamID, i)
		}
	}
	if all[0].Msg != nil {
		t.Errorf("the stream starts with %s, want a priming event", all[0].Msg.Encode())
	}
	if len(second) > 0 && second[0].ID == lastID {
		t.Errorf("the resumed stream repeated the Last-Event-ID event %s", lastID)
	}

	// Progress: the client's own token, values as the upstream sent them.
	var values []int
	for i, ev := range all {
		if ev.Msg == nil || ev.Msg.IsResponse() {
			if ev.Msg != nil && i != len(all)-1 {
				t.Errorf("the response is event %d of %d, not the last", i, len(all))
			}
			continue
		}
		p, ok := durAsProgress(ev.Msg)
		if !ok {
			t.Errorf("unexpected message on the call's stream: %s", ev.Msg.Encode())
			continue
		}
		if p.Token != durK9Token {
			t.Errorf("progress token %q reached the client, want its own %q", p.Token, durK9Token)
		}
		values = append(values, int(p.Progress))
	}
	if string(response.ID) != strconv.Itoa(durK9ReqID) {
		t.Errorf("response id %s, want %d", response.ID, durK9ReqID)
	}
	t.Logf("progress across the restart: %d notifications (%d before the kill), response %s", len(values), durCountProgress(first), durShort(response.Encode()))

	if tc.stdio {
		// A strictly increasing prefix 1..k with no duplicates, then an
		// error: the call died with the child.
		for i, v := range values {
			if v != i+1 {
				t.Errorf("progress #%d is %d, want %d (values %s)", i+1, v, i+1, durRanges(values))
				break
			}
		}
		if len(values) < durK9KillAt || len(values) >= durK9Total {
			t.Errorf("%d progress notifications, want a prefix of at least %d and fewer than %d", len(values), durK9KillAt, durK9Total)
		}
		if response.Error == nil {
			t.Errorf("the lost call was answered with a result, want a JSON-RPC error: %s", response.Encode())
		} else {
			t.Logf("lost call answered with error %d: %s", response.Error.Code, response.Error.Message)
		}
	} else {
		want := make([]int, durK9Total)
		for i := range want {
			want[i] = i + 1
		}
		if !slices.Equal(values, want) {
			t.Errorf("progress values across the restart are %s, want 1-%d exactly once in order", durRanges(values), durK9Total)
		}
		if response.Error != nil {
			t.Errorf("the resumed call failed: %s", response.Encode())
		} else if got := durResultText(response); got != "done "+strconv.Itoa(durK9Total) {
			t.Errorf("result %q, want %q", got, "done 200")
		}
		if n := tc.upstream.calls.Load(); n != 1 {
			t.Errorf("the upstream ran the tool %d times, want once (a resumed call must not be replayed)", n)
		}
	}

	// The old session still works for a new request, without initialize.
	if c.sid != oldSID {
		t.Fatalf("client session changed")
	}
	status, m := c.call(durK9ReqID+1, "tools/list", map[string]any{})
	if status != http.StatusOK || m.Error != nil {
		t.Fatalf("tools/list on the old session after the restart: HTTP %d %s", status, m.Encode())
	}
	if !strings.Contains(string(m.Result), `"`+tc.tool+`"`) {
		t.Errorf("tools/list after the restart lacks %s: %s", tc.tool, durShort(m.Result))
	}
}

// TestReplayNeverCrossesStreams: one session, two concurrent tool calls
// streaming progress on their POST streams and resource updates going to
// its GET stream. All three connections are cut midway and resumed, each
// with its own Last-Event-ID: each resumed stream replays only its own
// events (by id prefix and by content), without gap or repeat, and
// continues to its end.
func TestReplayNeverCrossesStreams(t *testing.T) {
	const (
		n       = 40 // events per stream
		delay   = 15 * time.Millisecond
		cutFrom = 10 // cut once every stream has this many messages
	)
	u := durNewUpstream(t, false)
	h := durStartHub(t, durRemoteTable("up", u.url), true)
	c := durNewClient(t, h.url)
	c.initialize()
	if status, m := c.call(2, "resources/subscribe", map[string]any{"uri": durFeedURI}); status != http.StatusOK || m.Error != nil {
		t.Fatalf("resources/subscribe: HTTP %d %s", status, m.Encode())
	}

	type leg struct {
		name  string
		reqID int    // 0 for the GET stream
		token string // progress token of a call
		s     *durStream
		got   []durEvent
	}
	legs := []*leg{{name: "GET"}, {name: "A", reqID: 10, token: "tok-A"}, {name: "B", reqID: 11, token: "tok-B"}}

	resp, err := c.get(context.Background(), "")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %v %v", err, resp)
	}
	legs[0].s = durFollow(resp.Body)
	// The standalone stream is attached once its priming event is out;
	// from then on updates go to it.
	select {
	case ev, ok := <-legs[0].s.events:
		if !ok || ev.Msg != nil {
			t.Fatalf("GET stream: want a priming event first, got %+v (%v)", ev, legs[0].s.err)
		}
		legs[0].got = append(legs[0].got, ev)
	case <-time.After(10 * time.Second):
		t.Fatal("GET stream: no priming event within 10 s")
	}
	for _, l := range legs[1:] {
		args := map[string]any{"n": n, "delay_ms": int(delay / time.Millisecond), "tag": l.name}
		resp, err := c.post(context.Background(), durRequest(l.reqID, "tools/call", durToolCall("up__slow_progress", args, l.token)))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("tools/call %s: %v %v", l.name, err, resp)
		}
		l.s = durFollow(resp.Body)
	}
	// Resource updates, numbered in _meta, belong to no request: the hub
	// routes them to the session's GET stream.
	var (
		wg      sync.WaitGroup
		updates atomic.Int64
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; i <= n; i++ {
			u.srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: durFeedURI, Meta: mcp.Meta{"n": i}})
			updates.Add(1)
			select {
			case <-time.After(delay):
			case <-u.stop:
				return
			}
		}
	}()
	t.Cleanup(wg.Wait)

	// Read all three until each has cutFrom messages, then cut all three.
	messages := func(evs []durEvent) int {
		k := 0
		for _, ev := range evs {
			if ev.Msg != nil {
				k++
			}
		}
		return k
	}
	deadline := time.After(15 * time.Second)
	for {
		ready := true
		for _, l := range legs {
			ready = ready && messages(l.got) >= cutFrom
		}
		if ready {
			break
		}
		select {
		case ev, ok := <-legs[0].s.events:
			if !ok {
				t.Fatalf("GET stream ended early: %v", legs[0].s.err)
			}
			legs[0].got = append(legs[0].got, ev)
		case ev, ok := <-legs[1].s.events:
			if !ok {
				t.Fatalf("stream A ended early: %v", legs[1].s.err)
			}
			legs[1].got = append(legs[1].got, ev)
		case ev, ok := <-legs[2].s.events:
			if !ok {
				t.Fatalf("stream B ended early: %v", legs[2].s.err)
			}
			legs[2].got = append(legs[2].got, ev)
		case <-deadline:
			t.Fatalf("streams did not reach %d messages each within 15 s: GET %d, A %d, B %d",
				cutFrom, messages(legs[0].got), messages(legs[1].got), messages(legs[2].got))
		}
	}
	for _, l := range legs {
		l.got = append(l.got, l.s.cut(5*time.Second)...)
	}
	lastIDs := map[string]string{}
	cutAt := map[string]int{}
	for _, l := range legs {
		lastIDs[l.name] = l.got[len(l.got)-1].ID
		cutAt[l.name] = len(l.got)
		if messages(l.got) >= n+1 {
			t.Fatalf("stream %s was complete before the cut; the test needs a slower upstream", l.name)
		}
	}
	t.Logf("cut after GET %d, A %d, B %d events", cutAt["GET"], cutAt["A"], cutAt["B"])

	// Let every stream move on while no connection serves it, so that
	// resuming has something to replay: the calls' events wait in their
	// streams, the updates in the session's queue for its GET stream.
	backlog := func() bool {
		return updates.Load() >= int64(cutAt["GET"]+5) && u.progress.Load() >= int64(cutAt["A"]+cutAt["B"]+10)
	}
	for wait := time.Now().Add(10 * time.Second); !backlog(); time.Sleep(durPollEvery) {
		if time.Now().After(wait) {
			t.Fatalf("the upstream did not move on after the cut: %d updates, %d progress", updates.Load(), u.progress.Load())
		}
	}

	// Resume each with its own Last-Event-ID, and read to its end: the
	// response for a call, the last update for the GET stream.
	for _, l := range legs {
		l.s = c.resume(lastIDs[l.name], 10*time.Second)
	}
	deadline = time.After(15 * time.Second)
	done := map[string]bool{}
	chans := make([]<-chan durEvent, len(legs)) // nil once a stream is finished
	for i, l := range legs {
		chans[i] = l.s.events
	}
	for len(done) < len(legs) {
		var (
			ev durEvent
			ok bool
			i  int
		)
		select {
		case ev, ok = <-chans[0]:
			i = 0
		case ev, ok = <-chans[1]:
			i = 1
		case ev, ok = <-chans[2]:
			i = 2
		case <-deadline:
			t.Fatalf("resumed streams did not finish within 15 s: done %v", done)
		}
		l := legs[i]
		if !ok {
			if !done[l.name] {
				t.Fatalf("resumed stream %s ended before its end: %v", l.name, l.s.err)
			}
			chans[i] = nil
			continue
		}
		l.got = append(l.got, ev)
		switch {
		case l.reqID != 0 && ev.Msg != nil && ev.Msg.IsResponse():
			done[l.name] = true
		case l.reqID == 0 && ev.Msg != nil && durUpdateN(ev.Msg) == n:
			done[l.name] = true
			chans[i] = nil // the GET stream never ends by itself
		}
	}
	for _, l := range legs {
		l.s.body.Close()
	}

	// Every stream: one id prefix, its own, seqs 0,1,2,… across the cut;
	// only its own content.
	streamOf := map[string]string{}
	for _, l := range legs {
		sid, _ := durSplitID(t, l.got[0].ID)
		if other, dup := streamOf[sid]; dup {
			t.Errorf("streams %s and %s share the id %s", other, l.name, sid)
		}
		streamOf[sid] = l.name
	}
	for _, l := range legs {
		sid, _ := durSplitID(t, l.got[0].ID)
		var values []int
		for i, ev := range l.got {
			evSID, seq := durSplitID(t, ev.ID)
			if evSID != sid {
				t.Errorf("stream %s event %d (%s after the cut at %d) has id %s of stream %s", l.name, i, durPhase(i, cutAt[l.name]), cutAt[l.name], ev.ID, streamOf[evSID])
				continue
			}
			if seq != i {
				t.Errorf("stream %s event %d (%s) has seq %d: events were lost or repeated", l.name, i, durPhase(i, cutAt[l.name]), seq)
			}
			if ev.Msg == nil {
				if i != 0 {
					t.Errorf("stream %s: a data-less event at %d", l.name, i)
				}
				continue
			}
			m := ev.Msg
			switch {
			case l.reqID == 0:
				k := durUpdateN(m)
				if k == 0 {
					// list_changed belongs to the session, so the GET
					// stream is its place; anything else is not.
					if !strings.HasSuffix(m.Method, "/list_changed") {
						t.Errorf("GET stream carries %s", durShort(m.Encode()))
					}
					continue
				}
				values = append(values, k)
			case m.IsResponse():
				if string(m.ID) != strconv.Itoa(l.reqID) {
					t.Errorf("stream %s carries the response of request %s", l.name, m.ID)
				} else if got, want := durResultText(m), fmt.Sprintf("done %d %s", n, l.name); got != want {
					t.Errorf("stream %s: result %q, want %q", l.name, got, want)
				}
				if i != len(l.got)-1 {
					t.Errorf("stream %s: the response is not the last event", l.name)
				}
			default:
				p, ok := durAsProgress(m)
				if !ok || p.Token != l.token || !strings.HasPrefix(p.Message, l.name+"/") {
					t.Errorf("stream %s carries %s", l.name, durShort(m.Encode()))
					continue
				}
				values = append(values, int(p.Progress))
			}
		}
		want := make([]int, n)
		for i := range want {
			want[i] = i + 1
		}
		if !slices.Equal(values, want) {
			t.Errorf("stream %s delivered %s across the cut, want 1-%d exactly once in order", l.name, durRanges(values), n)
		}
	}
}

// durUpdateN is the number a resources/updated notification of the feed
// carries in _meta.n; 0 for anything else.
func durUpdateN(m *jsonrpc.Message) int {
	if m.Method != "notifications/resources/updated" {
		return 0
	}
	meta, ok := jsonrpc.Member(m.Params, "_meta")
	if !ok {
		return 0
	}
	raw, ok := jsonrpc.Member(meta, "n")
	if !ok {
		return 0
	}
	k, _ := strconv.Atoi(string(raw))
	return k
}

func durPhase(i, cut int) string {
	if i < cut {
		return "before"
	}
	return "after"
}

func durCountProgress(evs []durEvent) int {
	k := 0
	for _, ev := range evs {
		if _, ok := durAsProgress(ev.Msg); ok {
			k++
		}
	}
	return k
}

// durRanges prints a list of integers compactly: "1-57, 55-200".
func durRanges(vs []int) string {
	if len(vs) == 0 {
		return "nothing"
	}
	var parts []string
	start := vs[0]
	for i := 1; i <= len(vs); i++ {
		if i < len(vs) && vs[i] == vs[i-1]+1 {
			continue
		}
		if start == vs[i-1] {
			parts = append(parts, strconv.Itoa(start))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", start, vs[i-1]))
		}
		if i < len(vs) {
			start = vs[i]
		}
	}
	return strings.Join(parts, ", ")
}

func durShort(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// BenchmarkProgressNotifications measures what persisting every event costs:
// an in-process hub (with the SQLite store, as `mcphub serve`, or without,
// as `mcphub serve --no-store`) in front of an in-process Go SDK upstream
// whose tool sends progress notifications as fast as it can, read by a raw
// client. It reports notifications per second and, after both, the ratio.
//
//	go test -run '^$' -bench ProgressNotifications -benchtime 20x ./cmd/mcphub/
func BenchmarkProgressNotifications(b *testing.B) {
	const perCall = 500
	rates := map[string]float64{}
	for _, mode := range []string{"on", "off"} {
		b.Run("store="+mode, func(b *testing.B) {
			u := durNewUpstream(b, false)
			h := durStartHub(b, durRemoteTable("up", u.url), mode == "on")
			c := durNewClient(b, h.url)
			c.initialize()
			args := map[string]any{"n": perCall}
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				resp, err := c.post(context.Background(), durRequest(100+i, "tools/call", durToolCall("up__slow_progress", args, "bench")))
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("tools/call: %v %v", err, resp)
				}
				s := durFollow(resp.Body)
				got := 0
				for ev := range s.events {
					if _, ok := durAsProgress(ev.Msg); ok {
						got++
					}
				}
				resp.Body.Close()
				if got != perCall {
					b.Fatalf("%d progress notifications, want %d (%v)", got, perCall, s.err)
				}
			}
			elapsed := time.Since(start)
			b.StopTimer()
			rate := float64(b.N*perCall) / elapsed.Seconds()
			b.ReportMetric(rate, "notif/s")
			rates[mode] = rate
		})
	}
	if rates["on"] > 0 && rates["off"] > 0 {
		fmt.Fprintf(os.Stderr, "BenchmarkProgressNotifications: store on %.0f notif/s, off %.0f notif/s, on/off = %.2f\n", rates["on"], rates["off"], rates["on"]/rates["off"])
	}
}
