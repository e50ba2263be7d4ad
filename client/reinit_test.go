package client

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/testkit"
)

// Re-initialization under stress: calls made while a new session is being
// set up, and a server that loses the new session too.

// Calls issued while the client re-initializes must not go out without a
// session: each either waits for the new session or gets 404 and retries on
// it, so every call succeeds and initialize runs exactly twice.
func TestStreamableCallsDuringReinitialization(t *testing.T) {
	const others = 4
	f := newFakeStreamable(t)
	f.expire = map[string]int{"s1": 1} // notifications/initialized, then forgotten
	reinit := make(chan struct{})
	f.beforeInit = func(n int) {
		if n != 2 {
			return
		}
		close(reinit)
		// Hold the new session's initialize until the other calls have
		// POSTed (or a deadline passes): they are sent mid-renewal.
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) && f.count(func(s seenReq) bool { return s.rpc() == "tools/call" }) < 1+others {
			time.Sleep(5 * time.Millisecond)
		}
	}
	c, logs := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()

	errs := make(chan error, 1+others)
	go func() {
		_, err := callTool(ctx, c, "echo", `{}`) // gets 404 and starts the renewal
		errs <- err
	}()
	select {
	case <-reinit:
	case <-ctx.Done():
		t.Fatal("the client never re-initialized")
	}
	for range others {
		go func() {
			_, err := callTool(ctx, c, "echo", `{}`)
			errs <- err
		}()
	}
	for i := range 1 + others {
		select {
		case err := <-errs:
			if err != nil {
				t.Errorf("call %d during re-initialization failed: %v", i, err)
			}
		case <-ctx.Done():
			t.Fatal("calls never ended")
		}
	}
	if n := f.initCount(); n != 2 {
		t.Errorf("initialize ran %d times, want 2", n)
	}
	for _, s := range f.requests(func(s seenReq) bool { return s.rpc() == "tools/call" }) {
		if s.header.Get("Mcp-Session-Id") == "" {
			t.Errorf("a tools/call was POSTed without Mcp-Session-Id (MCP-Protocol-Version %q) while the session was being renewed",
				s.header.Get("MCP-Protocol-Version"))
		}
	}
	if t.Failed() {
		t.Logf("logs:\n%s", logs)
	}
}

// A server that forgets the new session as soon as it is made: the call that
// triggered the renewal must still end by its deadline with an error, and
// Close must return.
func TestStreamableSessionLostAgainDuringReinitialization(t *testing.T) {
	f := newFakeStreamable(t)
	f.expire = map[string]int{"s1": 1, "s2": 0, "s3": 0, "s4": 0}
	logs := &testkit.SyncBuffer{}
	c := New(Config{Name: "up", URL: f.url, Transport: TransportStreamableHTTP,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	t.Cleanup(func() {
		go func() { closed <- c.Close() }()
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Error("Close hung: a stream reader is stuck in renew")
		}
	})

	callCtx, callCancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer callCancel()
	done := make(chan error, 1)
	go func() {
		_, err := callTool(callCtx, c, "echo", `{}`)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the call succeeded on a session the server never kept")
		}
		if !errors.Is(err, ErrSessionExpired) && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("the call failed with %v, want ErrSessionExpired", err)
		}
	case <-time.After(5 * time.Second):
		inits := f.initCount()
		var trail []string
		for _, s := range f.requests(func(s seenReq) bool { return s.method == http.MethodPost }) {
			trail = append(trail, s.rpc()+"@"+s.header.Get("Mcp-Session-Id"))
		}
		t.Fatalf("the call outlived its 2 s deadline by 3 s (hung); initialize ran %d times; POSTs: %s\nlogs:\n%s", inits, strings.Join(trail, " "), logs)
	}
}

// The ids a connection mints (initialize, its own calls) start far above
// the small ids a relay passes through CallWithID for its client, so a
// re-initialization cannot take the id of a relayed request in flight.
func TestMintedIDsAvoidRelayedOnes(t *testing.T) {
	// An upstream connection's ids start at 1: some servers keep ids in
	// 32 bits.
	c := New(Config{Name: "x", URL: "http://127.0.0.1:1/mcp"}, nil)
	defer c.Close()
	var id int64
	if err := json.Unmarshal(c.NextID(), &id); err != nil || id != 1 {
		t.Fatalf("first minted id of an upstream connection %d (%v), want 1", id, err)
	}
	// A relay's connection mints above what it relays.
	r := New(Config{Name: "x", URL: "http://127.0.0.1:1/mcp", MintAbove: 1 << 40}, nil)
	defer r.Close()
	if err := json.Unmarshal(r.NextID(), &id); err != nil || id <= 1<<40 {
		t.Fatalf("first minted id %d (%v): a relayed client's ids 1, 2, 3 ... could collide", id, err)
	}
}
