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
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/store"
	"github.com/mcphub/mcphub/store/pgtest"
)

// resumeCase is one way a client's streams are cut midway and resumed.
type resumeCase struct {
	name string
	// kill cuts by kill -9 of a real `mcphub serve`, which then starts
	// again on the same data directory and port; otherwise the client cuts
	// its own connections to an in-process hub with the store.
	kill bool
	// stdio makes the upstream the stdio fake, whose call dies with the
	// hub (its stdin reaches EOF); otherwise it is the HTTP fake, which
	// outlives the hub and, when the hub is killed, keeps every event for
	// the restarted hub to resume.
	stdio bool
	// postgres keeps the killed hub's store in PostgreSQL (--store), not
	// SQLite in its data directory.
	postgres bool
	// calls are the tags of the tools/call requests, each streaming its
	// progress on its own POST stream.
	calls []string
	// get opens the session's GET stream too, which receives the
	// upstream's resource updates (they belong to no request).
	get bool
	// n is how many progress notifications each call sends (and updates
	// the GET stream gets), delayMs apart.
	n, delayMs int
	// cutAt is how many messages each stream has when it is cut.
	cutAt int
	// within bounds each phase of reading; resumeWithin, the GET that
	// resumes a stream.
	within, resumeWithin time.Duration
}

// leg is one stream of the session, across its two connections.
type leg struct {
	name   string // the call's tag, or GET
	reqID  int    // the call's request id; 0 for the GET stream
	token  string // the call's progress token
	s      *sseStream
	open   <-chan sseEvent // s.events until the stream is read to its end
	got    []sseEvent
	cutAt  int // events read before the cut
	lastID string
}

func (l *leg) messages() int {
	k := 0
	for _, ev := range l.got {
		if ev.Msg != nil {
			k++
		}
	}
	return k
}

// response returns the call's response, which must come after the cut: on
// the resumed connection.
func (l *leg) response() *jsonrpc.Message {
	for _, ev := range l.got[l.cutAt:] {
		if ev.Msg != nil && ev.Msg.IsResponse() {
			return ev.Msg
		}
	}
	return nil
}

// TestStreamsResumeAfterCut cuts a session's streams midway and resumes
// each with its own Last-Event-ID. Each resumed stream continues exactly
// where it was cut: one id prefix, its own, with sequence numbers 0, 1, 2…
// across both connections, only its own content, no gap or repeat, and its
// end (the response of a call, the last update of the GET stream).
//
//   - kill9_stdio: the upstream is a stdio Go SDK server (this test binary
//     as the fake). The call cannot survive the hub: the child dies with it
//     (stdin EOF), and the restarted hub answers the resumed stream with a
//     JSON-RPC error for the same request id, after the progress the client
//     had not seen yet.
//   - kill9_http: the upstream is a Go SDK Streamable HTTP server with an
//     EventStore in the test process, so it outlives the hub and keeps
//     running the tool. The restarted hub resumes its upstream session and
//     the call's upstream stream; the client sees every progress
//     notification 1..200 exactly once, in order, and the real result.
//   - cut_three_streams: two concurrent calls and the GET stream of one
//     session, all cut by the client and resumed while the hub runs on:
//     each resumed stream replays only its own events.
func TestStreamsResumeAfterCut(t *testing.T) {
	kill9 := resumeCase{kill: true, calls: []string{"k9"}, n: 200, delayMs: 12, cutAt: 60,
		within: 20 * time.Second, resumeWithin: 20 * time.Second}
	k9stdio, k9http, k9pg := kill9, kill9, kill9
	k9stdio.name, k9stdio.stdio = "kill9_stdio", true
	k9http.name = "kill9_http"
	k9pg.name, k9pg.postgres = "kill9_http_postgres", true
	for _, tc := range []resumeCase{k9stdio, k9http, k9pg, {
		name: "cut_three_streams", calls: []string{"A", "B"}, get: true, n: 40, delayMs: 15, cutAt: 10,
		within: 15 * time.Second, resumeWithin: 10 * time.Second,
	}} {
		t.Run(tc.name, func(t *testing.T) { runResume(t, tc) })
	}
}

