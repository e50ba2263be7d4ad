package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// Both protocol eras through a hub whose upstreams are the Go SDK's
// everything-server twice: over stdio, where the hub keeps a session with
// it, and over Streamable HTTP in its stateless mode, which the hub speaks
// 2026-07-28 to.

// erasHub starts a hub with the two upstreams (prefixes st and hs) and
// waits for both; it returns the hub and the everything-server binary.
func erasHub(t *testing.T) (*procHub, *hubRun) {
	t.Helper()
	everything := everythingServer(t)
	url := startStatelessEverything(t, everything)
	h := newProcHub(t)
	h.write(t, h.registry("",
		"[servers.st]\ncommand = "+strconvQuote(everything)+"\nconnect_timeout = \"20s\"\n",
		"[servers.hs]\nurl = "+strconvQuote(url)+"\n"))
	run := h.start(nil)
	st := h.waitStatus(t, run, 30*time.Second, "both upstreams connect", connected("st", "hs"))
	// The era each connection speaks is shown.
	if s, m := findServer(st, "st"), findServer(st, "hs"); s.Protocol != jsonrpc.LatestSessionVersion || m.Protocol != jsonrpc.Version20260728 {
		t.Errorf("protocols: st %q, hs %q; want a session with the stdio server and 2026-07-28 with the stateless one", s.Protocol, m.Protocol)
	}
	return h, run
}

// startStatelessEverything runs the everything-server in its stateless
// HTTP mode on a free port until the test ends (stopped by its PID).
func startStatelessEverything(t *testing.T, bin string) string {
	t.Helper()
	return startEverythingHTTP(t, bin, true).String() + "/mcp"
}

// TestErasGoSDKClient: the Go SDK's client pinned to 2026-07-28 lists the
// tools of both upstreams, gets progress, and answers elicitations: the
// stateless server's input_required passes through, and the stdio
// server's session-era requests (of an input_required tool and of one
// written for the session era) reach it as input_required.
func TestErasGoSDKClient(t *testing.T) {
	h, _ := erasHub(t)
	erasGoSDKClient(t, h, &mcp.StreamableClientTransport{Endpoint: h.base() + "/mcp"})
}

// TestErasGoSDKClientStdio: the same client through `mcphub stdio`, which
// relays its stateless requests to the hub one by one.
func TestErasGoSDKClientStdio(t *testing.T) {
	h, _ := erasHub(t)
	cmd := exec.Command(h.bin, "stdio")
	cmd.Env = h.env()
	var stderr logBuffer
	cmd.Stderr = &stderr
	erasGoSDKClient(t, h, &mcp.CommandTransport{Command: cmd})
	if cmd.Process != nil {
		cmd.Process.Kill() // by its own PID, should closing stdin not have ended it
	}
	if t.Failed() {
		t.Logf("mcphub stdio's log:\n%s", stderr.String())
	}
}

// erasGoSDKClient runs the Go SDK's client, pinned to 2026-07-28, over
// transport against the hub erasHub started.
func erasGoSDKClient(t *testing.T, h *procHub, transport mcp.Transport) {
	t.Helper()
	var progress atomic.Int32
	var elicited atomic.Int32
	opts := &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			elicited.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "username": "ada"}}, nil
		},
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "eras", Version: "0"}, opts)
	cs, err := c.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: jsonrpc.Version20260728})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != jsonrpc.Version20260728 {
		t.Fatalf("the session speaks %q", v)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	for _, want := range []string{"st__test_tool_with_progress", "hs__test_tool_with_progress", "st__test_input_required_result_elicitation", "hs__test_input_required_result_elicitation"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("tools/list lacks %s", want)
		}
	}
	text := func(p *mcp.CallToolParams) string {
		t.Helper()
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		var parts []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				parts = append(parts, tc.Text)
			}
		}
		return strings.Join(parts, "")
	}
	for _, p := range []string{"st", "hs"} {
		progress.Store(0)
		params := &mcp.CallToolParams{Name: p + "__test_tool_with_progress", Arguments: map[string]any{}}
		params.SetProgressToken("eras-" + p)
		text(params)
		if n := progress.Load(); n < 3 {
			t.Errorf("%s: %d progress notifications, want 3", p, n)
		}
		if got := text(&mcp.CallToolParams{Name: p + "__test_input_required_result_elicitation", Arguments: map[string]any{}}); got != "Hello, Ada!" {
			t.Errorf("%s: the input_required tool answered %q", p, got)
		}
	}
	// A tool written for the session era asks with a request, which only
	// the session with the stdio server carries.
	before := elicited.Load()
	if got := text(&mcp.CallToolParams{Name: "st__test_elicitation", Arguments: map[string]any{"message": "who?"}}); !strings.Contains(got, "action=accept") {
		t.Errorf("the session-era elicitation answered %q", got)
	}
	if elicited.Load() == before {
		t.Error("the elicitation handler was not asked")
	}
	st, err := h.status()
	if err != nil {
		t.Fatal(err)
	}
	if st.Sessions != 0 {
		t.Errorf("%d sessions: a 2026-07-28 client opens none", st.Sessions)
	}
}

