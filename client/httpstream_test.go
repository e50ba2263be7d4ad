package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// Tests of the SSE streams of the Streamable HTTP transport against the
// scripted server of http_test.go: the retry field, idle timeouts, a GET
// answered 405 and the reconnect budget.

func TestStreamableRetryFieldHonoured(t *testing.T) {
	f := newFakeStreamable(t)
	var (
		mu       sync.Mutex
		pollID   json.RawMessage
		closedAt time.Time
	)
	// The POST stream primes with an id and retry: 500, then the server
	// closes the connection without the result.
	f.tools["poll"] = func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, _ *fakeSession) {
		startSSE(w)
		writeSSE(w, "id: e1\nretry: 500\ndata: \n\n")
		mu.Lock()
		pollID, closedAt = m.ID, time.Now()
		mu.Unlock()
	}
	f.get = func(w http.ResponseWriter, r *http.Request, _ *jsonrpc.Message, sess *fakeSession) {
		if r.Header.Get("Last-Event-ID") == "" {
			f.holdGET(w, r, sess)
			return
		}
		mu.Lock()
		id := pollID
		mu.Unlock()
		startSSE(w)
		writeSSE(w, "id: e2\n"+sseData(jsonrpc.NewResponse(id, json.RawMessage(`{"content":[{"type":"text","text":"after retry"}]}`))))
	}
	c, logs := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := callTool(ctx, c, "poll", `{}`)
	if err != nil || !strings.Contains(string(res), "after retry") {
		t.Fatalf("poll: %s %v\nlogs:\n%s", res, err, logs)
	}
	resumes := f.requests(func(s seenReq) bool { return isGET(s) && s.header.Get("Last-Event-ID") != "" })
	if len(resumes) != 1 || resumes[0].header.Get("Last-Event-ID") != "e1" {
		t.Fatalf("resuming GETs: %+v, want one with Last-Event-ID e1", resumes)
	}
	mu.Lock()
	delay := resumes[0].at.Sub(closedAt)
	mu.Unlock()
	if delay < 450*time.Millisecond || delay > 700*time.Millisecond {
		t.Errorf("the client reconnected %v after the close; retry: 500 demands 450–700 ms", delay)
	}
	if sid := resumes[0].header.Get("Mcp-Session-Id"); sid != "s1" {
		t.Errorf("the resuming GET carried session %q", sid)
	}
}

func TestStreamableIdleGETSurvivesShortCallTimeouts(t *testing.T) {
	f := newFakeStreamable(t)
	f.tools["hang"] = func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, sess *fakeSession) { f.hold(r, sess) }
	rec := newRecorder()
	c, logs := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP}, rec)
	waitFor(t, 5*time.Second, "the standalone GET", func() bool { return f.openGETs.Load() == 1 })

	const calls = 4
	start := time.Now()
	for i := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		_, err := callTool(ctx, c, "hang", `{}`)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("call %d: %v, want a deadline", i, err)
		}
	}
	if d := time.Since(start); d < calls*150*time.Millisecond {
		t.Fatalf("the calls took %v", d)
	}
	// Each cancellation is sent more than once over HTTP (it may overtake
	// its request); every timed-out call must have one.
	waitFor(t, 5*time.Second, "notifications/cancelled for every timed-out call", func() bool {
		return f.count(func(s seenReq) bool { return s.rpc() == "notifications/cancelled" }) >= calls
	})
	// The silent stream, open the whole time, still carries messages.
	f.push <- sseData(jsonrpc.NewNotification("notifications/resources/list_changed", nil))
	waitFor(t, 5*time.Second, "the pushed notification", func() bool {
		return len(rec.notifications("notifications/resources/list_changed")) == 1
	})
	if n := f.count(isGET); n != 1 || f.openGETs.Load() != 1 {
		t.Errorf("GETs opened: %d, open now: %d; the idle stream must stay the one opened after initialization\nlogs:\n%s", n, f.openGETs.Load(), logs)
	}
	if _, err := callTool(context.Background(), c, "echo", `{}`); err != nil {
		t.Errorf("a call after the timeouts: %v", err)
	}
}

