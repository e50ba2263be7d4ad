package main

// Interop: the official TypeScript SDK client (@modelcontextprotocol/sdk
// 1.x, on Node 22) talks to `mcphub stdio` over stdio, with the official Go
// SDK conformance everything-server behind the hub.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// interopNeed returns a file the interop test needs: from the environment
// variable env, else the first of fallbacks that exists. When there is none
// the test is skipped, or fails when MCPHUB_INTEROP=1 says the interop
// tools must be there.
func interopNeed(t *testing.T, what, env string, fallbacks ...string) string {
	t.Helper()
	candidates := fallbacks
	if v := os.Getenv(env); v != "" {
		candidates = []string{v}
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if _, err := os.Stat(c); err == nil {
			abs, err := filepath.Abs(c)
			if err != nil {
				t.Fatal(err)
			}
			return abs
		}
	}
	msg := what + " not found (set " + env + ", or run scripts/setup)"
	if os.Getenv("MCPHUB_INTEROP") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// tsSDK finds Node and the node_modules holding the TypeScript SDK 1.x
// (@modelcontextprotocol/sdk): MCPHUB_NODE and MCPHUB_NODE_MODULES, else
// what scripts/setup put in .cache/node (see interopNeed).
func tsSDK(t *testing.T) (node, modules string) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(root, ".cache")
	node = interopNeed(t, "node", "MCPHUB_NODE", filepath.Join(cache, "node", "node_modules", ".bin", "node"))
	modules = interopNeed(t, "the node_modules with @modelcontextprotocol/sdk", "MCPHUB_NODE_MODULES", filepath.Join(cache, "node", "node_modules"))
	if _, err := os.Stat(filepath.Join(modules, "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		interopNeed(t, "@modelcontextprotocol/sdk", "MCPHUB_NODE_MODULES", "")
	}
	return node, modules
}

// tsSteps starts cmd, a TypeScript client that prints one JSON report line
// (tsReport) per step on stdout, and returns next, which waits for the
// report of a step: the test fails on an error report, another step, the
// client exiting first, or 90 s; and exit, which waits up to within for
// the client to exit and returns how it did. When the test ends, stdin (when set) is
// closed and the client stopped by its PID if it has not exited; its
// stderr is logged when the test failed (or E2E_LOG is set).
func tsSteps(t *testing.T, cmd *exec.Cmd, stdout io.Reader, stderr *logBuffer, stdin io.Closer) (next func(step string) tsReport, exit func(within time.Duration) error) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reports := make(chan tsReport, 4)
	exited := make(chan struct{})
	var waitErr error // set before exited is closed
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var r tsReport
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				r.Error = "not a report: " + sc.Text()
			}
			reports <- r
		}
		io.Copy(io.Discard, stdout)
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		if stdin != nil {
			stdin.Close()
		}
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			killPID(cmd.Process.Pid)
			<-exited
		}
		if t.Failed() || os.Getenv("E2E_LOG") != "" {
			t.Logf("node stderr:\n%s", stderr.String())
		}
	})
	exit = func(within time.Duration) error {
		select {
		case <-exited:
			return waitErr
		case <-time.After(within):
			return fmt.Errorf("the TypeScript client did not exit within %s", within)
		}
	}
	return func(step string) tsReport {
		t.Helper()
		select {
		case r := <-reports:
			if r.Error != "" || r.Step != step {
				t.Fatalf("the TypeScript client, at %s: %+v", step, r)
			}
			return r
		case <-exited:
			t.Fatalf("the TypeScript client exited before %s: %v", step, waitErr)
		case <-time.After(90 * time.Second):
			t.Fatalf("the TypeScript client did not report %s within 90 s", step)
		}
		return tsReport{}
	}, exit
}

// tsReport is a line the TypeScript client prints.
type tsReport struct {
	Step             string    `json:"step"`
	Error            string    `json:"error"`
	Server           string    `json:"server"`
	Tools            any       `json:"tools"` // names before the restart, a count after
	Progress         []float64 `json:"progress"`
	ProgressError    bool      `json:"progressError"`
	Sampling         string    `json:"sampling"`
	SamplingRequests int       `json:"samplingRequests"`
	Result           string    `json:"result"`
}

