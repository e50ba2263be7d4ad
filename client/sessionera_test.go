package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// initOnly is an HTTP server that answers initialize as answer says and
// everything else as a server of the stateless era alone answers a
// session-era client (405 for GET, 400 for the rest); it records every
// request as "METHOD rpc-method".
type initOnly struct {
	answer func(w http.ResponseWriter, m *jsonrpc.Message)
	mu     sync.Mutex
	seen   []string
}

func (s *initOnly) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	m, _ := jsonrpc.Decode(body)
	what := r.Method
	if m != nil {
		what += " " + m.Method
	}
	s.mu.Lock()
	s.seen = append(s.seen, what)
	s.mu.Unlock()
	switch {
	case r.Method == http.MethodGet:
		w.WriteHeader(http.StatusMethodNotAllowed)
	case m != nil && m.Method == "initialize":
		s.answer(w, m)
	case m != nil && m.IsNotification():
		w.WriteHeader(http.StatusAccepted)
	default:
		http.Error(w, "Bad Request", http.StatusBadRequest)
	}
}

func (s *initOnly) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

const initResult = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}`

// TestSessionEraConnection: a connection made for the session era opens
// with initialize (never server/discover) and keeps a session the server
// gave an id; a server that refuses the session, answers without an id,
// or answers a version of the other era lacks the session era
// (ErrNoSessionEra, with no fallback to the legacy transport), while a
// refusal that may pass does not say so.
func TestSessionEraConnection(t *testing.T) {
	for _, tt := range []struct {
		name      string
		transport string
		answer    func(w http.ResponseWriter, m *jsonrpc.Message)
		noSession bool // the connection must fail with ErrNoSessionEra
		fails     bool // it must fail, for another reason
	}{
		{name: "a session", answer: func(w http.ResponseWriter, m *jsonrpc.Message) {
			w.Header().Set("Mcp-Session-Id", "abc")
			writeJSONMsg(w, jsonrpc.NewResponse(m.ID, []byte(initResult)))
		}},
		{name: "no session id", noSession: true, answer: func(w http.ResponseWriter, m *jsonrpc.Message) {
			writeJSONMsg(w, jsonrpc.NewResponse(m.ID, []byte(initResult)))
		}},
		{name: "400, auto transport", noSession: true, answer: func(w http.ResponseWriter, m *jsonrpc.Message) {
			http.Error(w, "Bad Request", http.StatusBadRequest)
		}},
		{name: "405, streamable-http", transport: TransportStreamableHTTP, noSession: true, answer: func(w http.ResponseWriter, m *jsonrpc.Message) {
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		}},
		{name: "method not found", noSession: true, answer: func(w http.ResponseWriter, m *jsonrpc.Message) {
			writeJSONMsg(w, jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found")))
		}},
		{name: "a 2026-07-28 answer", noSession: true, answer: func(w http.ResponseWriter, m *jsonrpc.Message) {
			w.Header().Set("Mcp-Session-Id", "abc")
			writeJSONMsg(w, jsonrpc.NewResponse(m.ID, []byte(`{"protocolVersion":"2026-07-28","capabilities":{}}`)))
		}},
		{name: "429 passes", fails: true, answer: func(w http.ResponseWriter, m *jsonrpc.Message) {
			http.Error(w, "Too Many Requests", http.StatusTooManyRequests)
		}},
		{name: "internal error passes", fails: true, answer: func(w http.ResponseWriter, m *jsonrpc.Message) {
			writeJSONMsg(w, jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInternalError, "busy")))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := &initOnly{answer: tt.answer}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			c := New(Config{Name: "up", URL: ts.URL + "/mcp", Transport: tt.transport, SessionEra: true, Logger: slog.New(slog.DiscardHandler)}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := c.Start(ctx)
			defer c.Close()
			switch {
			case tt.noSession && !errors.Is(err, ErrNoSessionEra):
				t.Fatalf("Start = %v, want ErrNoSessionEra", err)
			case tt.fails && (err == nil || errors.Is(err, ErrNoSessionEra)):
				t.Fatalf("Start = %v, want a failure that is not ErrNoSessionEra", err)
			case !tt.noSession && !tt.fails && err != nil:
				t.Fatalf("Start = %v", err)
			}
			seen := srv.requests()
			if len(seen) == 0 || seen[0] != "POST initialize" {
				t.Fatalf("requests %v, want initialize first", seen)
			}
			for _, r := range seen {
				if strings.HasPrefix(r, "GET") && err != nil {
					t.Errorf("requests %v: a refused session-era connection tried the legacy transport", seen)
				}
				if r == "POST server/discover" {
					t.Errorf("requests %v: a session-era connection asked server/discover", seen)
				}
			}
		})
	}
}

// TestSessionEraRenewalWithoutSession: a session-era connection whose
// session expires, and whose server now answers initialize without a
// session, ends with ErrNoSessionEra rather than go on without one.
func TestSessionEraRenewalWithoutSession(t *testing.T) {
	f := newFakeStreamable(t)
	f.expire = map[string]int{"s1": 1}
	f.stateless = func(n int) bool { return n > 1 }
	c, logs := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP, SessionEra: true}, newRecorder())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := callTool(ctx, c, "echo", `{}`); err == nil {
		t.Fatalf("a call on a session renewed without an id succeeded\nlogs:\n%s", logs)
	}
	select {
	case <-c.Done():
	case <-ctx.Done():
		t.Fatalf("the connection did not end\nlogs:\n%s", logs)
	}
	if err := c.Err(); !errors.Is(err, ErrNoSessionEra) {
		t.Errorf("Err = %v, want ErrNoSessionEra", err)
	}
}

// TestSessionEraRenewalRace: two calls see their session expire together;
// the renewal finds the server keeping no sessions and ends the
// connection, and the call that waited for it fails too rather than go
// out without a session.
func TestSessionEraRenewalRace(t *testing.T) {
	var inits, expired, sessionless atomic.Int32
	bothExpired := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m, _ := jsonrpc.Decode(body)
		sid := r.Header.Get("Mcp-Session-Id")
		switch {
		case r.Method != http.MethodPost:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case m != nil && m.Method == "initialize":
			if inits.Add(1) == 1 {
				w.Header().Set("Mcp-Session-Id", "s1")
			} else {
				// The renewal answers once both calls have seen the
				// session gone, so both wait for it.
				select {
				case <-bothExpired:
				case <-r.Context().Done():
					return
				}
			}
			writeJSONMsg(w, jsonrpc.NewResponse(m.ID, []byte(initResult)))
		case m != nil && m.IsNotification():
			w.WriteHeader(http.StatusAccepted)
		case sid == "s1":
			if expired.Add(1) == 2 {
				close(bothExpired)
			}
			http.Error(w, "session not found", http.StatusNotFound)
		default:
			sessionless.Add(1)
			writeJSONMsg(w, jsonrpc.NewResponse(m.ID, []byte(`{"content":[]}`)))
		}
	}))
	defer srv.Close()
	c := New(Config{Name: "up", URL: srv.URL + "/mcp", Transport: TransportStreamableHTTP, SessionEra: true, Logger: slog.New(slog.DiscardHandler)}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = c.Call(ctx, "tools/call", json.RawMessage(`{"name":"x","arguments":{}}`))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			t.Errorf("call %d succeeded on a connection whose session could not be renewed", i)
		}
	}
	if n := sessionless.Load(); n != 0 {
		t.Errorf("%d calls went out without a session", n)
	}
	if err := c.Err(); !errors.Is(err, ErrNoSessionEra) {
		t.Errorf("Err = %v, want ErrNoSessionEra", err)
	}
}