func TestStreamableIdleTimeout(t *testing.T) {
	const idle = 300 * time.Millisecond
	t.Run("comments keep the stream alive", func(t *testing.T) {
		f := newFakeStreamable(t)
		f.get = func(w http.ResponseWriter, r *http.Request, _ *jsonrpc.Message, sess *fakeSession) {
			startSSE(w)
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-tick.C:
					writeSSE(w, ": keep-alive\n\n")
				case <-r.Context().Done():
					return
				case <-sess.gone:
					return
				case <-f.stop:
					return
				}
			}
		}
		c, logs := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP, StreamIdleTimeout: idle}, nil)
		waitFor(t, 5*time.Second, "the standalone GET", func() bool { return f.count(isGET) == 1 })
		// The window the assertion is about: over three idle timeouts, a
		// stream that hears a comment every 100 ms is never reconnected.
		<-time.After(1100 * time.Millisecond)
		if n := f.count(isGET); n != 1 {
			t.Errorf("%d GETs over ~1 s; comments must reset the idle timeout\nlogs:\n%s", n, logs)
		}
		if err := c.Err(); err != nil {
			t.Errorf("connection failed: %v", err)
		}
	})
	t.Run("a GET whose headers never come is reconnected", func(t *testing.T) {
		f := newFakeStreamable(t)
		f.get = func(w http.ResponseWriter, r *http.Request, _ *jsonrpc.Message, sess *fakeSession) {
			f.hold(r, sess) // accepted, but not a byte: no status line, no headers
		}
		c, logs := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP, StreamIdleTimeout: idle}, nil)
		select {
		case <-c.Done():
			t.Fatalf("connection failed: %v", c.Err())
		default:
		}
		deadline := time.Now().Add(3 * time.Second)
		for f.count(isGET) < 2 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if n := f.count(isGET); n < 2 {
			t.Errorf("a GET silent for 3 s (10× StreamIdleTimeout) before its headers was never given up and reconnected (%d GETs)\nlogs:\n%s", n, logs)
		}
	})
	t.Run("a silent stream is reconnected", func(t *testing.T) {
		f := newFakeStreamable(t)
		c, logs := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP, StreamIdleTimeout: idle}, nil)
		waitFor(t, 5*time.Second, "a reconnect of the silent stream", func() bool { return f.count(isGET) >= 2 })
		gets := f.requests(isGET)
		if gap := gets[1].at.Sub(gets[0].at); gap < idle {
			t.Errorf("reconnected %v after opening; the idle timeout is %v\nlogs:\n%s", gap, idle, logs)
		}
		if err := c.Err(); err != nil {
			t.Errorf("connection failed: %v", err)
		}
		if _, err := callTool(context.Background(), c, "echo", `{}`); err != nil {
			t.Errorf("a call after the reconnect: %v", err)
		}
	})
}

func TestStreamableGET405MeansNoStream(t *testing.T) {
	f := newFakeStreamable(t)
	f.get = func(w http.ResponseWriter, r *http.Request, _ *jsonrpc.Message, _ *fakeSession) {
		http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
	}
	c, logs := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP}, nil)
	waitFor(t, 5*time.Second, "the GET", func() bool { return f.count(isGET) >= 1 })
	for range 3 {
		if _, err := callTool(context.Background(), c, "echo", `{}`); err != nil {
			t.Fatalf("a call without a standalone stream: %v", err)
		}
	}
	// Longer than the first two reconnect delays would be.
	<-time.After(1200 * time.Millisecond)
	if n := f.count(isGET); n != 1 {
		t.Errorf("%d GETs after a 405; it means no stream, not retry\nlogs:\n%s", n, logs)
	}
	select {
	case <-c.Done():
		t.Errorf("the connection ended: %v", c.Err())
	default:
	}
}

func TestStreamableGETRetryBudget(t *testing.T) {
	for _, tc := range []struct {
		name string
		get  func(w http.ResponseWriter)
	}{
		{"503", func(w http.ResponseWriter) { http.Error(w, "overloaded", http.StatusServiceUnavailable) }},
		{"empty stream", func(w http.ResponseWriter) { startSSE(w) }},
		// The same event id again is no progress: nothing new arrived.
		{"same event id each time", func(w http.ResponseWriter) { startSSE(w); writeSSE(w, "id: g1\nretry: 300\ndata: \n\n") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeStreamable(t)
			f.get = func(w http.ResponseWriter, r *http.Request, _ *jsonrpc.Message, _ *fakeSession) { tc.get(w) }
			const retries = 2
			c, logs := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP, StreamMaxRetries: retries}, nil)
			select {
			case <-c.Done():
			case <-time.After(6 * time.Second):
				t.Fatalf("Done never closed after %d fruitless reconnects (StreamMaxRetries %d)", f.count(isGET)-1, retries)
			}
			if err := c.Err(); !errors.Is(err, ErrStreamFailed) {
				t.Errorf("Err() = %v, want ErrStreamFailed", err)
			}
			gets := f.requests(isGET)
			if len(gets) != retries+1 {
				t.Errorf("%d GETs, want the first plus %d retries\nlogs:\n%s", len(gets), retries, logs)
			}
			for i := 1; i < len(gets); i++ {
				if gap := gets[i].at.Sub(gets[i-1].at); gap < 200*time.Millisecond {
					t.Errorf("retry %d came %v after the previous try: no backoff", i, gap)
				}
			}
			if _, err := callTool(context.Background(), c, "echo", `{}`); !errors.Is(err, ErrStreamFailed) {
				t.Errorf("a call on the failed connection got %v", err)
			}
		})
	}
}

