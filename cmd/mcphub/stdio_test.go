package main

// mcphub stdio, the stdio face: a stdio client's session relayed to the
// hub's Streamable HTTP endpoint. These tests run the face in this process
// against a hub in this process; stdio_restart_test.go runs `mcphub stdio`
// as a process against `mcphub serve` processes, and stdio_ts_test.go drives
// it with the official TypeScript SDK client.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/stdioface"
)

// TestStdioFaceRelay: through the face, tools/list and a call reach the
// hub; a call's progress arrives with the client's own token before its
// result; a list_changed passes through; every line on stdout is one
// JSON-RPC message; and stdin's end closes the face (nil) and the hub
// session.
func TestStdioFaceRelay(t *testing.T) {
	f := startInproc(t, childServer(t, "a", childOpts{}), hubConfig{store: fullStore})
	face := startInprocFace(t, f.url, "/mcp", nil)
	init := face.initialize()
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct {
			Name string `json:"name"`
		} `json:"serverInfo"`
	}
	if err := json.Unmarshal(init.Result, &res); err != nil || res.ProtocolVersion != sessionVersion || res.ServerInfo.Name == "" {
		t.Fatalf("initialize result %s (%v): want the hub's, at %s", init.Result, err, sessionVersion)
	}

	if names := face.tools(); !slices.Contains(names, "a__echo") || !slices.Contains(names, "a__progress") {
		t.Fatalf("tools/list = %v, want a__echo and a__progress", names)
	}
	if got := face.tool("a__echo", map[string]any{"text": "hi"}); got != "a:hi" {
		t.Fatalf("a__echo = %q, want a:hi", got)
	}

	// Progress carries the client's own token, and comes before the result.
	resp := face.await(face.send(77, "tools/call", progressCall("a__progress", map[string]any{"tag": "p", "n": 3}, "tok-p")), 20*time.Second, "a__progress")
	if resp.Error != nil {
		t.Fatalf("a__progress: %s", resp.Encode())
	}
	notes, at := face.messages(func(m *jsonrpc.Message) bool { _, ok := progressOf(m); return ok })
	_, respAt := face.messages(func(m *jsonrpc.Message) bool { return m.IsResponse() && string(m.ID) == "77" })
	if len(notes) != 3 {
		t.Fatalf("got %d progress notifications, want 3", len(notes))
	}
	for i, n := range notes {
		p, _ := progressOf(n)
		if p.Token != "tok-p" || p.Message != fmt.Sprintf("p/%d", i) || at[i] > respAt[0] {
			t.Errorf("progress %d: %s at %d (result at %d); want token tok-p, message p/%d, before the result", i, n.Params, at[i], respAt[0], i)
		}
	}

	// An upstream's tool list change reaches the client.
	face.tool("a__mutate", map[string]any{"add": []string{"x1"}})
	if !poll(10*time.Second, func() bool {
		got, _ := face.messages(func(m *jsonrpc.Message) bool { return m.Method == "notifications/tools/list_changed" })
		return len(got) > 0
	}) {
		t.Fatal("notifications/tools/list_changed did not reach the client")
	}
	if names := face.tools(); !slices.Contains(names, "a__x1") {
		t.Errorf("tools/list after list_changed = %v, want a__x1", names)
	}

	if n := len(f.h.Sessions()); n != 1 {
		t.Fatalf("the hub has %d sessions, want the face's one", n)
	}
	if err := face.closeStdin(t); err != nil {
		t.Fatalf("the face ended with %v, want nil at stdin's end", err)
	}
	if !poll(5*time.Second, func() bool { return len(f.h.Sessions()) == 0 }) {
		t.Errorf("the hub session outlived the face: %+v", f.h.Sessions())
	}
	if bad := face.badLines(); len(bad) > 0 {
		t.Errorf("stdout lines that are not one JSON-RPC message: %q", bad)
	}
}

// askServer is an upstream whose tool ask sends a sampling request and
// reports the client's answer, or the JSON-RPC code and message of its
// error.
func askServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "ask", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, in sampleIn) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 16,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Prompt}}}})
		var werr *sdkjsonrpc.Error
		switch {
		case errors.As(err, &werr):
			return textResult(fmt.Sprintf("code=%d message=%s", werr.Code, werr.Message)), nil, nil
		case err != nil:
			return nil, nil, err
		}
		tc, _ := res.Content.(*mcp.TextContent)
		if tc == nil {
			return nil, nil, fmt.Errorf("sampling answered %T, not text", res.Content)
		}
		return textResult("answer=" + tc.Text), nil, nil
	})
	return s
}

