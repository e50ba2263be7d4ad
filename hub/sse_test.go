package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/sse"
)

// logMsg is a log notification that belongs to no call, numbered.
func logMsg(n int) *jsonrpc.Message {
	return jsonrpc.NewNotification("notifications/message",
		json.RawMessage(fmt.Sprintf(`{"level":"warning","logger":"t","data":"msg-%d"}`, n)))
}

func TestSSEQueuedUntilGetOpens(t *testing.T) {
	th := routedHub(t)
	c := th.connect("/mcp", "2025-06-18", `{}`)
	th.fakes["alpha"].notify("", logMsg(1))
	s := c.get()
	m, _ := s.nextMsg()
	if m.Method != "notifications/message" || !strings.Contains(string(m.Params), "msg-1") {
		t.Fatalf("first message = %s %s, want the queued log message", m.Method, m.Params)
	}
}

func TestSSESeveralGetStreams(t *testing.T) {
	th := routedHub(t)
	c := th.connect("/mcp", "2025-06-18", `{}`)
	streams := []*sseClient{c.get(), c.get(), c.get()}
	const n = 6
	for i := range n {
		th.fakes["alpha"].notify("", logMsg(i))
	}
	// Each message is on exactly one stream, as the hub recorded it ...
	seen := map[string]int{}
	s := c.session()
	s.mu.Lock()
	for _, st := range s.streams {
		st.mu.Lock()
		for _, ev := range st.events {
			seen[string(ev.data)]++
		}
		st.mu.Unlock()
	}
	s.mu.Unlock()
	for i := range n {
		if k := string(logMsg(i).Encode()); seen[k] != 1 {
			t.Errorf("message %d is on %d streams, want exactly 1", i, seen[k])
		}
	}
	// ... and as the client reads them.
	got := map[string]int{}
	for len(got) < n {
		var ev sse.Event
		select {
		case ev = <-streams[0].events:
		case ev = <-streams[1].events:
		case ev = <-streams[2].events:
		case <-time.After(waitFor):
			t.Fatalf("received %d of %d messages", len(got), n)
		}
		if ev.Data != "" {
			got[ev.Data]++
		}
	}
	for k, v := range got {
		if v != 1 {
			t.Errorf("%s received %d times", k, v)
		}
	}
}

func TestSSEHeartbeat(t *testing.T) {
	th := routedHub(t, func(o *Options) { o.Heartbeat = 20 * time.Millisecond })
	c := th.connect("/mcp", "2025-06-18", `{}`)
	s := c.get()
	for beats := 0; beats < 2; {
		ev := s.next()
		switch {
		case ev.Data != "":
			t.Fatalf("message %q on an idle stream", ev.Data)
		case len(ev.Comments) > 0:
			beats++
		} // an empty-data event is a priming event
	}
}

func TestSSEListChangedCoalesced(t *testing.T) {
	fakes := map[string]*fakeUpstream{
		"alpha": newFake("alpha").setList("tools/list", toolItems("a1")),
		"beta":  newFake("beta").setList("tools/list", toolItems("b1")),
	}
	th := startHub(t, twoServers, fakes, func(o *Options) { o.ListChangedDelay = 150 * time.Millisecond })
	merged1 := th.connect("/mcp", "2025-06-18", `{}`)
	merged2 := th.connect("/mcp", "2025-03-26", `{}`)
	own := th.connect("/alpha/mcp", "2025-06-18", `{}`)
	other := th.connect("/beta/mcp", "2025-06-18", `{}`)
	streams := map[string]*sseClient{"merged1": merged1.get(), "merged2": merged2.get(), "alpha": own.get(), "beta": other.get()}
	alpha := fakes["alpha"]

	// Window 1: two changes of alpha's tools.
	alpha.setList("tools/list", toolItems("a1", "a2"))
	alpha.changed()
	alpha.setList("tools/list", toolItems("a1", "a2", "a3"))
	alpha.changed()
	// Window 2: a Changed that alters nothing, and a prompts change.
	wantNext(t, streams, []string{"merged1", "merged2", "alpha"}, "notifications/tools/list_changed")
	alpha.changed()
	alpha.setList("prompts/list", items(`{"name":"p"}`))
	alpha.changed()
	wantNext(t, streams, []string{"merged1", "merged2", "alpha"}, "notifications/prompts/list_changed")
	// Window 3: a change of beta's resources, seen by every session but
	// /alpha/mcp's. Anything else still queued from windows 1 and 2 would
	// come before it.
	fakes["beta"].setList("resources/list", items(`{"uri":"x://1","name":"x"}`))
	fakes["beta"].changed()
	wantNext(t, streams, []string{"merged1", "merged2", "beta"}, "notifications/resources/list_changed")
	// Window 4 reaches /alpha/mcp, proving it got nothing from window 3.
	alpha.setList("tools/list", toolItems("a1"))
	alpha.changed()
	wantNext(t, streams, []string{"alpha"}, "notifications/tools/list_changed")
}

