package probe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/probe"
	"github.com/mcphub/mcphub/registry"
)

// demoPlan is a probe of the demo server with calls.
func demoPlan(t *testing.T, calls, args []string) *probe.Plan {
	t.Helper()
	req := probe.Request{Target: registry.Target{Transport: "auto", Env: []string{demoEnv}}, Calls: calls, Args: args, Version: "test"}
	p, err := req.Plan(demoCommand(t))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunReportsProgressAndCalls: without Out nothing is printed on it
// (as with --json), progress goes to Log as it arrives, and the report
// holds every call's result and the last one's as CallResult.
func TestRunReportsProgressAndCalls(t *testing.T) {
	var log bytes.Buffer
	p := demoPlan(t, []string{"echo", "countdown"}, []string{`{"text":"hi"}`, `{"n":2}`})
	r, err := probe.Run(context.Background(), p, probe.Options{Timeout: 30 * time.Second, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if r.Server.Name != "mcphub-demo" || r.Transport != "stdio" || len(r.Tools) != 3 || len(r.Prompts) != 1 || len(r.Resources) != 1 {
		t.Errorf("report: %+v", r)
	}
	if len(r.Calls) != 2 || r.Calls[0].Tool != "echo" || !strings.Contains(string(r.Calls[0].Result), `"hi"`) ||
		string(r.CallResult) != string(r.Calls[1].Result) || r.SignedIn {
		t.Errorf("calls: %+v, last %s", r.Calls, r.CallResult)
	}
	if !strings.Contains(log.String(), "progress 1/2") {
		t.Errorf("log %q lacks the countdown's progress", log.String())
	}
	var out bytes.Buffer
	if err := r.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	var back map[string]json.RawMessage
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back["calls"] == nil || back["callResult"] == nil || back["SignedIn"] != nil {
		t.Errorf("JSON %s: %v", out.Bytes(), err)
	}
}

// TestRunFailures: a server that does not start, and a tool call the
// server refuses, are errors that say which step failed.
func TestRunFailures(t *testing.T) {
	req := probe.Request{Target: registry.Target{Transport: "auto"}}
	p, err := req.Plan([]string{"/nonexistent/mcphub-probe-test-server"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := probe.Run(context.Background(), p, probe.Options{Timeout: 10 * time.Second, Log: io.Discard}); err == nil || !strings.HasPrefix(err.Error(), "connect: ") {
		t.Errorf("a server that does not start: %v", err)
	}
	p = demoPlan(t, []string{"nope"}, nil)
	if _, err := probe.Run(context.Background(), p, probe.Options{Timeout: 10 * time.Second, Log: io.Discard}); err == nil || !strings.HasPrefix(err.Error(), "call nope: ") {
		t.Errorf("an unknown tool: %v", err)
	}
}

// TestRunSaveRefusesAnotherURL: --save keeps tokens only for the
// registry server of the probed URL, and says so before connecting.
func TestRunSaveRefusesAnotherURL(t *testing.T) {
	req := probe.Request{Target: registry.Target{URL: "https://a.example/mcp", Transport: "auto"}, Save: "tracker"}
	p, err := req.Plan(nil)
	if err != nil {
		t.Fatal(err)
	}
	save := &registry.Server{Name: "tracker", URL: "https://b.example/mcp"}
	_, err = probe.Run(context.Background(), p, probe.Options{Timeout: time.Second, Log: io.Discard, Save: save})
	want := "--save tracker: that server's url is https://b.example/mcp, not https://a.example/mcp; tokens are kept for the URL they were issued for"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	if p.Config.OAuth.Fetch != nil || p.Config.OAuth.Store != nil {
		t.Error("Run changed the plan's OAuth settings")
	}
}