// resumeRun is one run of a resumeCase: the hub, its upstream "up", the
// client's session and its streams.
type resumeRun struct {
	t        *testing.T
	tc       resumeCase
	ph       *procHub      // when the case kills the hub
	flags    []string      // its command line's flags
	run      *hubRun       // its first run
	up       *httpUpstream // nil for the stdio upstream
	childPID int           // the stdio upstream's process
	s        *rawSession
	sid      string // the session id the client got at the start
	legs     []*leg
	updates  atomic.Int64 // resource updates the upstream sent
}

func runResume(t *testing.T, tc resumeCase) {
	r := &resumeRun{t: t, tc: tc}
	r.startHub()
	r.openLegs()
	r.readAndCut()
	r.moveOn()
	r.resumeToEnd()
	r.check()
}

// startHub starts the upstream and the hub over it, and opens the session.
func (r *resumeRun) startHub() {
	t, tc := r.t, r.tc
	servers := childServer(t, "up", childOpts{lines: `connect_timeout = "20s"`})
	if !tc.stdio {
		r.up = startUpstream(t, "up", upstreamOpts{resumable: tc.kill})
		servers = remoteServer("up", r.up.url, `connect_timeout = "10s"`)
	}
	base := ""
	if tc.kill {
		r.ph = newProcHub(t)
		r.ph.write(t, r.ph.registry("", servers))
		r.flags = []string{"--log-level", "debug"}
		if tc.postgres {
			r.ph.storeURL = pgtest.URL(t)
			r.flags = append(r.flags, "--store", r.ph.storeURL)
		}
		r.run = r.ph.start(nil, r.flags...)
		r.childPID = findServer(r.ph.waitStatus(t, r.run, 20*time.Second, "up connects", connected("up")), "up").PID
		if tc.stdio && r.childPID <= 0 {
			t.Fatalf("/readyz shows no PID for the stdio server")
		}
		base = r.ph.base()
	} else {
		base = startInproc(t, servers, hubConfig{store: fullStore}).url
	}
	r.s, _ = newRawClient(t, base).initialize("/mcp")
	r.sid = r.s.sid
}

// openLegs opens the streams: the GET stream first, attached once its
// priming event is out (from then on updates go to it), then one POST per
// call; and starts the resource updates.
func (r *resumeRun) openLegs() {
	t, tc := r.t, r.tc
	if tc.get {
		if status, m := r.s.call(2, "resources/subscribe", map[string]any{"uri": resURI("up")}); status != http.StatusOK || m.Error != nil {
			t.Fatalf("resources/subscribe: HTTP %d %s", status, m.Encode())
		}
		resp, err := r.s.get(context.Background(), "")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET: %v %v", err, resp)
		}
		l := &leg{name: "GET", s: follow(resp.Body)}
		l.got = append(l.got, l.s.await(t, 10*time.Second, "GET stream: a priming event first", func(ev sseEvent) bool {
			if ev.Msg != nil {
				t.Fatalf("GET stream: want a priming event first, got %s", ev.Msg.Encode())
			}
			return true
		}))
		r.legs = append(r.legs, l)
	}
	for i, tag := range tc.calls {
		l := &leg{name: tag, reqID: 10 + i, token: "tok-" + tag}
		args := map[string]any{"n": tc.n, "delay_ms": tc.delayMs, "tag": tag}
		resp, err := r.s.post(context.Background(), rpcRequest(l.reqID, "tools/call", progressCall("up__slow_progress", args, l.token)))
		if err != nil {
			t.Fatal(err)
		}
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, acceptSSE) {
			resp.Body.Close()
			t.Fatalf("tools/call %s: HTTP %d %q, want 200 text/event-stream", tag, resp.StatusCode, ct)
		}
		l.s = follow(resp.Body)
		r.legs = append(r.legs, l)
	}
	for _, l := range r.legs {
		l.open = l.s.events
	}
	if !tc.get {
		return
	}
	// Resource updates, numbered in _meta, belong to no request: the hub
	// routes them to the session's GET stream.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; i <= tc.n; i++ {
			r.up.srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: resURI("up"), Meta: mcp.Meta{"n": i}})
			r.updates.Add(1)
			select {
			case <-time.After(time.Duration(tc.delayMs) * time.Millisecond):
			case <-r.up.stop:
				return
			}
		}
	}()
	t.Cleanup(wg.Wait)
}