// wantNext requires the next message of each named stream to be method.
func wantNext(t *testing.T, streams map[string]*sseClient, which []string, method string) {
	t.Helper()
	for _, name := range which {
		if m, _ := streams[name].nextMsg(); m.Method != method {
			t.Errorf("%s: next message = %s, want %s", name, m.Method, method)
		}
	}
}

// progressThenBlock is a handler that sends one progress notification and
// then holds the call until its context ends.
func progressThenBlock(ctx context.Context, fc *fakeCall) (json.RawMessage, error) {
	fc.Peer.Notify(jsonrpc.NewNotification("notifications/progress", json.RawMessage(`{"progressToken":"t","progress":1}`)))
	<-ctx.Done()
	return nil, ctx.Err()
}

// postWithEventID opens a tools/call on an SSE reply whose upstream sends
// progress and blocks; it returns the stream and the progress event's id.
func postWithEventID(t *testing.T, c *client, id int) (*sseClient, string) {
	t.Helper()
	s := c.postStream(rpc(id, "tools/call", `{"name":"alpha__slow"}`))
	m, eventID := s.nextMsg()
	if m.Method != "notifications/progress" || eventID == "" {
		t.Fatalf("first message of the POST stream = %s with id %q, want progress with an event id", m.Method, eventID)
	}
	return s, eventID
}

// TestSSEResumeDroppedPostStream drops a POST stream mid-call and resumes
// it with GET + Last-Event-ID: after the call finished (the missed events,
// response included, are replayed) and while it still runs (they arrive live).
func TestSSEResumeDroppedPostStream(t *testing.T) {
	for _, live := range []bool{false, true} {
		t.Run(map[bool]string{false: "after the call", true: "during the call"}[live], func(t *testing.T) {
			testResume(t, live)
		})
	}
}

