package main

// The harness of this package's end-to-end tests, in the harness*_test.go
// files (this one: the test binary as a child program, and waiting;
// harness_proc: /proc and a real mcphub serve; harness_inproc: a hub in this
// process; harness_upstream: the fake MCP server; harness_client: the raw
// and Go SDK clients), so that there is one way to do each thing: start a hub (in this process, with or without
// the SQLite store, or as a real `mcphub serve` process on a home that
// outlives it), start upstreams (the fake MCP server in this process over
// Streamable HTTP, or this test binary re-executed as a stdio server), talk
// to a hub (a raw Streamable HTTP client that shows every status, header and
// event id, or the Go SDK's client), stop all of it by its own PID or Close
// in t.Cleanup, and read /proc. proc_unix_test.go and proc_windows_test.go
// hold the per-OS part: signalling a PID and asking whether it exists.

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionVersion is the protocol revision the test clients ask for: the
// session era that IDE clients speak today, whose streams start with a
// priming event.
const sessionVersion = "2025-11-25"

// The Accept headers of the raw client.
const (
	acceptBoth = "application/json, text/event-stream"
	acceptJSON = "application/json"
	acceptSSE  = "text/event-stream"
)

// ---------------------------------------------------------------------------
// This test binary as a child program.

// childEnv, when set, makes the test binary one of the child programs the
// tests need instead of running tests; childMain says which. The other
// variables are the rest of a child's registry env.
const (
	childEnv      = "MCPHUB_TEST_CHILD"
	childNameEnv  = "MCPHUB_TEST_NAME"
	childDirEnv   = "MCPHUB_TEST_DIR"
	childSpawnEnv = "MCPHUB_TEST_SPAWN"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(childMain(mode))
	}
	os.Exit(m.Run())
}

// childMain runs a child program:
//
//	fake     the fake server over stdio, named $MCPHUB_TEST_NAME. With
//	         $MCPHUB_TEST_DIR set, it writes NAME.exit there once stdin reaches
//	         EOF and the server returns, which proves it stopped on EOF and
//	         not on a signal; with $MCPHUB_TEST_SPAWN=1 it first starts a
//	         grandchild (sleeper), which stays in the fake's process group,
//	         and writes the grandchild's PID to NAME.grandchild.
//	sleeper  a process that never reads stdin and ignores SIGTERM, SIGINT
//	         and SIGHUP: only SIGKILL ends it.
//	soak     the soak tests' server over stdio.
func childMain(mode string) int {
	name, dir := os.Getenv(childNameEnv), os.Getenv(childDirEnv)
	switch mode {
	case "fake":
		if os.Getenv(childSpawnEnv) == "1" {
			exe, _ := os.Executable()
			gc := exec.Command(exe)
			gc.Env = []string{childEnv + "=sleeper", "GORACE=atexit_sleep_ms=0"}
			if err := gc.Start(); err != nil {
				fmt.Fprintln(os.Stderr, "start grandchild:", err)
				return 1
			}
			os.WriteFile(filepath.Join(dir, name+".grandchild"), []byte(strconv.Itoa(gc.Process.Pid)), 0o600)
		}
		err := newFake(name, true).srv.Run(context.Background(), &mcp.StdioTransport{})
		if dir != "" {
			os.WriteFile(filepath.Join(dir, name+".exit"), fmt.Appendf(nil, "server returned: %v", err), 0o600)
		} else if err != nil {
			fmt.Fprintln(os.Stderr, "fake server:", err)
		}
		return 0
	case "sleeper":
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		for {
			time.Sleep(time.Hour)
		}
	case "soak":
		if err := soakServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "soak server:", err)
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown", childEnv, mode)
	return 2
}