// readAndCut reads every stream until each has cutAt messages, then cuts
// them all: by kill -9 of the hub, when what was already on the wire still
// counts as received, or by closing the client's connections.
func (r *resumeRun) readAndCut() {
	t, tc := r.t, r.tc
	readLegs(t, r.legs, tc.within, fmt.Sprintf("every stream has %d messages", tc.cutAt), func(l *leg, closed bool) bool {
		if closed {
			t.Fatalf("stream %s ended after %d messages: %v", l.name, l.messages(), l.s.err)
		}
		return l.messages() >= tc.cutAt
	})
	if tc.kill {
		r.run.kill9(t)
	}
	for _, l := range r.legs {
		if tc.kill {
			l.got = append(l.got, l.s.drain(tc.within)...)
			l.s.body.Close()
		} else {
			l.got = append(l.got, l.s.cut(5*time.Second)...)
		}
		l.cutAt = len(l.got)
		for _, ev := range l.got {
			if ev.ID != "" {
				l.lastID = ev.ID
			}
		}
		if l.messages() >= tc.n+1 {
			t.Fatalf("stream %s was complete before the cut; the test needs a slower upstream", l.name)
		}
		for _, ev := range l.got {
			if ev.Msg != nil && ev.Msg.IsResponse() {
				t.Fatalf("stream %s got its response before the cut, not on the resumed connection: %s", l.name, ev.Msg.Encode())
			}
		}
		t.Logf("stream %s: %d events before the cut, last id %s (connection ended: %v)", l.name, l.cutAt, l.lastID, l.s.err)
	}
}

// moveOn lets the streams move on while no connection serves them, so that
// resuming has something to replay. A stdio child dies with a killed hub
// instead: it sees stdin EOF.
func (r *resumeRun) moveOn() {
	t := r.t
	if r.tc.stdio {
		gone, how := waitProcGone(r.childPID, 10*time.Second)
		if !gone {
			t.Fatalf("stdio child %d survived the hub's kill -9 by 10 s", r.childPID)
		}
		t.Logf("stdio child %d died with the hub: %s", r.childPID, how)
		return
	}
	wantProgress, wantUpdates := int64(10), int64(0)
	for _, l := range r.legs {
		if l.reqID == 0 {
			wantUpdates = int64(l.cutAt + 5)
		} else {
			wantProgress += int64(l.cutAt)
		}
	}
	eventually(t, 10*time.Second, "the upstream moves on after the cut", func() error {
		if r.updates.Load() < wantUpdates || r.up.progress.Load() < wantProgress {
			return fmt.Errorf("%d updates, %d progress", r.updates.Load(), r.up.progress.Load())
		}
		return nil
	})
}

// resumeToEnd starts a killed hub again on the same data directory and
// port, resumes each stream with its own Last-Event-ID (the client keeps its
// session id) and reads it to its end: a call's stream ends after its
// response; the GET stream never ends by itself, so its end is the last
// update.
func (r *resumeRun) resumeToEnd() {
	t, tc := r.t, r.tc
	if tc.kill {
		r.ph.logStored("up")
		r.ph.start(nil, r.flags...)
	}
	for _, l := range r.legs {
		l.s = r.s.resume(l.lastID, tc.resumeWithin)
		l.open = l.s.events
	}
	readLegs(t, r.legs, tc.within, "every resumed stream reaches its end", func(l *leg, closed bool) bool {
		if l.reqID == 0 {
			if closed {
				t.Fatalf("the resumed GET stream ended before its last update: %v", l.s.err)
			}
			return updateN(l.got[len(l.got)-1].Msg) == tc.n
		}
		if closed && l.response() == nil {
			t.Fatalf("resumed stream %s ended without the response (%d events after the cut; %v)", l.name, len(l.got)-l.cutAt, l.s.err)
		}
		return closed
	})
	for _, l := range r.legs {
		l.s.body.Close()
	}
}