func testResume(t *testing.T, live bool) {
	th := routedHub(t)
	release := make(chan struct{})
	th.fakes["alpha"].setHandler(func(ctx context.Context, fc *fakeCall) (json.RawMessage, error) {
		fc.Peer.Notify(jsonrpc.NewNotification("notifications/progress", json.RawMessage(`{"progressToken":"t","progress":1}`)))
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		fc.Peer.Notify(jsonrpc.NewNotification("notifications/progress", json.RawMessage(`{"progressToken":"t","progress":2}`)))
		return json.RawMessage(`{"content":[{"type":"text","text":"late"}]}`), nil
	})
	c := th.connect("/mcp", "2025-11-25", `{}`)
	s := c.postStream(rpc(11, "tools/call", `{"name":"alpha__slow","_meta":{"progressToken":"t"}}`))
	m, lastID := s.nextMsg()
	if m.Method != "notifications/progress" || lastID == "" {
		t.Fatalf("first message = %s id %q, want progress with an event id", m.Method, lastID)
	}
	streamID, _, err := parseEventID(lastID)
	if err != nil {
		t.Fatalf("event id %q: %v", lastID, err)
	}
	hubStream := func() *stream {
		sess := c.session()
		sess.mu.Lock()
		defer sess.mu.Unlock()
		return sess.streams[streamID]
	}
	// The connection drops; the call goes on without it.
	s.stop()
	eventually(t, "the POST handler lets go of the stream", func() bool {
		st := hubStream()
		return st != nil && !st.isAttached()
	})
	var r *sseClient
	if live {
		r = c.get("Last-Event-ID", lastID)
		close(release)
	} else {
		close(release)
		eventually(t, "the call finishes", func() bool {
			st := hubStream()
			if st == nil {
				return false
			}
			st.mu.Lock()
			defer st.mu.Unlock()
			return st.finished
		})
		r = c.get("Last-Event-ID", lastID)
	}
	m, _ = r.nextMsg()
	if m.Method != "notifications/progress" || !strings.Contains(string(m.Params), `"progress":2`) {
		t.Fatalf("first message after resuming = %s %s, want progress 2", m.Method, m.Params)
	}
	m, _ = r.nextMsg()
	if string(m.ID) != "11" || !strings.Contains(string(m.Result), "late") {
		t.Fatalf("second message after resuming = id %s %s, want the response to 11", m.ID, m.Result)
	}
	r.wantEnd()
	// Delivered, but the client may not have read it all before its
	// connection dropped: resuming again replays the response.
	again := c.get("Last-Event-ID", lastID)
	if m, _ := again.nextMsg(); m.Method != "notifications/progress" {
		t.Fatalf("first message resuming a delivered stream = %s, want progress 2", m.Method)
	}
	if m, _ := again.nextMsg(); string(m.ID) != "11" || !strings.Contains(string(m.Result), "late") {
		t.Fatalf("resuming a delivered stream: id %s %s, want the response to 11 again", m.ID, m.Result)
	}
	again.wantEnd()
}

func TestSSEResumeRefusals(t *testing.T) {
	th := routedHub(t)
	th.fakes["alpha"].setHandler(progressThenBlock)
	a := th.connect("/mcp", "2025-11-25", `{}`)
	b := th.connect("/mcp", "2025-11-25", `{}`)
	_, eventID := postWithEventID(t, a, 1)

	for name, tt := range map[string]struct {
		c      *client
		last   string
		status int
	}{
		"stream being served":  {a, eventID, http.StatusConflict},
		"another session's id": {b, eventID, http.StatusBadRequest},
		"malformed: no seq":    {a, "garbage", http.StatusBadRequest},
		"malformed: bad seq":   {a, strings.Split(eventID, "_")[0] + "_x", http.StatusBadRequest},
		"unknown stream":       {a, "ZZZZZZZZZZ_0", http.StatusBadRequest},
	} {
		r := th.send(http.MethodGet, "/mcp", "", "Mcp-Session-Id", tt.c.sid, "Last-Event-ID", tt.last)
		if r.status != tt.status {
			t.Errorf("%s (Last-Event-ID %q): %d %s, want %d", name, tt.last, r.status, r.body, tt.status)
		}
	}
}

