package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/testkit/dualera"
)

// A hub whose only upstream is dual-era (issue 31): one HTTP endpoint,
// served here by dualera.Handler in front of the Go SDK's
// everything-server in its session and its stateless modes, unprefixed,
// with protocol "auto". Each client reaches it in its own era.

// TestDualEraUpstream: a session-era client's tools sample and elicit
// mid-call through /mcp, a 2026-07-28 client's input_required tool
// completes, and `mcphub status --json` names both eras the server is
// spoken to in.
func TestDualEraUpstream(t *testing.T) {
	everything := everythingServer(t)
	dual := httptest.NewServer(dualera.Handler(startEverythingHTTP(t, everything, false), startEverythingHTTP(t, everything, true)))
	t.Cleanup(dual.Close)
	h := newProcHub(t)
	h.write(t, h.registry("",
		"[servers.dual]\nurl = "+strconvQuote(dual.URL+"/mcp")+"\nprotocol = \"auto\"\nprefix = \"\"\n"))
	run := h.start(nil)
	h.waitStatus(t, run, 30*time.Second, "the dual-era upstream connects", connected("dual"))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	elicit := func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "username": "ada"}}, nil
	}

	// The session-era client stays connected while the 2026-07-28 one
	// calls and the status is read.
	session := connectDual(ctx, t, h, jsonrpc.LatestSessionVersion, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "dual", Content: &mcp.TextContent{Text: "Paris"}}, nil
		},
		ElicitationHandler: elicit,
	})
	t.Run("session era samples and elicits mid-call", func(t *testing.T) {
		if got := toolText(ctx, t, session, "test_sampling", map[string]any{"prompt": "capital of France?"}); got != "LLM response: Paris" {
			t.Errorf("test_sampling answered %q, want the sampled text", got)
		}
		if got := toolText(ctx, t, session, "test_elicitation", map[string]any{"message": "who?"}); !strings.Contains(got, "action=accept") {
			t.Errorf("test_elicitation answered %q", got)
		}
	})
	t.Run("2026-07-28 completes an input_required tool", func(t *testing.T) {
		modern := connectDual(ctx, t, h, jsonrpc.Version20260728, &mcp.ClientOptions{ElicitationHandler: elicit})
		if got := toolText(ctx, t, modern, "test_input_required_result_elicitation", map[string]any{}); got != "Hello, Ada!" {
			t.Errorf("test_input_required_result_elicitation answered %q", got)
		}
	})
	t.Run("status names both eras", func(t *testing.T) {
		code, stdout, stderr := h.cli(t, nil, "status", "--json")
		if code != 0 {
			t.Fatalf("mcphub status --json: exit %d: %s", code, stderr)
		}
		var st struct {
			Servers []struct {
				Name      string   `json:"name"`
				Protocols []string `json:"protocols"`
			} `json:"servers"`
		}
		if err := json.Unmarshal([]byte(stdout), &st); err != nil {
			t.Fatalf("mcphub status --json: %v\n%s", err, stdout)
		}
		want := []string{jsonrpc.LatestSessionVersion, jsonrpc.Version20260728}
		for _, s := range st.Servers {
			if s.Name == "dual" && !slices.Equal(s.Protocols, want) {
				t.Errorf("dual is spoken to in %q, want %q", s.Protocols, want)
			}
		}
		if len(st.Servers) != 1 || st.Servers[0].Name != "dual" {
			t.Errorf("status lists %d servers: %s", len(st.Servers), stdout)
		}
	})
}

// connectDual connects the Go SDK's client, pinned to version, to the
// hub's /mcp; the session is closed when the test ends.
func connectDual(ctx context.Context, t *testing.T, h *procHub, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "dual-" + version, Version: "0"}, opts)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.base() + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect at %s: %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != version {
		t.Fatalf("pinned to %s, the client speaks %s", version, v)
	}
	return cs
}

// toolText calls a tool and returns its text content; a tool error fails
// the test with that text.
func toolText(ctx context.Context, t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	if res.IsError {
		t.Fatalf("%s: tool error: %s", name, strings.Join(parts, ""))
	}
	return strings.Join(parts, "")
}

// startEverythingHTTP runs the everything-server in one HTTP mode on a
// free port until the test ends (stopped by its PID), and returns its base
// URL once it accepts connections.
func startEverythingHTTP(t *testing.T, bin string, stateless bool) *url.URL {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(bin, "-http="+addr, "-stateless="+strconv.FormatBool(stateless))
	var out logBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill() // by its own PID
		<-exited
	})
	eventually(t, 10*time.Second, "everything-server -stateless="+strconv.FormatBool(stateless)+" listens", func() error {
		select {
		case <-exited:
			t.Fatalf("everything-server exited:\n%s", out.String())
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
	return &url.URL{Scheme: "http", Host: addr}
}