// check checks every stream, that no call was replayed upstream, and that
// the session outlived a killed hub.
func (r *resumeRun) check() {
	t, tc := r.t, r.tc
	streamOf := map[string]string{}
	for _, l := range r.legs {
		sid, _ := splitID(t, l.got[0].ID)
		if other, dup := streamOf[sid]; dup {
			t.Errorf("streams %s and %s share the id %s", other, l.name, sid)
		}
		streamOf[sid] = l.name
	}
	for _, l := range r.legs {
		checkLeg(t, tc, l, streamOf)
	}
	if r.up != nil {
		if n := r.up.calls.Load(); n != int64(len(tc.calls)) {
			t.Errorf("the upstream ran the tool %d times, want %d (a resumed call must not be replayed)", n, len(tc.calls))
		}
	}
	if !tc.kill {
		return
	}
	// The old session still works for a new request, without initialize.
	if r.s.sid != r.sid {
		t.Fatalf("client session changed")
	}
	status, m := r.s.call(100, "tools/list", map[string]any{})
	if status != http.StatusOK || m.Error != nil {
		t.Fatalf("tools/list on the old session after the restart: HTTP %d %s", status, m.Encode())
	}
	if !strings.Contains(string(m.Result), `"up__slow_progress"`) {
		t.Errorf("tools/list after the restart lacks up__slow_progress: %s", short(m.Result))
	}
	if tc.postgres && fileExists(filepath.Join(r.ph.data, store.FileName)) {
		t.Errorf("the hub made a SQLite store in its data directory although --store named PostgreSQL")
	}
}

// readLegs reads the legs' open streams into their events until end says
// each is finished; end learns of every event and of the stream's close,
// and may fail the test. The deadline is for the whole phase.
func readLegs(t *testing.T, legs []*leg, within time.Duration, what string, end func(l *leg, closed bool) bool) {
	t.Helper()
	timeout := reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(time.After(within))}
	finished := func() bool {
		for _, l := range legs {
			if l.open != nil {
				return false
			}
		}
		return true
	}
	for _, l := range legs {
		if end(l, false) {
			l.open = nil
		}
	}
	for !finished() {
		cases := []reflect.SelectCase{timeout}
		for _, l := range legs {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(l.open)})
		}
		i, v, ok := reflect.Select(cases)
		if i == 0 {
			var counts []string
			for _, l := range legs {
				counts = append(counts, fmt.Sprintf("%s %d events (%d messages), done %v", l.name, len(l.got), l.messages(), l.open == nil))
			}
			t.Fatalf("%s: not within %s: %s", what, within, strings.Join(counts, "; "))
		}
		l := legs[i-1]
		if ok {
			l.got = append(l.got, v.Interface().(sseEvent))
		}
		if end(l, !ok) || !ok {
			l.open = nil
		}
	}
}

// checkLeg checks one stream across the cut: one id prefix, its own, seqs
// 0,1,2… starting with the priming event, only its own content, and the
// values the case wants.
func checkLeg(t *testing.T, tc resumeCase, l *leg, streamOf map[string]string) {
	t.Helper()
	sid, _ := splitID(t, l.got[0].ID)
	if l.got[0].Msg != nil {
		t.Errorf("stream %s starts with %s, want a priming event", l.name, l.got[0].Msg.Encode())
	}
	if len(l.got) > l.cutAt && l.got[l.cutAt].ID == l.lastID {
		t.Errorf("the resumed stream %s repeated the Last-Event-ID event %s", l.name, l.lastID)
	}
	var values []int
	for i, ev := range l.got {
		evSID, seq := splitID(t, ev.ID)
		if evSID != sid {
			t.Errorf("stream %s event %d (%s the cut at %d) has id %s of stream %s", l.name, i, phase(i, l.cutAt), l.cutAt, ev.ID, streamOf[evSID])
			continue
		}
		if seq != i {
			t.Errorf("stream %s event %d (%s the cut) has seq %d: events were lost or repeated", l.name, i, phase(i, l.cutAt), seq)
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
			k := updateN(m)
			if k == 0 {
				// list_changed belongs to the session, so the GET stream
				// is its place; anything else is not.
				if !strings.HasSuffix(m.Method, "/list_changed") {
					t.Errorf("GET stream carries %s", short(m.Encode()))
				}
				continue
			}
			values = append(values, k)
		case m.IsResponse():
			if string(m.ID) != strconv.Itoa(l.reqID) {
				t.Errorf("stream %s carries the response of request %s, want %d", l.name, m.ID, l.reqID)
			}
			if i != len(l.got)-1 {
				t.Errorf("stream %s: the response is event %d of %d, not the last", l.name, i, len(l.got))
			}
		default:
			p, ok := progressOf(m)
			if !ok || p.Token != l.token || !strings.HasPrefix(p.Message, l.name+"/") {
				t.Errorf("stream %s carries %s, want progress with its own token %q", l.name, short(m.Encode()), l.token)
				continue
			}
			values = append(values, int(p.Progress))
		}
	}
	t.Logf("stream %s: %d events before the cut, %d after; values %s", l.name, l.cutAt, len(l.got)-l.cutAt, ranges(values))
	checkValues(t, tc, l, values)
}

