package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// bigResult is a response to m whose encoding is over size bytes.
func bigResult(m *jsonrpc.Message, size int) *jsonrpc.Message {
	return jsonrpc.NewResponse(m.ID, json.RawMessage(`{"content":[{"type":"text","text":"`+strings.Repeat("x", size)+`"}]}`))
}

// wantTooLarge checks that err is the size error naming limit and that it
// came within d of start.
func wantTooLarge(t *testing.T, err error, limit string, start time.Time, d time.Duration) {
	t.Helper()
	if !errors.Is(err, ErrMessageTooLarge) || !strings.Contains(err.Error(), "response over "+limit+" bytes") {
		t.Fatalf("err = %v, want ErrMessageTooLarge saying response over %s bytes", err, limit)
	}
	if took := time.Since(start); took > d {
		t.Errorf("the call failed after %v, want at once", took)
	}
}

// A JSON reply over the limit fails its call at once.
func TestStreamableOversizedJSONReply(t *testing.T) {
	f := newFakeStreamable(t)
	f.tools["big"] = func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, _ *fakeSession) {
		writeJSONMsg(w, bigResult(m, 64<<10))
	}
	c, _ := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP, MaxMessageBytes: 4096}, nil)
	start := time.Now()
	_, err := callTool(context.Background(), c, "big", `{}`)
	wantTooLarge(t, err, "4096", start, 5*time.Second)
	if _, err := callTool(context.Background(), c, "echo", `{}`); err != nil {
		t.Fatalf("a call after the oversized reply: %v", err)
	}
}

// An event over the limit on a POST's stream fails that call at once; the
// stream is not resumed, which would only replay the event.
func TestStreamableOversizedPOSTEventFailsItsCall(t *testing.T) {
	f := newFakeStreamable(t)
	f.tools["big"] = func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, _ *fakeSession) {
		startSSE(w)
		writeSSE(w, "id: p0\nretry: 100\ndata: \n\n")
		writeSSE(w, "id: p1\n"+sseData(bigResult(m, 64<<10)))
	}
	c, logs := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP, MaxMessageBytes: 4096}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := callTool(ctx, c, "big", `{}`)
	wantTooLarge(t, err, "4096", start, 5*time.Second)
	if n := f.count(func(s seenReq) bool { return isGET(s) && s.header.Get("Last-Event-ID") != "" }); n != 0 {
		t.Errorf("%d resuming GETs after an oversized event\nlogs:\n%s", n, logs)
	}
	if c.Err() != nil {
		t.Errorf("the connection ended: %v", c.Err())
	}
}

// An event over the limit on the standalone stream fails the calls whose
// response can only come there (answered 202), at once; the stream is
// reopened without Last-Event-ID, so the event is not replayed.
func TestStreamableOversizedGETEventFailsCallsWaitingThere(t *testing.T) {
	f := newFakeStreamable(t)
	f.tools["later"] = func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, _ *fakeSession) {
		w.WriteHeader(http.StatusAccepted)
		f.push <- "id: g0\ndata: \n\n"
		f.push <- "id: g1\n" + sseData(bigResult(m, 64<<10))
	}
	c, logs := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP, MaxMessageBytes: 4096}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := callTool(ctx, c, "later", `{}`)
	wantTooLarge(t, err, "4096", start, 5*time.Second)
	waitFor(t, 5*time.Second, "the stream to be reopened", func() bool { return f.count(isGET) >= 2 })
	for _, g := range f.requests(isGET) {
		if id := g.header.Get("Last-Event-ID"); id != "" {
			t.Errorf("a GET resumed from %q, replaying the oversized event\nlogs:\n%s", id, logs)
		}
	}
	if _, err := callTool(ctx, c, "echo", `{}`); err != nil {
		t.Fatalf("a call after the oversized event: %v", err)
	}
}

// On the legacy transport one stream carries every response: an event over
// the limit ends it, and every call in flight fails at once with the reason.
func TestLegacyOversizedEventFailsCallsInFlight(t *testing.T) {
	f := newFakeLegacy(t)
	c, _ := startHTTP(t, Config{URL: f.srv.URL + "/sse", Transport: TransportSSE, MaxMessageBytes: 4096}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pending := make(chan error, 1)
	go func() {
		_, err := callTool(ctx, c, "hang", `{}`)
		pending <- err
	}()
	waitFor(t, 5*time.Second, "the hanging call to be POSTed", func() bool {
		return len(f.requests(func(s seenReq) bool { return s.msg != nil && s.msg.Method == "tools/call" })) == 1
	})
	start := time.Now()
	f.out <- jsonrpc.NewNotification("notifications/message", json.RawMessage(`{"level":"info","data":"`+strings.Repeat("x", 64<<10)+`"}`))
	select {
	case err := <-pending:
		wantTooLarge(t, err, "4096", start, 5*time.Second)
		if !errors.Is(err, ErrStreamFailed) {
			t.Errorf("err = %v, want ErrStreamFailed as well: the connection is lost", err)
		}
	case <-ctx.Done():
		t.Fatal("the call in flight was not failed")
	}
}