func TestStreamableGETStreamResumesWithLastEventID(t *testing.T) {
	f := newFakeStreamable(t)
	var opened []time.Time
	var mu sync.Mutex
	f.get = func(w http.ResponseWriter, r *http.Request, _ *jsonrpc.Message, sess *fakeSession) {
		mu.Lock()
		n := len(opened)
		mu.Unlock()
		startSSE(w)
		if n == 0 {
			writeSSE(w, "id: g1\nretry: 300\n"+sseData(jsonrpc.NewNotification("notifications/message", json.RawMessage(`{"level":"info","data":"first"}`))))
			mu.Lock()
			opened = append(opened, time.Now()) // the close
			mu.Unlock()
			return
		}
		mu.Lock()
		opened = append(opened, time.Now())
		mu.Unlock()
		writeSSE(w, "id: g2\n"+sseData(jsonrpc.NewNotification("notifications/message", json.RawMessage(`{"level":"info","data":"second"}`))))
		f.hold(r, sess)
	}
	rec := newRecorder()
	c, logs := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP}, rec)
	waitFor(t, 5*time.Second, "both notifications", func() bool { return len(rec.notifications("notifications/message")) == 2 })
	gets := f.requests(isGET)
	if len(gets) != 2 || gets[0].header.Get("Last-Event-ID") != "" || gets[1].header.Get("Last-Event-ID") != "g1" {
		t.Fatalf("GETs %+v: the second must resume with Last-Event-ID g1\nlogs:\n%s", gets, logs)
	}
	mu.Lock()
	delay := gets[1].at.Sub(opened[0])
	mu.Unlock()
	if delay < 250*time.Millisecond || delay > 500*time.Millisecond {
		t.Errorf("the GET stream was reopened %v after it closed; retry: 300 asks for 300 ms", delay)
	}
	if rel := rec.relatedOf("notifications/message"); rel[0] != nil || rel[1] != nil {
		t.Errorf("GET stream notifications had related %q", rel)
	}
	if st := c.State(); st.LastEventIDs[getStreamKey] != "g2" || st.SessionID != "s1" {
		t.Errorf("State %+v, want session s1 and the GET stream at g2", st)
	}
}

// A POST stream whose resumption keeps failing fails its call with
// ErrStreamFailed after StreamMaxRetries tries; the connection lives on.
func TestStreamablePOSTStreamResumeBudget(t *testing.T) {
	f := newFakeStreamable(t)
	f.tools["poll"] = func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, _ *fakeSession) {
		startSSE(w)
		writeSSE(w, "id: p1\nretry: 100\ndata: \n\n")
	}
	f.get = func(w http.ResponseWriter, r *http.Request, _ *jsonrpc.Message, sess *fakeSession) {
		if r.Header.Get("Last-Event-ID") == "" {
			f.holdGET(w, r, sess)
			return
		}
		http.Error(w, "replay failed", http.StatusServiceUnavailable)
	}
	const retries = 3
	c, logs := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP, StreamMaxRetries: retries}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := callTool(ctx, c, "poll", `{}`)
	if !errors.Is(err, ErrStreamFailed) {
		t.Fatalf("poll: %v, want ErrStreamFailed\nlogs:\n%s", err, logs)
	}
	if n := f.count(func(s seenReq) bool { return isGET(s) && s.header.Get("Last-Event-ID") == "p1" }); n != retries {
		t.Errorf("%d resuming GETs, want StreamMaxRetries = %d", n, retries)
	}
	if c.Err() != nil {
		t.Errorf("one lost stream ended the connection: %v", c.Err())
	}
	if _, err := callTool(ctx, c, "echo", `{}`); err != nil {
		t.Errorf("a later call: %v", err)
	}
}