// checkValues checks the progress values (or update numbers) of a stream
// and its response: a call that died with a stdio child sent a prefix and
// was answered with an error; every other stream delivered all n exactly
// once, in order, and a call its real result.
func checkValues(t *testing.T, tc resumeCase, l *leg, values []int) {
	t.Helper()
	response := l.response()
	if l.reqID != 0 && tc.stdio {
		// A strictly increasing prefix 1..k with no duplicates, then an
		// error: the call died with the child.
		for i, v := range values {
			if v != i+1 {
				t.Errorf("progress #%d is %d, want %d (values %s)", i+1, v, i+1, ranges(values))
				break
			}
		}
		if len(values) < tc.cutAt || len(values) >= tc.n {
			t.Errorf("%d progress notifications, want a prefix of at least %d and fewer than %d", len(values), tc.cutAt, tc.n)
		}
		if response.Error == nil {
			t.Errorf("the lost call was answered with a result, want a JSON-RPC error: %s", response.Encode())
		} else {
			t.Logf("lost call answered with error %d: %s", response.Error.Code, response.Error.Message)
		}
		return
	}
	want := make([]int, tc.n)
	for i := range want {
		want[i] = i + 1
	}
	if !slices.Equal(values, want) {
		t.Errorf("stream %s delivered %s across the cut, want 1-%d exactly once in order", l.name, ranges(values), tc.n)
	}
	if l.reqID != 0 {
		res, err := decodeResult(response)
		if got, want := res.text(), fmt.Sprintf("done %d %s", tc.n, l.name); response.Error != nil || err != nil || res.IsError || got != want {
			t.Errorf("stream %s: result %s, want %q", l.name, short(response.Encode()), want)
		}
	}
}

// splitID splits an event id "<stream>_<seq>".
func splitID(t testing.TB, id string) (string, int) {
	t.Helper()
	i := strings.LastIndexByte(id, '_')
	seq, err := strconv.Atoi(id[i+1:])
	if i <= 0 || err != nil {
		t.Fatalf("event id %q is not <stream>_<seq>", id)
	}
	return id[:i], seq
}

// updateN is the number a resources/updated notification of the fake
// carries in _meta.n; 0 for anything else.
func updateN(m *jsonrpc.Message) int {
	if m == nil || m.Method != "notifications/resources/updated" {
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

func phase(i, cut int) string {
	if i < cut {
		return "before"
	}
	return "after"
}

// ranges prints a list of integers compactly: "1-57, 55-200".
func ranges(vs []int) string {
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
	for _, mode := range []struct {
		name  string
		store storeMode
	}{{"on", fullStore}, {"off", upstreamStore}} {
		b.Run("store="+mode.name, func(b *testing.B) {
			up := startUpstream(b, "up", upstreamOpts{})
			h := startInproc(b, remoteServer("up", up.url, `connect_timeout = "10s"`), hubConfig{store: mode.store})
			s, _ := newRawClient(b, h.url).initialize("/mcp")
			args := map[string]any{"n": perCall}
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				resp, err := s.post(context.Background(), rpcRequest(100+i, "tools/call", progressCall("up__slow_progress", args, "bench")))
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("tools/call: %v %v", err, resp)
				}
				stream := follow(resp.Body)
				got := 0
				for ev := range stream.events {
					if _, ok := progressOf(ev.Msg); ok {
						got++
					}
				}
				resp.Body.Close()
				if got != perCall {
					b.Fatalf("%d progress notifications, want %d (%v)", got, perCall, stream.err)
				}
			}
			elapsed := time.Since(start)
			b.StopTimer()
			rate := float64(b.N*perCall) / elapsed.Seconds()
			b.ReportMetric(rate, "notif/s")
			rates[mode.name] = rate
		})
	}
	if rates["on"] > 0 && rates["off"] > 0 {
		fmt.Fprintf(os.Stderr, "BenchmarkProgressNotifications: store on %.0f notif/s, off %.0f notif/s, on/off = %.2f\n", rates["on"], rates["off"], rates["on"]/rates["off"])
	}
}
