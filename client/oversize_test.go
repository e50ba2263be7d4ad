package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/testkit"
)

func TestScanPrefix(t *testing.T) {
	tests := []struct {
		prefix string
		id     string // "" for none
		method bool
		cut    string
	}{
		{`{"jsonrpc":"2.0","id":7,"result":{"content":[{"text":"xxxx`, "7", false, "result"},
		{` { "id" : "a\"b" , "result": [1, {"x": "}"}, "`, `"a\"b"`, false, "result"},
		{`{"jsonrpc":"2.0","result":{"x":"yyyy`, "", false, "result"},
		{`{"jsonrpc":"2.0","id":12`, "", false, "id"}, // 12 may go on: 123
		{`{"jsonrpc":"2.0","id":12,`, "12", false, ""},
		{`{"jsonrpc":"2.0","id":-1.5e3}`, "-1.5e3", false, ""},
		{`{"id":null,"error":{"code":1`, "", false, "error"},
		{`{"id":{"x":1},"result":`, "", false, "result"},
		{`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"pad":"xx`, `"s1"`, true, "params"},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{`, "", true, "params"},
		{`{"\u0069d":3,"result":"`, "3", false, "result"},
		{`{"i\d":3,"result":"`, "", false, "result"},
		{`[{"id":1}]`, "", false, ""},
		{`not json`, "", false, ""},
		{``, "", false, ""},
		{`{"id":1 "result":`, "1", false, ""},
		{`{"id":1,"id":2,"result":"`, "2", false, "result"},
	}
	for _, tt := range tests {
		got := scanPrefix([]byte(tt.prefix))
		if string(got.id) != tt.id || got.method != tt.method || got.cut != tt.cut {
			t.Errorf("scanPrefix(%q) = id %q method %v cut %q; want id %q method %v cut %q", tt.prefix, got.id, got.method, got.cut, tt.id, tt.method, tt.cut)
		}
	}
	if got := scanPrefix([]byte(`{"id":1,"id":2,"result":"`)); got.ids != 2 {
		t.Errorf("two id members counted as %d", got.ids)
	}
}

// Whatever the prefix, scanPrefix does not fail, and the id it reads from
// the start of a valid message (with one id member) is that message's id.
func FuzzScanPrefix(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a\"}b"}]}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","result":{},"id":"x"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1e5,"method":"ping"}`))
	f.Add([]byte(`{"\u0069d":3,"jsonrpc":"2.0","error":{"code":1,"message":"m"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		full := scanPrefix(data)
		m, err := jsonrpc.Decode(data)
		if err != nil || full.ids != 1 {
			for cut := range len(data) {
				scanPrefix(data[:cut])
			}
			return
		}
		if !bytes.Equal(full.id, m.ID) && m.ID != nil && string(m.ID) != "null" {
			t.Fatalf("scanPrefix(%q) read id %q; the message's id is %q", data, full.id, m.ID)
		}
		for cut := range len(data) {
			p := scanPrefix(data[:cut])
			if p.id != nil && !bytes.Equal(p.id, m.ID) {
				t.Fatalf("scanPrefix(%q) read id %q; the message's id is %q", data[:cut], p.id, m.ID)
			}
			if p.method && m.Method == "" {
				t.Fatalf("scanPrefix(%q) saw a method in a response", data[:cut])
			}
		}
	})
}

// startSmall starts the fake stdio server with a small message limit.
func startSmall(t *testing.T, limit int) (*Conn, *testkit.SyncBuffer) {
	t.Helper()
	cfg := fakeStdioConfig(t, "normal")
	cfg.MaxMessageBytes = limit
	logs := &testkit.SyncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	c := New(cfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, logs
}

func bigArgs(size int, kind string) string {
	return fmt.Sprintf(`{"size":%d,"kind":%q}`, size, kind)
}

// A response line over the limit fails its own call at once, with the
// limit in the error, and nothing else; the connection goes on.
func TestStdioOversizedResponseFailsItsCall(t *testing.T) {
	c, logs := startSmall(t, 4096)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hung := make(chan error, 1)
	go func() {
		_, err := callTool(ctx, c, "hang", `{}`)
		hung <- err
	}()
	start := time.Now()
	_, err := callTool(ctx, c, "big", bigArgs(1<<20, "response"))
	if !errors.Is(err, ErrMessageTooLarge) || !strings.Contains(err.Error(), "response over 4096 bytes") {
		t.Fatalf("big: %v, want ErrMessageTooLarge saying response over 4096 bytes\nlogs:\n%s", err, logs)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the call failed after %v", d)
	}
	select {
	case err := <-hung:
		t.Fatalf("a call the oversized line did not answer failed: %v", err)
	default:
	}
	if _, err := callTool(ctx, c, "echo", `{}`); err != nil {
		t.Fatalf("a call after the oversized line: %v", err)
	}
	if !strings.Contains(logs.String(), "failed its call") {
		t.Errorf("the oversized response was not logged:\n%s", logs)
	}
}

// When the start of the line does not tell whose response it is, every call
// in flight fails at once.
func TestStdioOversizedLineWithoutIDFailsAllCalls(t *testing.T) {
	c, _ := startSmall(t, 4096)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hung := make(chan error, 1)
	go func() {
		_, err := callTool(ctx, c, "hang", `{}`)
		hung <- err
	}()
	waitFor(t, 5*time.Second, "the hanging call to be pending", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.pending) == 1
	})
	_, err := callTool(ctx, c, "big", bigArgs(1<<20, "response-id-last"))
	if !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("big: %v, want ErrMessageTooLarge", err)
	}
	select {
	case err := <-hung:
		if !errors.Is(err, ErrMessageTooLarge) {
			t.Fatalf("the call in flight got %v, want ErrMessageTooLarge", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call in flight was not failed")
	}
	if _, err := callTool(ctx, c, "echo", `{}`); err != nil {
		t.Fatalf("a call after the oversized line: %v", err)
	}
}

// A request over the limit is answered with an error, so the server does
// not wait for an answer forever.
func TestStdioOversizedRequestIsAnswered(t *testing.T) {
	c, _ := startSmall(t, 4096)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := callTool(ctx, c, "big", bigArgs(1<<20, "request"))
	if err != nil || !strings.Contains(string(res), "request over 4096 bytes") {
		t.Fatalf("big request: %s %v, want the server told the request was over 4096 bytes", res, err)
	}
}

// The rest of an oversized line is discarded as it is read: a 32 MiB line
// costs the client about its limit in memory, not the line's size.
func TestStdioOversizedLineMemoryIsBounded(t *testing.T) {
	const limit, size = 1 << 20, 32 << 20
	c, _ := startSmall(t, limit)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := callTool(ctx, c, "big", bigArgs(size, "response"))
	d := time.Since(start)
	if !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("big: %v", err)
	}
	// The line is read to its end before the next call is answered.
	if _, err := callTool(ctx, c, "echo", `{}`); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d MiB line over a %d MiB limit: call failed after %v, client allocated %.1f MiB", size>>20, limit>>20, d, float64(alloc)/(1<<20))
	if alloc > 16<<20 {
		t.Errorf("the client allocated %d bytes for a %d-byte line; want about the %d-byte limit", alloc, size, limit)
	}
}

// The error a call gets for an oversized response names the limit, and is
// ErrMessageTooLarge for the bridge to tell.
func TestTooLargeError(t *testing.T) {
	err := tooLarge(1048576)
	if !errors.Is(err, ErrMessageTooLarge) || err.Error() != "upstream message too large: response over 1048576 bytes" {
		t.Errorf("tooLarge = %q", err)
	}
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		t.Error("tooLarge must not look like an upstream JSON-RPC error")
	}
}
