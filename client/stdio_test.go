package client

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/testkit"
)

// recorder is a Handler that keeps what the server sent on its own.
type recorder struct {
	mu       sync.Mutex
	notes    []*jsonrpc.Message
	related  []json.RawMessage
	requests []*jsonrpc.Message
	answer   func(*jsonrpc.Message) (json.RawMessage, error)
	notify   chan struct{}
}

func newRecorder() *recorder { return &recorder{notify: make(chan struct{}, 1024)} }

func (r *recorder) HandleNotification(m *jsonrpc.Message, related json.RawMessage) {
	r.mu.Lock()
	r.notes = append(r.notes, m)
	r.related = append(r.related, related)
	r.mu.Unlock()
	r.notify <- struct{}{}
}

func (r *recorder) HandleRequest(_ context.Context, m *jsonrpc.Message, _ json.RawMessage) (json.RawMessage, error) {
	r.mu.Lock()
	r.requests = append(r.requests, m)
	answer := r.answer
	r.mu.Unlock()
	if answer == nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "no")
	}
	return answer(m)
}

func (r *recorder) notifications(method string) []*jsonrpc.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*jsonrpc.Message
	for _, n := range r.notes {
		if n.Method == method {
			out = append(out, n)
		}
	}
	return out
}

func startFake(t *testing.T, mode string, h Handler) (*Conn, *testkit.SyncBuffer) {
	t.Helper()
	logs := &testkit.SyncBuffer{}
	cfg := fakeStdioConfig(t, mode)
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := New(cfg, h)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("Start: %v\nlogs:\n%s", err, logs)
	}
	t.Cleanup(func() { c.Close() })
	return c, logs
}

func callTool(ctx context.Context, c *Conn, name string, args string) (json.RawMessage, error) {
	return c.Call(ctx, "tools/call", json.RawMessage(`{"name":"`+name+`","arguments":`+args+`,"_meta":{"progressToken":"tok-1"}}`))
}

func TestStdioHandshakeCallAndMisbehaviour(t *testing.T) {
	rec := newRecorder()
	c, logs := startFake(t, "normal", rec)
	init := c.Initialize()
	if init.ServerInfo.Name != "fake" || init.ProtocolVersion != jsonrpc.LatestSessionVersion || init.Instructions != "be kind" {
		t.Fatalf("initialize result %+v", init)
	}
	if c.Transport() != TransportStdio || c.PID() == 0 {
		t.Fatalf("transport %q pid %d", c.Transport(), c.PID())
	}
	ctx := context.Background()
	res, err := callTool(ctx, c, "echo", `{"x":[1, 2]}`)
	if err != nil || !strings.Contains(string(res), `{\"x\":[1, 2]}`) {
		t.Fatalf("echo: %s %v", res, err)
	}
	if _, err := callTool(ctx, c, "progress", `{}`); err != nil {
		t.Fatal(err)
	}
	if got := rec.notifications("notifications/progress"); len(got) != 3 {
		t.Fatalf("got %d progress notifications, want 3 delivered before the result", len(got))
	}
	var rpcErr *jsonrpc.Error
	if _, err := callTool(ctx, c, "nope", `{}`); !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("an upstream JSON-RPC error must pass through unchanged; got %v", err)
	}
	l := logs.String()
	if !strings.Contains(l, "not a JSON-RPC message") || !strings.Contains(l, "this line is not JSON") {
		t.Errorf("the malformed stdout line was not logged:\n%s", l)
	}
	if !strings.Contains(l, "fake: starting up") || !strings.Contains(l, "stream=stderr") {
		t.Errorf("stderr was not logged under the server's name:\n%s", l)
	}
}