// TestStdioFaceServerRequests: a sampling request of an upstream reaches
// the client under the face's own id and the client's answer reaches the
// upstream; a JSON-RPC error the client answers with reaches the upstream
// with its code and message; a cancellation from the client reaches the
// upstream's call, and the cancelled call gets no response.
func TestStdioFaceServerRequests(t *testing.T) {
	up := startUpstream(t, "c", upstreamOpts{server: askServer()})
	f := startInproc(t, childServer(t, "a", childOpts{})+remoteServer("c", up.url, ""), hubConfig{store: fullStore})
	sample := samplingAnswer("from-client")
	face := startInprocFace(t, f.url, "/mcp", func(m *jsonrpc.Message) *jsonrpc.Message {
		if bytes.Contains(m.Params, []byte(`"refuse"`)) {
			return jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(-32042, "the user declined").WithData(json.RawMessage(`{"why":"test"}`)))
		}
		return sample(m)
	})
	face.initialize()

	if got := face.tool("a__sample", map[string]any{"prompt": "p1"}); got != "sampled:from-client|p1" {
		t.Errorf("a__sample (stdio upstream) = %q, want sampled:from-client|p1", got)
	}
	if got := face.tool("c__ask", map[string]any{"prompt": "p2"}); got != "answer=from-client|p2" {
		t.Errorf("c__ask (HTTP upstream) = %q, want answer=from-client|p2", got)
	}
	if got := face.tool("c__ask", map[string]any{"prompt": "refuse"}); got != "code=-32042 message=the user declined" {
		t.Errorf("c__ask answered with an error = %q, want the client's code and message", got)
	}
	asks, _ := face.messages(func(m *jsonrpc.Message) bool { return m.Method == "sampling/createMessage" })
	// The face numbers the requests it sends the client itself, from 1.
	last := int64(0)
	for _, m := range asks {
		n, ok := jsonrpc.ParseIntID(m.ID)
		if !ok || n <= last {
			t.Errorf("sampling request ids %s after %d: want the face's own, increasing", m.ID, last)
		}
		last = n
	}
	if len(asks) != 3 {
		t.Errorf("the client saw %d sampling requests, want 3", len(asks))
	}

	// Cancellation from the client.
	pending := face.send(500, "tools/call", map[string]any{"name": "a__block", "arguments": map[string]any{"tag": "cx"}})
	if !poll(10*time.Second, func() bool { return slices.Contains(face.state("a__state").Inflight, "cx") }) {
		t.Fatal("the blocking call never reached the upstream")
	}
	face.notify("notifications/cancelled", map[string]any{"requestId": 500, "reason": "the user pressed stop"})
	if !poll(10*time.Second, func() bool { return slices.Contains(face.state("a__state").Cancelled, "cx") }) {
		t.Fatal("the upstream never saw the cancellation")
	}
	if !holds(300*time.Millisecond, func() bool { return len(pending) == 0 }) {
		t.Errorf("the cancelled call got a response: %s", (<-pending).Encode())
	}
	if bad := face.badLines(); len(bad) > 0 {
		t.Errorf("stdout lines that are not one JSON-RPC message: %q", bad)
	}
}

// TestStdioFaceBeforeInitialize: before initialize, ping is answered and
// any other request refused with a JSON-RPC error, as a 2026 client probing
// with server/discover expects; a line that is not JSON gets a parse error.
func TestStdioFaceBeforeInitialize(t *testing.T) {
	f := startInproc(t, childServer(t, "a", childOpts{}), hubConfig{store: fullStore})
	face := startInprocFace(t, f.url, "/mcp", nil)
	if m := face.request("ping", nil); m.Error != nil {
		t.Errorf("ping before initialize: %s", m.Encode())
	}
	if m := face.request("server/discover", map[string]any{}); m.Error == nil {
		t.Errorf("server/discover before initialize: %s, want an error", m.Encode())
	}
	face.in.Write([]byte("this is not json\n"))
	if !poll(5*time.Second, func() bool {
		got, _ := face.messages(func(m *jsonrpc.Message) bool {
			return m.Error != nil && m.Error.Code == jsonrpc.CodeParseError && string(m.ID) == "null"
		})
		return len(got) == 1
	}) {
		t.Errorf("a line that is not JSON got no parse error")
	}
	face.initialize()
	if got := face.tool("a__echo", map[string]any{"text": "after"}); got != "a:after" {
		t.Errorf("a__echo = %q", got)
	}
}

