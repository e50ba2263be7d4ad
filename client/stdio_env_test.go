package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

func init() {
	fakeModes["exit-holding-stderr"] = exitHoldingStderr
	fakeModes["hang-start"] = hangStart
	fakeModes["exit-at-start"] = exitAtStart
}

// hangStart is a fake server stuck before it can answer, as npx is behind
// a proxy that refuses it: it complains on stderr (quoting its registry
// secret, which must not be shown) and never answers. It exits at stdin
// EOF.
func hangStart() {
	fmt.Fprintln(os.Stderr, "npm ERR! request failed, token "+os.Getenv("FAKE_SECRET"))
	fmt.Fprintln(os.Stderr, "npm ERR! code SELF_SIGNED_CERT_IN_CHAIN")
	io.Copy(io.Discard, os.Stdin)
}

// exitAtStart is a fake server that gives up before reading anything.
func exitAtStart() {
	fmt.Fprintln(os.Stderr, "npm ERR! code E403")
	os.Exit(3)
}

// exitHoldingStderr is a fake server that answers initialize and, asked for
// the tool "exit", starts a grandchild (mode "sleeper") that holds its
// stderr open, answers with the grandchild's PID, and exits with status 3.
// The held stderr keeps the client's reader open for drainGrace after the
// exit, so a write in that time meets a dead stdin.
func exitHoldingStderr() {
	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return
		}
		m, err := jsonrpc.Decode(line)
		if err != nil || !m.IsRequest() {
			continue
		}
		switch m.Method {
		case "initialize":
			os.Stdout.Write(append(jsonrpc.NewResponse(m.ID, json.RawMessage(`{"protocolVersion":"`+jsonrpc.LatestSessionVersion+`","capabilities":{},"serverInfo":{"name":"fake","version":"1"}}`)).Encode(), '\n'))
		case "tools/call":
			exe, _ := os.Executable()
			gc := exec.Command(exe, "-test.run=^$")
			gc.Env = append(os.Environ(), "MCPHUB_FAKE_SERVER=sleeper")
			gc.Stderr = os.Stderr
			if err := gc.Start(); err != nil {
				fmt.Fprintln(os.Stderr, "fake: start grandchild:", err)
				os.Exit(1)
			}
			os.Stdout.Write(append(jsonrpc.NewResponse(m.ID, fmt.Appendf(nil, `{"content":[{"type":"text","text":%q}]}`, strconv.Itoa(gc.Process.Pid))).Encode(), '\n'))
			fmt.Fprintln(os.Stderr, "fatal: exiting on purpose")
			os.Exit(3)
		default:
			os.Stdout.Write(append(jsonrpc.NewResponse(m.ID, nil).Encode(), '\n'))
		}
	}
}

// A call written to the stdin of a server that has exited, before the
// connection has noticed, fails with the ExitError (status and stderr), not
// with the pipe's error.
func TestStdioWriteAfterExitGivesExitError(t *testing.T) {
	c, _ := startFake(t, "exit-holding-stderr", nil)
	pid := c.PID()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := callTool(ctx, c, "exit", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Content []struct{ Text string } `json:"content"`
	}
	json.Unmarshal(res, &out)
	gc, _ := strconv.Atoi(out.Content[0].Text)
	t.Cleanup(func() {
		if gc > 0 && !processGone(gc) {
			killProcess(gc)
		}
	})
	// Reaped, not only exited: until every thread of the process is gone
	// its stdin still takes writes.
	waitFor(t, 5*time.Second, "the server to be reaped", func() bool { return reaped(pid) })
	select {
	case <-c.Done():
		t.Log("the connection saw the exit before the write; the dead-pipe path was not taken")
	default:
	}
	_, err = callTool(ctx, c, "echo", `{}`)
	var exit *ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("a call after the exit got %v, want *ExitError", err)
	}
	if !strings.Contains(exit.Status, "exit status 3") || !strings.Contains(strings.Join(exit.Stderr, "\n"), "exiting on purpose") {
		t.Fatalf("exit error lacks status or stderr: %v", exit)
	}
}

