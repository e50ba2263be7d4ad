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

// idless is a fake server whose POST streams end before their response and
// carry no event id, so they cannot be resumed; fresh, a GET after the
// standalone one, gets what the test scripts.
func idless(t *testing.T, fresh func(w http.ResponseWriter, r *http.Request, pending *jsonrpc.Message, sess *fakeSession)) *fakeStreamable {
	f := newFakeStreamable(t)
	var mu sync.Mutex
	var pending *jsonrpc.Message
	gets := 0
	f.tools["poll"] = func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, _ *fakeSession) {
		mu.Lock()
		pending = m
		mu.Unlock()
		startSSE(w) // and end, without an event
	}
	f.get = func(w http.ResponseWriter, r *http.Request, _ *jsonrpc.Message, sess *fakeSession) {
		mu.Lock()
		gets++
		n, m := gets, pending
		mu.Unlock()
		if n == 1 {
			f.holdGET(w, r, sess)
			return
		}
		fresh(w, r, m, sess)
	}
	return f
}

func freshGETs(f *fakeStreamable) []seenReq { return f.requests(isGET)[1:] }

// A POST stream that ends without its response and without an event id is
// retried once with a fresh GET, where this server delivers the response.
func TestStreamableIdlessStreamAnsweredOnFreshGET(t *testing.T) {
	f := idless(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, _ *fakeSession) {
		startSSE(w)
		writeSSE(w, sseData(jsonrpc.NewResponse(m.ID, json.RawMessage(`{"content":[{"type":"text","text":"polled"}]}`))))
	})
	c, logs := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := callTool(ctx, c, "poll", `{}`)
	if err != nil {
		t.Fatalf("poll: %v\nlogs:\n%s", err, logs)
	}
	if string(res) != `{"content":[{"type":"text","text":"polled"}]}` {
		t.Errorf("poll = %s", res)
	}
	gets := freshGETs(f)
	if len(gets) != 1 || gets[0].header.Get("Last-Event-ID") != "" {
		t.Errorf("fresh GETs %+v, want one without Last-Event-ID", gets)
	}
}

// When the fresh GET does not deliver the response either, the call fails
// after that one try.
func TestStreamableIdlessStreamFailsAfterOneFreshGET(t *testing.T) {
	f := idless(t, func(w http.ResponseWriter, r *http.Request, _ *jsonrpc.Message, _ *fakeSession) {
		startSSE(w) // and end
	})
	c, _ := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := callTool(ctx, c, "poll", `{}`); !errors.Is(err, ErrStreamFailed) {
		t.Fatalf("poll: %v, want ErrStreamFailed", err)
	}
	if n := len(freshGETs(f)); n != 1 {
		t.Errorf("%d fresh GETs, want 1", n)
	}
	if _, err := callTool(ctx, c, "echo", `{}`); err != nil {
		t.Errorf("a later call: %v", err)
	}
}

// A fresh GET that stays open without the response ends when the caller
// stops waiting: nothing keeps working for a call nobody waits for.
func TestStreamableFreshGETEndsWithTheCall(t *testing.T) {
	ended := make(chan struct{})
	f := idless(t, func(w http.ResponseWriter, r *http.Request, _ *jsonrpc.Message, sess *fakeSession) {
		startSSE(w)
		select {
		case <-r.Context().Done():
			close(ended)
		case <-sess.gone:
		}
	})
	c, _ := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := callTool(ctx, c, "poll", `{}`); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("poll: %v, want the caller's deadline", err)
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the fresh GET outlived its call")
	}
	if c.Err() != nil {
		t.Errorf("the connection ended: %v", c.Err())
	}
}

// A server that serves one GET stream per session answers the fresh GET
// with 409 while the standalone stream is open: the call is not failed, and
// gets its response when the server sends it on that stream.
func TestStreamableIdlessStreamWaitsOnTheOpenGET(t *testing.T) {
	var f *fakeStreamable
	refused := make(chan *jsonrpc.Message, 1)
	f = idless(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, _ *fakeSession) {
		http.Error(w, "Conflict: only one GET stream per session", http.StatusConflict)
		refused <- m
	})
	c, logs := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		m := <-refused
		// The response is sent once the client has taken the 409 and
		// decided to wait: a client that failed the call instead never
		// gets here. A log line is the only sign of that decision.
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if strings.Contains(logs.String(), "waiting for the response on the open GET stream") {
				break
			}
		}
		f.push <- sseData(jsonrpc.NewResponse(m.ID, json.RawMessage(`{"content":[]}`)))
	}()
	res, err := callTool(ctx, c, "poll", `{}`)
	if err != nil || string(res) != `{"content":[]}` {
		t.Fatalf("poll = %s, %v; want the response from the open GET stream\nlogs:\n%s", res, err, logs)
	}
}