// TestStdioFaceSessionLost: when the hub no longer knows the session (it
// answers 404), the next call starts a fresh session with the client's
// initialize parameters and succeeds, and stderr says so.
func TestStdioFaceSessionLost(t *testing.T) {
	f := startInproc(t, childServer(t, "a", childOpts{}), hubConfig{store: fullStore})
	face := startInprocFace(t, f.url, "/mcp", nil)
	face.initialize()
	face.tool("a__echo", map[string]any{"text": "one"})
	before := f.h.Sessions()
	if len(before) != 1 || !f.h.EndSession(before[0].ID) {
		t.Fatalf("could not end the face's session: %+v", before)
	}
	if got := face.tool("a__echo", map[string]any{"text": "two"}); got != "a:two" {
		t.Fatalf("a__echo after the session was lost = %q, want a:two", got)
	}
	after := f.h.Sessions()
	if len(after) != 1 || after[0].ID == before[0].ID || after[0].Client != "line-client" {
		t.Errorf("sessions after the loss: %+v, want one new session of line-client", after)
	}
	if !strings.Contains(face.logs.String(), "no longer knew this session") {
		t.Errorf("stderr does not say the session was renewed:\n%s", face.logs.String())
	}
}

// TestStdioFaceGivesUp: a hub that does not come back within the give-up
// time ends the face with an error (the command then exits 1), and a call
// waiting for the hub is not left hanging.
func TestStdioFaceGivesUp(t *testing.T) {
	f := startInproc(t, childServer(t, "a", childOpts{}), hubConfig{store: fullStore})
	face := startInprocFace(t, f.url, "/mcp", nil, func(c *stdioface.Options) { c.GiveUp = time.Second })
	face.initialize()
	f.close()
	face.send(5, "tools/call", map[string]any{"name": "a__echo", "arguments": map[string]any{"text": "x"}})
	select {
	case err := <-face.done:
		face.done <- err // for cleanup
		if err == nil || !strings.Contains(err.Error(), "no hub has answered") {
			t.Errorf("the face ended with %v, want that no hub answered", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the face did not give up within 20 s")
	}
	select {
	case <-face.eof:
	case <-time.After(5 * time.Second):
		t.Error("stdout did not end with the face")
	}
}

// TestStdioFaceOneServer: with --server's path, the face relays to one
// server's own endpoint, with the server's own tool names.
func TestStdioFaceOneServer(t *testing.T) {
	f := startInproc(t, childServer(t, "a", childOpts{}), hubConfig{store: fullStore})
	face := startInprocFace(t, f.url, "/a/mcp", nil)
	face.initialize()
	if names := face.tools(); !slices.Contains(names, "echo") || slices.Contains(names, "a__echo") {
		t.Errorf("tools/list on /a/mcp = %v, want the server's own names", names)
	}
	if got := face.tool("echo", map[string]any{"text": "own"}); got != "a:own" {
		t.Errorf("echo = %q, want a:own", got)
	}
}

// TestStdioUnknownServer: --server names a server the registry lacks; the
// command says so on stderr, writes nothing on stdout and exits 1 without
// starting a hub.
func TestStdioUnknownServer(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "hub.toml")
	if err := os.WriteFile(cfg, []byte("[hub]\nlisten = \""+freeAddr(t)+"\"\n\n"+childServer(t, "a", childOpts{})), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"--config", cfg, "--data-dir", filepath.Join(dir, "data"), "stdio", "--server", "nope"}, &stdout, &stderr)
	if code != 1 || stdout.Len() > 0 || !strings.Contains(stderr.String(), `no server "nope"`) {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, and the unknown server named", code, stdout.String(), stderr.String())
	}
	if _, err := hubclient.ReadRunInfo(filepath.Join(dir, "data")); err == nil {
		t.Errorf("a hub was started for an unknown server")
	}
}