func TestStdioServerToClientRequest(t *testing.T) {
	rec := newRecorder()
	rec.answer = func(m *jsonrpc.Message) (json.RawMessage, error) {
		return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"sampled"}}`), nil
	}
	c, _ := startFake(t, "normal", rec)
	res, err := callTool(context.Background(), c, "sample", `{}`)
	if err != nil || !strings.Contains(string(res), "sampled") {
		t.Fatalf("sample: %s %v", res, err)
	}
	if len(rec.requests) != 1 || rec.requests[0].Method != "sampling/createMessage" {
		t.Fatalf("handler saw %v", rec.requests)
	}
}

func TestStdioChildEnvironmentIsMinimal(t *testing.T) {
	t.Setenv("MCPHUB_TEST_LEAK", "must-not-reach-the-child")
	c, _ := startFake(t, "normal", nil)
	res, err := callTool(context.Background(), c, "env", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Content []struct{ Text string } `json:"content"`
	}
	json.Unmarshal(res, &out)
	names := map[string]bool{}
	for _, kv := range strings.Split(out.Content[0].Text, "\n") {
		k, _, _ := strings.Cut(kv, "=")
		names[k] = true
	}
	want := map[string]bool{"FAKE_SECRET": true, "MCPHUB_FAKE_SERVER": true}
	p, _ := policyFor(&Config{})
	for _, kv := range os.Environ() {
		if k, _, ok := splitEnv(kv); ok {
			if in, _ := p.inherits(k); in {
				want[k] = true
			}
		}
	}
	for k := range want {
		if !names[k] {
			t.Errorf("child lacks %s", k)
		}
	}
	for k := range names {
		if !want[k] {
			t.Errorf("child environment holds %s, which the registry did not give it", k)
		}
	}
}

func TestStdioCrashFailsPendingCallsAtOnce(t *testing.T) {
	c, _ := startFake(t, "normal", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hung := make(chan error, 1)
	go func() {
		_, err := callTool(ctx, c, "hang", `{}`)
		hung <- err
	}()
	// Give the hanging call time to be written before the crash; its
	// result can only come from the crash.
	if _, err := callTool(ctx, c, "echo", `{}`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := callTool(ctx, c, "crash", `{}`)
	var exit *ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("crash: err %v, want *ExitError", err)
	}
	if !strings.Contains(exit.Status, "exit status 3") || !strings.Contains(strings.Join(exit.Stderr, "\n"), "crashed on purpose") {
		t.Fatalf("exit error lacks status or stderr: %v", exit)
	}
	select {
	case err := <-hung:
		if !errors.As(err, &exit) {
			t.Fatalf("pending call got %v, want the exit error", err)
		}
	case <-ctx.Done():
		t.Fatal("the pending call was not failed when the server exited")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("failing pending calls took %v", d)
	}
	select {
	case <-c.Done():
	default:
		t.Error("Done is not closed after the process exited")
	}
	if _, err := callTool(ctx, c, "echo", `{}`); !errors.As(err, &exit) {
		t.Errorf("a call after the exit got %v", err)
	}
}

func TestStdioOversizedLineIsSkipped(t *testing.T) {
	cfg := fakeStdioConfig(t, "normal")
	cfg.MaxMessageBytes = 1024
	logs := &testkit.SyncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	c := New(cfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := callTool(ctx, c, "huge", `{}`); err != nil {
		t.Fatalf("the call after an oversized line failed: %v", err)
	}
	if !strings.Contains(logs.String(), "over the size limit") {
		t.Errorf("the oversized line was not reported:\n%s", logs)
	}
}

func TestCallCancellationSendsCancelled(t *testing.T) {
	c, _ := startFake(t, "normal", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := callTool(ctx, c, "hang", `{}`)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hang: %v", err)
	}
	// The connection is still usable afterwards.
	if _, err := callTool(context.Background(), c, "echo", `{}`); err != nil {
		t.Fatal(err)
	}
}

// grandchildPID asks a fake server in mode "spawn" for its grandchild's PID
// and stops the grandchild by that PID at cleanup if it still runs.
func grandchildPID(t *testing.T, c *Conn) int {
	t.Helper()
	res, err := callTool(context.Background(), c, "grandchild", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(res, &out); err != nil || len(out.Content) != 1 {
		t.Fatalf("grandchild: %s %v", res, err)
	}
	pid, err := strconv.Atoi(out.Content[0].Text)
	if err != nil || pid <= 0 {
		t.Fatalf("grandchild: %s %v", res, err)
	}
	t.Cleanup(func() {
		if !processGone(pid) {
			killProcess(pid)
		}
	})
	if processGone(pid) {
		t.Fatalf("grandchild %d is not running", pid)
	}
	return pid
}

// Close stops the server's whole group (process group, job object): a
// grandchild that ignores stdin EOF and SIGTERM does not outlive it.
func TestStdioCloseStopsGrandchild(t *testing.T) {
	c, _ := startFake(t, "spawn", nil)
	gc := grandchildPID(t, c)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the grandchild to stop with the server's group", func() bool { return processGone(gc) })
}

// A server that exits on its own takes what it spawned along.
func TestStdioLeaderExitStopsGrandchild(t *testing.T) {
	c, _ := startFake(t, "spawn", nil)
	gc := grandchildPID(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var exit *ExitError
	if _, err := callTool(ctx, c, "crash", `{}`); !errors.As(err, &exit) {
		t.Fatalf("crash: err %v, want *ExitError", err)
	}
	waitFor(t, 5*time.Second, "the grandchild to stop when the server exited", func() bool { return processGone(gc) })
}