// TestSSEQueuedMessagesKeepOrder: messages queued while no GET stream was
// open must reach the client before any message raised after it opened. It
// replays serveGet's steps (open, attach, then the handler's first pull)
// with a message raised in between, as happens when one arrives while the
// handler writes the response headers.
func TestSSEQueuedMessagesKeepOrder(t *testing.T) {
	s := newSession(context.Background(), "", "2025-06-18", nil, nil)
	defer s.close()
	first, second := logMsg(1).Encode(), logMsg(2).Encode()
	s.deliver(first) // no stream: queued
	st, err := s.openStream(false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.attach(-1); err != nil {
		t.Fatal(err)
	}
	s.deliver(second) // raised before the handler's first pull
	s.pull(st)        // what serve does first
	st.mu.Lock()
	var order []string
	for _, ev := range st.events {
		if ev.data != nil {
			d, _ := jsonrpc.Member(ev.data, "params")
			v, _ := jsonrpc.StringMember(d, "data")
			order = append(order, v)
		}
	}
	st.mu.Unlock()
	if len(order) != 2 || order[0] != "msg-1" {
		t.Errorf("stream order = %q, want [msg-1 msg-2]: the message queued before the stream opened first", order)
	}
}

// TestSSEResumeCompletedPostStream: a POST stream whose response has gone
// out is kept, so a client that lost the end of it (its connection dropped
// after the hub wrote it) resumes with the priming event's id and gets the
// response replayed, not 400.
func TestSSEResumeCompletedPostStream(t *testing.T) {
	th := routedHub(t)
	th.fakes["alpha"].setHandler(func(ctx context.Context, fc *fakeCall) (json.RawMessage, error) {
		fc.Peer.Notify(jsonrpc.NewNotification("notifications/progress", json.RawMessage(`{"progressToken":"t","progress":1}`)))
		return json.RawMessage(`{"content":[]}`), nil
	})
	c := th.connect("/mcp", "2025-11-25", `{}`)
	s := c.postStream(rpc(5, "tools/call", `{"name":"alpha__slow","_meta":{"progressToken":"t"}}`))
	m, progressID := s.nextMsg()
	if m.Method != "notifications/progress" || progressID == "" {
		t.Fatalf("first message = %+v, want progress with an event id", m)
	}
	if m, _ := s.nextMsg(); string(m.ID) != "5" {
		t.Fatalf("the POST stream's second message = %+v, want the response to 5", m)
	}
	s.wantEnd()
	r := c.get("Last-Event-ID", progressID)
	if m, _ := r.nextMsg(); string(m.ID) != "5" || m.Result == nil {
		t.Fatalf("resumed after the priming event: %+v, want the response to 5 replayed", m)
	}
	r.wantEnd()
}

// TestSSEClientGoneWithoutEventIDCancelsCall: a client of a protocol without
// priming events drops its SSE reply before any event reached it; it holds
// no id to resume from, so the call is cancelled upstream at once instead of
// running to its timeout.
func TestSSEClientGoneWithoutEventIDCancelsCall(t *testing.T) {
	setVar(t, &streamAfter, 10*time.Millisecond)
	th := routedHub(t)
	started, cancelled := make(chan struct{}), make(chan struct{})
	th.fakes["alpha"].setHandler(func(ctx context.Context, fc *fakeCall) (json.RawMessage, error) {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	})
	c := th.connect("/mcp", "2025-06-18", `{}`)
	s := c.postStream(rpc(3, "tools/call", `{"name":"alpha__slow"}`))
	<-started
	s.stop()
	select {
	case <-cancelled:
	case <-time.After(waitFor):
		t.Fatal("the call was not cancelled upstream after its client went away")
	}
}

// TestSSENeverReadingReader: a client opens a GET stream and never reads
// it while the hub is fed far more than the stream's budget. The memory
// held stays within the budget, the reader is cut off (its handler ends;
// TestStreamBlockedWriterUnblocked covers one blocked in a write), and
// ending the session frees everything it held.
func TestSSENeverReadingReader(t *testing.T) {
	const budget = 64 << 10
	th := startHub(t, fmt.Sprintf("[hub]\nstream_buffer_bytes = %d\n", budget)+twoServers, nil)
	c := th.connect("/mcp", "2025-11-25", `{}`)
	conn, err := net.Dial("tcp", th.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\n\r\n", th.srv.Listener.Addr(), c.sid)
	s := c.session()
	eventually(t, "the GET stream is served", func() bool { return s.openStreams() == 1 })
	buf := th.h.sessions.buffers()
	note := []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + strings.Repeat("x", 10<<10) + `"}}`)
	most := int64(0)
	for range 2000 { // 20 MB
		s.deliver(note)
		most = max(most, buf.used.Load())
	}
	// The stream holds its budget for a resume; once it is cut off, the
	// session's queue for the next GET stream holds as much again.
	if limit := 2 * int64(budget+len(note)+eventOverhead); most > limit {
		t.Errorf("a never-read stream and its session's queue held up to %d bytes; their budgets are %d", most, limit)
	}
	eventually(t, "the reader that fell behind is cut off", func() bool { return s.openStreams() == 0 })
	if r := th.send(http.MethodDelete, "/mcp", "", "Mcp-Session-Id", c.sid); r.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d", r.status)
	}
	if got := buf.used.Load(); got != 0 {
		t.Errorf("%d bytes still held after the session was deleted", got)
	}
}