// TestStdioFaceTSClient: the TypeScript SDK client lists the tools, gets
// the three progress notifications of a namespaced call through its
// onprogress callback, answers a sampling request of the upstream's; then
// the hub is killed by its PID and started again on the same address and
// data directory, and the client's next call (with sampling) succeeds.
func TestStdioFaceTSClient(t *testing.T) {
	node, modules := tsSDK(t)
	everything := everythingServer(t)
	script, err := filepath.Abs(filepath.Join("testdata", "stdio_ts_client.mjs"))
	if err != nil {
		t.Fatal(err)
	}

	h := newProcHub(t)
	h.write(t, h.registry("", "[servers.everything]\ncommand = "+strconvQuote(everything)+"\nconnect_timeout = \"20s\"\n"))
	run := h.start(nil, "--log-level", "debug")
	h.waitStatus(t, run, 30*time.Second, "everything connects", connected("everything"))

	cmd := exec.Command(node, script, h.bin, "--log-level", "debug")
	cmd.Env = h.env("MCPHUB_NODE_MODULES=" + modules)
	cmd.Dir = h.home
	var stderr logBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	next, exit := tsSteps(t, cmd, stdout, &stderr, stdin)

	before := next("before")
	names, _ := before.Tools.([]any)
	if !slices.Contains(names, any("everything__test_tool_with_progress")) || !slices.Contains(names, any("everything__test_sampling")) {
		t.Errorf("tools/list through the face: %v, want the namespaced everything tools", names)
	}
	if !slices.Equal(before.Progress, []float64{0, 50, 100}) || before.ProgressError {
		t.Errorf("onprogress saw %v (tool error %v), want [0 50 100]", before.Progress, before.ProgressError)
	}
	if before.Sampling != "LLM response: ts says before" || before.SamplingRequests != 1 {
		t.Errorf("test_sampling = %q after %d sampling requests, want the client's answer after 1", before.Sampling, before.SamplingRequests)
	}

	sessions, err := hubSessions(h.base(), "")
	if err != nil || len(sessions) != 1 {
		t.Fatalf("hub sessions before the restart: %+v, %v; want the face's one", sessions, err)
	}

	run.kill9(t)
	// The face notices (its notification stream cannot reconnect) before
	// the hub comes back, so it reconnects by resuming the session.
	eventually(t, 20*time.Second, "mcphub stdio notices that the hub is gone", func() error {
		if !strings.Contains(stderr.String(), "the hub cannot be reached") {
			return errors.New("not yet")
		}
		return nil
	})
	run = h.start(nil, "--log-level", "debug")
	h.waitStatus(t, run, 30*time.Second, "everything connects again", connected("everything"))
	if _, err := stdin.Write([]byte("restarted\n")); err != nil {
		t.Fatal(err)
	}

	after := next("after")
	if after.Sampling != "LLM response: ts says after" || after.SamplingRequests != 2 {
		t.Errorf("test_sampling after the restart = %q after %d sampling requests, want the client's answer after 2", after.Sampling, after.SamplingRequests)
	}
	if now, err := hubSessions(h.base(), ""); err != nil || sessionIDs(now) != sessionIDs(sessions) {
		t.Errorf("hub sessions after the restart: %s (%v), want the same one: %s", sessionIDs(now), err, sessionIDs(sessions))
	}
	if _, err := stdin.Write([]byte("done\n")); err != nil {
		t.Fatal(err)
	}
	if err := exit(20 * time.Second); err != nil {
		t.Errorf("the TypeScript client, after its last report: %v", err)
	}
}

// everythingServer finds the Go SDK's everything-server: $MCPHUB_EVERYTHING_SERVER,
// on PATH, or where scripts/setup installs it.
func everythingServer(t *testing.T) string {
	t.Helper()
	ev, _ := exec.LookPath("everything-server")
	return interopNeed(t, "everything-server", "MCPHUB_EVERYTHING_SERVER", ev, filepath.Join("..", "..", ".cache", "bin", "everything-server"))
}

// strconvQuote quotes a path as a TOML basic string.
func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
