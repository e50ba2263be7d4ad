package client

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/testkit"
)

// The Go SDK's conformance everything-server (installed by scripts/setup) is
// a real MCP server nobody here wrote; these tests run the client against it
// over stdio and over Streamable HTTP.

// everythingServer finds the binary, or skips (fails under CI).
func everythingServer(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("everything-server"); err == nil {
		return p
	}
	if p, err := filepath.Abs(filepath.Join("..", ".cache", "bin", "everything-server")); err == nil {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("everything-server is not installed (scripts/setup installs it into .cache/bin)")
	}
	t.Skip("everything-server is not installed; run scripts/setup")
	return ""
}

// freePort picks a loopback port that is free now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// startEverythingHTTP runs the server on a free port, waits until it
// accepts connections and stops it by its PID at cleanup. A stateless
// server speaks 2026-07-28 (and the session era without server requests);
// a stateful one only the session era.
func startEverythingHTTP(t *testing.T, bin string, stateless bool) string {
	t.Helper()
	addr := "127.0.0.1:" + freePort(t)
	out := &testkit.SyncBuffer{}
	cmd := exec.Command(bin, "-http="+addr, "-stateless="+strconv.FormatBool(stateless))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		killProcess(pid)
		<-exited
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			conn.Close()
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("everything-server exited: %v\n%s", err, out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("everything-server did not listen on %s: %v\n%s", addr, err, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "http://" + addr + "/mcp"
}

// content is the part of a tools/call result the checks look at.
type toolResult struct {
	IsError bool `json:"isError"`
	Content []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Data     string `json:"data"`
		MIMEType string `json:"mimeType"`
		Resource struct {
			URI  string `json:"uri"`
			Text string `json:"text"`
		} `json:"resource"`
	} `json:"content"`
}

func TestEverythingServer(t *testing.T) {
	bin := everythingServer(t)
	for _, mode := range []string{"stdio", "http"} {
		t.Run(mode, func(t *testing.T) {
			// The session era: server-to-client requests travel as
			// requests (TestEverythingServerModern has the other era).
			cfg := Config{Name: "everything", ProtocolVersion: jsonrpc.LatestSessionVersion}
			if mode == "stdio" {
				cfg.Command = bin
			} else {
				cfg.URL = startEverythingHTTP(t, bin, false)
				cfg.Transport = TransportStreamableHTTP
			}
			h := newRelHandler()
			h.answer = func(m *jsonrpc.Message) (json.RawMessage, error) {
				switch m.Method {
				case "sampling/createMessage":
					return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"sampled by the handler"},"model":"test-model","stopReason":"endTurn"}`), nil
				case "elicitation/create":
					return json.RawMessage(`{"action":"accept","content":{"username":"gopher"}}`), nil
				}
				return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, m.Method)
			}
			c, logs := startHTTP(t, cfg, h)
			if init := c.Initialize(); init.ServerInfo.Name != "mcp-conformance-test-server" || init.ProtocolVersion != jsonrpc.LatestSessionVersion {
				t.Fatalf("initialize: %+v", init)
			}
			wantTransport := map[string]string{"stdio": TransportStdio, "http": TransportStreamableHTTP}[mode]
			if c.Transport() != wantTransport {
				t.Fatalf("transport %q", c.Transport())
			}
			runEverything(t, c, h, mode == "http")
			if t.Failed() {
				t.Logf("client logs:\n%s", logs)
			}
		})
	}
}

func runEverything(t *testing.T, c *Conn, h *relHandler, related bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	call := func(name, args string) toolResult {
		t.Helper()
		raw, err := c.Call(ctx, "tools/call", json.RawMessage(`{"name":"`+name+`","arguments":`+args+`}`))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var r toolResult
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("%s: %v in %s", name, err, raw)
		}
		return r
	}

	raw, err := c.Call(ctx, "tools/list", json.RawMessage(`{}`))
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var list struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	json.Unmarshal(raw, &list)
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
		"test_multiple_content_types", "test_error_handling", "test_tool_with_logging", "test_tool_with_progress",
		"test_sampling", "test_elicitation"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}

	if r := call("test_simple_text", `{}`); len(r.Content) != 1 || r.Content[0].Type != "text" || r.Content[0].Text != "This is a simple text response for testing." {
		t.Errorf("test_simple_text: %+v", r)
	}
	if r := call("test_image_content", `{}`); len(r.Content) != 1 || r.Content[0].Type != "image" || r.Content[0].MIMEType != "image/png" || r.Content[0].Data == "" {
		t.Errorf("test_image_content: %+v", r)
	}
	if r := call("test_audio_content", `{}`); len(r.Content) != 1 || r.Content[0].Type != "audio" || r.Content[0].MIMEType != "audio/wav" || r.Content[0].Data == "" {
		t.Errorf("test_audio_content: %+v", r)
	}
	if r := call("test_embedded_resource", `{}`); len(r.Content) != 1 || r.Content[0].Type != "resource" ||
		r.Content[0].Resource.URI != "test://embedded-resource" || r.Content[0].Resource.Text != "This is an embedded resource" {
		t.Errorf("test_embedded_resource: %+v", r)
	}
	if r := call("test_multiple_content_types", `{}`); len(r.Content) != 3 || r.Content[0].Type != "text" || r.Content[1].Type != "image" || r.Content[2].Type != "resource" {
		t.Errorf("test_multiple_content_types: %+v", r)
	}
	if r := call("test_error_handling", `{}`); !r.IsError || len(r.Content) == 0 || !strings.Contains(r.Content[0].Text, "intentionally returns an error") {
		t.Errorf("test_error_handling: want an isError result, got %+v", r)
	}

	if _, err := c.Call(ctx, "logging/setLevel", json.RawMessage(`{"level":"debug"}`)); err != nil {
		t.Fatalf("logging/setLevel: %v", err)
	}
	logsBefore := len(h.notifications("notifications/message"))
	if r := call("test_tool_with_logging", `{}`); r.IsError {
		t.Errorf("test_tool_with_logging: %+v", r)
	}
	var logData []string
	for _, n := range h.notifications("notifications/message")[logsBefore:] {
		var p struct {
			Level string `json:"level"`
			Data  string `json:"data"`
		}
		json.Unmarshal(n.Params, &p)
		logData = append(logData, p.Data)
	}
	if len(logData) < 3 || !slices.Contains(logData, "Tool execution started") || !slices.Contains(logData, "Tool execution completed") {
		t.Errorf("test_tool_with_logging delivered log messages %q, want its three", logData)
	}

	id := c.NextID()
	raw, err = c.CallWithID(ctx, id, "tools/call", json.RawMessage(`{"name":"test_tool_with_progress","arguments":{},"_meta":{"progressToken":"tok-42"}}`))
	if err != nil {
		t.Fatalf("test_tool_with_progress: %v", err)
	}
	var pr toolResult
	json.Unmarshal(raw, &pr)
	if len(pr.Content) != 1 || pr.Content[0].Text != "tok-42" {
		t.Errorf("test_tool_with_progress result: %s", raw)
	}
	progress := h.notifications("notifications/progress")
	var steps []float64
	for _, n := range progress {
		var p struct {
			ProgressToken string  `json:"progressToken"`
			Progress      float64 `json:"progress"`
		}
		json.Unmarshal(n.Params, &p)
		if p.ProgressToken != "tok-42" {
			t.Errorf("progress for token %q", p.ProgressToken)
		}
		steps = append(steps, p.Progress)
	}
	if !slices.Equal(steps, []float64{0, 50, 100}) {
		t.Errorf("progress steps %v, want [0 50 100] before the result", steps)
	}
	if related {
		for _, rel := range h.relatedOf("notifications/progress") {
			if string(rel) != string(id) {
				t.Errorf("progress on the call's stream had related %q, want %s", rel, id)
			}
		}
	}

	id = c.NextID()
	raw, err = c.CallWithID(ctx, id, "tools/call", json.RawMessage(`{"name":"test_sampling","arguments":{"prompt":"say something"}}`))
	if err != nil || !strings.Contains(string(raw), "LLM response: sampled by the handler") {
		t.Errorf("test_sampling: %s %v", raw, err)
	}
	r := call("test_elicitation", `{"message":"who are you?"}`)
	if r.IsError || len(r.Content) != 1 || !strings.Contains(r.Content[0].Text, "action=accept") || !strings.Contains(r.Content[0].Text, "gopher") {
		t.Errorf("test_elicitation: %+v", r)
	}
	h.mu.Lock()
	var methods []string
	for _, m := range h.requests {
		methods = append(methods, m.Method)
	}
	reqRelated := h.reqRelated
	h.mu.Unlock()
	if !slices.Equal(methods, []string{"sampling/createMessage", "elicitation/create"}) {
		t.Errorf("the handler answered %v", methods)
	}
	if related && (len(reqRelated) == 0 || string(reqRelated[0]) != string(id)) {
		t.Errorf("sampling/createMessage had related %q, want %s", reqRelated, id)
	}

	raw, err = c.Call(ctx, "prompts/list", json.RawMessage(`{}`))
	if err != nil || !strings.Contains(string(raw), `"test_simple_prompt"`) {
		t.Errorf("prompts/list: %s %v", raw, err)
	}
	raw, err = c.Call(ctx, "prompts/get", json.RawMessage(`{"name":"test_simple_prompt"}`))
	if err != nil || !strings.Contains(string(raw), "This is a simple prompt for testing.") {
		t.Errorf("prompts/get: %s %v", raw, err)
	}
	raw, err = c.Call(ctx, "resources/list", json.RawMessage(`{}`))
	if err != nil || !strings.Contains(string(raw), `"test://static-text"`) {
		t.Errorf("resources/list: %s %v", raw, err)
	}
	raw, err = c.Call(ctx, "resources/read", json.RawMessage(`{"uri":"test://static-text"}`))
	if err != nil || !strings.Contains(string(raw), "This is the content of the static text resource.") {
		t.Errorf("resources/read: %s %v", raw, err)
	}
	var rpcErr *jsonrpc.Error
	if _, err := c.Call(ctx, "tools/call", json.RawMessage(`{"name":"no_such_tool","arguments":{}}`)); err == nil {
		t.Errorf("an unknown tool succeeded")
	} else if !errors.As(err, &rpcErr) {
		t.Errorf("an unknown tool: %v, want a JSON-RPC error passed through", err)
	}
}