// TestErasTSClient: the TypeScript SDK's v2 client pinned to 2026-07-28
// does through the hub what TestErasGoSDKClient does.
func TestErasTSClient(t *testing.T) {
	h, _ := erasHub(t)
	erasTSClient(t, h, h.base()+"/mcp")
}

// TestErasTSClientStdio: the same client through `mcphub stdio`, which
// carries its stateless requests to the hub one by one.
func TestErasTSClientStdio(t *testing.T) {
	h, _ := erasHub(t)
	erasTSClient(t, h, "--stdio", h.bin, "stdio")
	if st, err := h.status(); err != nil || st.Sessions != 0 {
		t.Errorf("status %v, %v: want no session for a 2026-07-28 client", st, err)
	}
}

// erasTSClient runs testdata/eras_ts_client.mjs with args (the hub's URL,
// or --stdio and a command) in the hub's environment and checks its report.
func erasTSClient(t *testing.T, h *procHub, args ...string) {
	t.Helper()
	cache := filepath.Join("..", "..", ".cache")
	node := interopNeed(t, "node", "MCPHUB_NODE", filepath.Join(cache, "node", "node_modules", ".bin", "node"))
	modules := interopNeed(t, "the node_modules with @modelcontextprotocol/client", "MCPHUB_TS_CLIENT_MODULES", filepath.Join(cache, "node-tsv2", "node_modules"))
	script, err := filepath.Abs(filepath.Join("testdata", "eras_ts_client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Env = h.env("MCPHUB_NODE_MODULES=" + modules)
	var stderr logBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var report struct {
		Error    string            `json:"error"`
		Era      string            `json:"era"`
		Tools    []string          `json:"tools"`
		Progress map[string]int    `json:"progress"`
		Answers  map[string]string `json:"answers"`
		Elicited int               `json:"elicited"`
	}
	if jerr := json.Unmarshal(out, &report); jerr != nil || err != nil || report.Error != "" {
		t.Fatalf("the TS client: %v %v %s\nstdout: %s\nstderr: %s", err, jerr, report.Error, out, stderr.String())
	}
	if report.Era != jsonrpc.Version20260728 {
		t.Errorf("the TS client negotiated %q", report.Era)
	}
	for _, want := range []string{"st__test_tool_with_progress", "hs__test_input_required_result_elicitation"} {
		if !slices.Contains(report.Tools, want) {
			t.Errorf("tools/list lacks %s", want)
		}
	}
	for _, p := range []string{"st", "hs"} {
		if report.Progress[p] < 3 {
			t.Errorf("%s: %d progress callbacks, want 3", p, report.Progress[p])
		}
		if report.Answers[p] != "Hello, Ada!" {
			t.Errorf("%s: the input_required tool answered %q", p, report.Answers[p])
		}
	}
	if !strings.Contains(report.Answers["session"], "action=accept") || report.Elicited < 3 {
		t.Errorf("the session-era elicitation answered %q after %d elicitations", report.Answers["session"], report.Elicited)
	}
}