// childOpts describes a stdio server that is this test binary re-executed.
type childOpts struct {
	mode  string   // childMain's mode; "" means fake
	dir   string   // where a fake records how it stopped ($MCPHUB_TEST_DIR)
	spawn bool     // the fake starts a grandchild first
	env   []string // more registry env: KEY, VALUE, KEY, VALUE…
	lines string   // more keys of the server's table, one per line
	delay string   // sh sleeps this long before it execs the child, as a cold npx start does
}

// envKeys lists the names of the child's registry env, in the order
// childServer writes them. GORACE keeps a -race child from sleeping a second
// on exit.
func (o childOpts) envKeys(name string) (keys, values []string) {
	keys = []string{childEnv, childNameEnv, "GORACE"}
	values = []string{cmp.Or(o.mode, "fake"), name, "atexit_sleep_ms=0"}
	if o.dir != "" {
		keys, values = append(keys, childDirEnv), append(values, o.dir)
	}
	if o.spawn {
		keys, values = append(keys, childSpawnEnv), append(values, "1")
	}
	for i := 0; i+1 < len(o.env); i += 2 {
		keys, values = append(keys, o.env[i]), append(values, o.env[i+1])
	}
	return keys, values
}

// childServer is the [servers.NAME] table of a child.
func childServer(t testing.TB, name string, o childOpts) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	keys, values := o.envKeys(name)
	env := make([]string, len(keys))
	for i := range keys {
		env[i] = fmt.Sprintf("%s = %q", keys[i], values[i])
	}
	command := fmt.Sprintf("command = %q\n", exe)
	if o.delay != "" {
		command = fmt.Sprintf("command = \"sh\"\nargs = [\"-c\", \"sleep %s; exec \\\"$0\\\"\", %q]\n", o.delay, exe)
	}
	return fmt.Sprintf("[servers.%s]\n%senv = { %s }\n%s\n\n", name, command, strings.Join(env, ", "), o.lines)
}

// remoteServer is the [servers.NAME] table of a Streamable HTTP server.
func remoteServer(name, url, lines string) string {
	return fmt.Sprintf("[servers.%s]\nurl = %q\ntransport = \"streamable-http\"\n%s\n\n", name, url, lines)
}

// demoServer is a [servers.NAME] table running `mcphub demo` from bin; env,
// when given (KEY, VALUE…), is written as an inline table, which makes it
// part of the connection.
func demoServer(bin, name string, env ...string) string {
	s := fmt.Sprintf("[servers.%s]\ncommand = %q\nargs = [\"demo\"]\nconnect_timeout = \"10s\"\n", name, bin)
	if len(env) > 0 {
		var kv []string
		for i := 0; i+1 < len(env); i += 2 {
			kv = append(kv, fmt.Sprintf("%s = %q", env[i], env[i+1]))
		}
		s += "env = { " + strings.Join(kv, ", ") + " }\n"
	}
	return s + "\n"
}

// ---------------------------------------------------------------------------
// Waiting, always with a deadline.

// pollEvery is the interval of every poll loop.
const pollEvery = 10 * time.Millisecond

// poll calls cond until it holds or the deadline passes.
func poll(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
}

// eventually polls f until it returns nil, failing the test with f's last
// error when the deadline passes.
func eventually(t testing.TB, within time.Duration, what string, f func() error) {
	t.Helper()
	var err error
	if !poll(within, func() bool { err = f(); return err == nil }) {
		t.Fatalf("%s: not within %s: %v", what, within, err)
	}
}

// holds watches cond for the whole of d and reports whether it never
// failed; it returns at the first failure. It is how a test asserts that
// something does not happen, such as a second notification inside a window.
func holds(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if !cond() {
			return false
		}
		time.Sleep(pollEvery)
	}
	return cond()
}

// steady waits until value has not changed for quiet, within a deadline, and
// returns it: what a startup burst of notifications left behind.
func steady(quiet, within time.Duration, value func() int64) int64 {
	last, since := value(), time.Now()
	poll(within, func() bool {
		if v := value(); v != last {
			last, since = v, time.Now()
		}
		return time.Since(since) >= quiet
	})
	return last
}