// reaped reports whether the process pid has exited and been waited for.
func reaped(pid int) bool {
	if runtime.GOOS == "windows" {
		return processGone(pid)
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return true
	}
	defer p.Release()
	return errors.Is(p.Signal(syscall.Signal(0)), os.ErrProcessDone)
}

// setHubEnv makes env mcphub's environment as stdio servers see it, for the
// test. Tests that call it must not run in parallel.
func setHubEnv(t *testing.T, env []string) {
	t.Helper()
	old := hubEnviron
	hubEnviron = func() []string { return slices.Clone(env) }
	t.Cleanup(func() { hubEnviron = old })
}

// baseEnv is PATH and HOME from the test's environment, the least a server
// gets.
func baseEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// serverEnv starts the fake server with cfg changed by edit and returns the
// environment it sees.
func serverEnv(t *testing.T, edit func(*Config)) map[string]string {
	t.Helper()
	cfg := fakeStdioConfig(t, "normal")
	if edit != nil {
		edit(&cfg)
	}
	c := New(cfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer c.Close()
	res, err := callTool(ctx, c, "env", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(res, &out); err != nil || len(out.Content) != 1 {
		t.Fatalf("env: %s %v", res, err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(out.Content[0].Text, "\n") {
		if k, v, ok := splitEnv(kv); ok {
			env[k] = v
		}
	}
	return env
}

// The safe set reaches a server (its proxy and extra CA certificates, which
// npx behind a corporate proxy needs), and nothing else does.
func TestStdioServerGetsSafeSet(t *testing.T) {
	setHubEnv(t, append(baseEnv(),
		"NODE_EXTRA_CA_CERTS=/etc/corp/ca.pem",
		"HTTPS_PROXY=http://proxy.corp.example:3128",
		"SECRET_THING=not-for-servers",
	))
	env := serverEnv(t, nil)
	if env["NODE_EXTRA_CA_CERTS"] != "/etc/corp/ca.pem" || env["HTTPS_PROXY"] != "http://proxy.corp.example:3128" {
		t.Errorf("the server lacks its CA certificates or proxy: %q", env)
	}
	want := map[string]bool{"MCPHUB_FAKE_SERVER": true, "FAKE_SECRET": true, "NODE_EXTRA_CA_CERTS": true, "HTTPS_PROXY": true}
	for _, kv := range baseEnv() {
		k, _, _ := splitEnv(kv)
		want[k] = true
	}
	for k := range env {
		// os/exec gives a Windows child SYSTEMROOT when it lacks one.
		if !want[k] && !(runtime.GOOS == "windows" && strings.EqualFold(k, "SYSTEMROOT")) {
			t.Errorf("the server got %s, which is neither in the safe set nor in its registry env", k)
		}
	}
}

func TestStdioEnvPassthroughGlob(t *testing.T) {
	setHubEnv(t, append(baseEnv(), "AWS_REGION=eu-west-1", "AWS_PROFILE=dev", "AWSX=no", "SECRET_THING=no"))
	env := serverEnv(t, func(cfg *Config) { cfg.EnvPassthrough = []string{"AWS_*"} })
	if env["AWS_REGION"] != "eu-west-1" || env["AWS_PROFILE"] != "dev" {
		t.Errorf("the passthrough glob AWS_* did not pass AWS_REGION and AWS_PROFILE: %q", env)
	}
	for _, k := range []string{"AWSX", "SECRET_THING"} {
		if _, ok := env[k]; ok {
			t.Errorf("the server got %s, which AWS_* does not name", k)
		}
	}
}

func TestStdioInheritEnvButDenied(t *testing.T) {
	setHubEnv(t, append(baseEnv(), "RANDOM_VAR=random-value", "MCPHUB_TOKEN=hub-token-value"))
	env := serverEnv(t, func(cfg *Config) {
		cfg.InheritEnv = true
		cfg.EnvDeny = []string{"MCPHUB_TOKEN"}
	})
	if env["RANDOM_VAR"] != "random-value" {
		t.Errorf("InheritEnv did not pass RANDOM_VAR: %q", env)
	}
	if _, ok := env["MCPHUB_TOKEN"]; ok {
		t.Error("the server got MCPHUB_TOKEN, which EnvDeny names")
	}
}

// The registry's env wins over an inherited variable of the same name, and
// EnvDeny never holds it back.
func TestStdioRegistryEnvWins(t *testing.T) {
	setHubEnv(t, append(baseEnv(), "HTTPS_PROXY=http://hub-proxy:3128", "FAKE_SECRET=from-the-hub"))
	env := serverEnv(t, func(cfg *Config) {
		cfg.Env["HTTPS_PROXY"] = "http://registry-proxy:8080"
		cfg.InheritEnv = true
		cfg.EnvDeny = []string{"FAKE_SECRET"}
	})
	if env["HTTPS_PROXY"] != "http://registry-proxy:8080" || env["FAKE_SECRET"] != "registry-given" {
		t.Errorf("the registry env did not win: HTTPS_PROXY=%q FAKE_SECRET=%q", env["HTTPS_PROXY"], env["FAKE_SECRET"])
	}
}

func TestStdioBadEnvPatternFailsStart(t *testing.T) {
	cfg := fakeStdioConfig(t, "normal")
	cfg.EnvDeny = []string{"TOKEN_["}
	c := New(cfg, nil)
	defer c.Close()
	err := c.Start(context.Background())
	if !errors.Is(err, path.ErrBadPattern) || !strings.Contains(err.Error(), "TOKEN_[") {
		t.Fatalf("Start with a malformed EnvDeny pattern: %v", err)
	}
}

// A server that never answers initialize fails Start with how long mcphub
// waited and what the server last said on stderr, redacted.
func TestStdioHangAtStartSaysWhy(t *testing.T) {
	cfg := fakeStdioConfig(t, "hang-start")
	c := New(cfg, nil)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := c.Start(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Start: %v, want a deadline error", err)
	}
	var na *NoAnswerError
	if !errors.As(err, &na) || na.Waited != time.Second {
		t.Fatalf("Start: %v, want a *NoAnswerError that waited 1s", err)
	}
	msg := err.Error()
	for _, want := range []string{"initialize: no answer within 1s; last stderr: ", "npm ERR! code SELF_SIGNED_CERT_IN_CHAIN", "token ***"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "registry-given") {
		t.Errorf("the error shows the server's secret: %s", msg)
	}
}

func TestRoundWait(t *testing.T) {
	for d, want := range map[time.Duration]string{
		999*time.Millisecond + 300*time.Microsecond: "1s",
		1998 * time.Millisecond:                     "2s",
		1500 * time.Millisecond:                     "1.5s",
		30*time.Second - 2*time.Millisecond:         "30s",
		250*time.Millisecond + 400*time.Microsecond: "250ms",
	} {
		if got := roundWait(d).String(); got != want {
			t.Errorf("roundWait(%v) = %s, want %s", d, got, want)
		}
	}
}

// A server that exits before it answers fails Start with its exit status
// and stderr, whether it exited before or after initialize was written.
func TestStdioExitAtStartSaysWhy(t *testing.T) {
	c := New(fakeStdioConfig(t, "exit-at-start"), nil)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := c.Start(ctx)
	var exit *ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("Start: %v, want *ExitError", err)
	}
	if want := "initialize: server process exited (exit status 3); last stderr: npm ERR! code E403"; err.Error() != want {
		t.Errorf("Start: %q, want %q", err, want)
	}
}

// A value a server inherits beyond the safe set may be a credential: it is
// masked in what the server says, as its registry env is.
func TestStdioInheritedSecretIsMasked(t *testing.T) {
	setHubEnv(t, append(baseEnv(), "FAKE_SECRET=from-the-hub-secret"))
	cfg := fakeStdioConfig(t, "normal")
	delete(cfg.Env, "FAKE_SECRET")
	cfg.EnvPassthrough = []string{"FAKE_*"}
	c := New(cfg, nil)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := callTool(ctx, c, "leak", `{}`)
	var exit *ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("leak: %v, want *ExitError", err)
	}
	if msg := err.Error(); strings.Contains(msg, "from-the-hub-secret") || !strings.Contains(msg, "token=*** in use") {
		t.Errorf("the inherited secret is not masked: %s", msg)
	}
}
