package main

// Helpers for the process-level tests in reload_test.go: they build the
// mcphub binary once, run `mcphub serve` as a real process with its own
// HOME, registry and data directory, poll its /readyz, and hold an official
// Go SDK client session against its /mcp endpoint. Every identifier here
// starts with "rl" so that it cannot collide with the helpers of the other
// test files of this package.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/hub"
)

// rlPoll is the interval of every poll loop; polls always have a deadline.
const rlPoll = 20 * time.Millisecond

// rlSessionVersion is the protocol revision the test client asks for. The
// SDK's default (2026-07-28) would start with server/discover; the hub speaks
// the session era, which is what IDE clients use today.
const rlSessionVersion = "2025-11-25"

// rlHub is one `mcphub serve` process and the files it owns.
type rlHub struct {
	t      *testing.T
	bin    string
	home   string
	cfg    string // hub.toml
	data   string // MCPHUB_DATA
	addr   string // host:port from [hub] listen
	cmd    *exec.Cmd
	stdout syncBuffer
	stderr syncBuffer
	exited chan struct{}
	werr   error // cmd.Wait's result, set before exited is closed
}

// rlNewHub prepares the directories and the listen address; write the
// registry with writeRegistry, then start.
func rlNewHub(t *testing.T) *rlHub {
	t.Helper()
	home := t.TempDir()
	h := &rlHub{
		t: t, bin: durBinary(t), home: home,
		cfg:  filepath.Join(home, "config", "mcphub", "hub.toml"),
		data: filepath.Join(home, "data"),
		addr: durFreePort(t),
	}
	if err := os.MkdirAll(filepath.Dir(h.cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	return h
}

// env is the environment of the hub and of every CLI run against it.
func (h *rlHub) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "MCPHUB_") || strings.HasPrefix(k, "XDG_") || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"HOME="+h.home,
		"XDG_CONFIG_HOME="+filepath.Join(h.home, "config"),
		"XDG_DATA_HOME="+filepath.Join(h.home, "share"),
		"MCPHUB_CONFIG="+h.cfg,
		"MCPHUB_DATA="+h.data,
	)
}

// hubSection is the [hub] table every registry of these tests starts with.
func (h *rlHub) hubSection() string {
	return fmt.Sprintf("[hub]\nlisten = %q\n\n", h.addr)
}

// demo is a [servers.NAME] table running `mcphub demo`; env, when given, is
// written as an inline table (it is part of the connection hash).
func (h *rlHub) demo(name string, env ...string) string {
	s := fmt.Sprintf("[servers.%s]\ncommand = %q\nargs = [\"demo\"]\nconnect_timeout = \"10s\"\n", name, h.bin)
	if len(env) > 0 {
		var kv []string
		for i := 0; i+1 < len(env); i += 2 {
			kv = append(kv, fmt.Sprintf("%s = %q", env[i], env[i+1]))
		}
		s += "env = { " + strings.Join(kv, ", ") + " }\n"
	}
	return s + "\n"
}

// remote is a [servers.NAME] table for a Streamable HTTP server.
func (h *rlHub) remote(name, url string) string {
	return fmt.Sprintf("[servers.%s]\nurl = %q\ntransport = \"streamable-http\"\nconnect_timeout = \"10s\"\n\n", name, url)
}

// writeRegistry replaces hub.toml the way editors save: a temporary file in
// the same directory, then rename over the original.
func (h *rlHub) writeRegistry(t *testing.T, text string) {
	t.Helper()
	tmp, err := os.CreateTemp(filepath.Dir(h.cfg), ".hub.toml.*")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmp.WriteString(text); err != nil {
		tmp.Close()
		t.Fatal(err)
	}
	if err := tmp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp.Name(), h.cfg); err != nil {
		t.Fatal(err)
	}
}

// start runs `mcphub serve` and waits until /readyz answers. Cleanup (of
// the test that created the hub) stops the process by its PID: SIGTERM, then
// SIGKILL if it has not exited.
func (h *rlHub) start() {
	t := h.t
	t.Helper()
	h.cmd = exec.Command(h.bin, "serve")
	h.cmd.Env = h.env()
	h.cmd.Dir = h.home
	h.cmd.Stdout = &h.stdout
	h.cmd.Stderr = &h.stderr
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h.exited = make(chan struct{})
	go func() {
		h.werr = h.cmd.Wait()
		close(h.exited)
	}()
	t.Cleanup(func() {
		if h.running() {
			termPID(h.cmd.Process.Pid)
			select {
			case <-h.exited:
			case <-time.After(10 * time.Second):
				killPID(h.cmd.Process.Pid)
				<-h.exited
			}
		}
		if t.Failed() {
			t.Logf("mcphub serve stdout:\n%s", h.stdout.String())
			t.Logf("mcphub serve stderr:\n%s", h.stderr.String())
		}
	})
	rlEventually(t, 15*time.Second, "the hub answers /readyz", func() error {
		if !h.running() {
			return fmt.Errorf("mcphub serve exited: %v", h.werr)
		}
		_, err := h.status()
		return err
	})
}

func (h *rlHub) running() bool {
	select {
	case <-h.exited:
		return false
	default:
		return true
	}
}

// status fetches /readyz once.
func (h *rlHub) status() (*hub.Status, error) { return fetchReadyz(h.addr) }

// waitStatus polls /readyz until cond accepts it; cond returns why not.
func (h *rlHub) waitStatus(t *testing.T, timeout time.Duration, what string, cond func(*hub.Status) error) *hub.Status {
	t.Helper()
	var got *hub.Status
	rlEventually(t, timeout, what, func() error {
		st, err := h.status()
		if err != nil {
			return err
		}
		if err := cond(st); err != nil {
			return fmt.Errorf("%w; /readyz: %s", err, rlShowStatus(st))
		}
		got = st
		return nil
	})
	return got
}

// rlServer returns one server of a status, nil if it is not listed.
func rlServer(st *hub.Status, name string) *hub.ServerStatus {
	for i := range st.Servers {
		if st.Servers[i].Name == name {
			return &st.Servers[i]
		}
	}
	return nil
}

// rlConnected accepts a status in which every named server is connected with
// at least one tool (and, for stdio servers, a PID).
func rlConnected(names ...string) func(*hub.Status) error {
	return func(st *hub.Status) error {
		for _, n := range names {
			s := rlServer(st, n)
			if s == nil {
				return fmt.Errorf("server %s is not listed", n)
			}
			if s.State != hub.StateConnected || s.Tools == 0 {
				return fmt.Errorf("server %s is %s with %d tools", n, s.State, s.Tools)
			}
		}
		return nil
	}
}

func rlShowStatus(st *hub.Status) string {
	var parts []string
	for _, s := range st.Servers {
		parts = append(parts, fmt.Sprintf("%s=%s(pid %d, tools %d, restarts %d, err %q)", s.Name, s.State, s.PID, s.Tools, s.Restarts, s.LastError))
	}
	if st.RegistryError != "" {
		parts = append(parts, "registry_error="+st.RegistryError)
	}
	return strings.Join(parts, " ")
}

// cli runs the mcphub binary with the hub's environment.
func (h *rlHub) cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Env = h.env()
	cmd.Dir = h.home
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("mcphub %s: %v", strings.Join(args, " "), err)
	}
	return code, out.String(), errb.String()
}

// rlEventually polls f until it returns nil, failing the test with f's last
// error when the deadline passes.
func rlEventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(rlPoll)
	}
}

func rlWaitGone(t *testing.T, pid int, what string) {
	t.Helper()
	if pid <= 0 {
		t.Fatalf("%s: no PID to check", what)
	}
	rlEventually(t, 5*time.Second, what+" (pid "+fmt.Sprint(pid)+") is gone", func() error {
		if pidGone(pid) {
			return nil
		}
		return errors.New("kill(pid, 0) still succeeds")
	})
}

// rlSession is one SDK client session on /mcp that counts the
// tools/list_changed notifications it receives.
type rlSession struct {
	cs      *mcp.ClientSession
	changed atomic.Int64
}

func rlConnect(t *testing.T, addr string) *rlSession {
	t.Helper()
	s := &rlSession{}
	c := mcp.NewClient(&mcp.Implementation{Name: "reload-test", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { s.changed.Add(1) },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"},
		&mcp.ClientSessionOptions{ProtocolVersion: rlSessionVersion})
	if err != nil {
		t.Fatalf("connect to the hub: %v", err)
	}
	s.cs = cs
	t.Cleanup(func() { cs.Close() })
	return s
}

// tools lists the session's tool names, sorted.
func (s *rlSession) tools() ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var names []string
	params := &mcp.ListToolsParams{}
	for {
		res, err := s.cs.ListTools(ctx, params)
		if err != nil {
			return nil, err
		}
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		if res.NextCursor == "" {
			break
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
	slices.Sort(names)
	return names, nil
}

// waitTools polls tools/list until every name in want is there and every
// name in gone is not; it returns the list.
func (s *rlSession) waitTools(t *testing.T, want, gone []string) []string {
	t.Helper()
	var got []string
	rlEventually(t, 10*time.Second, fmt.Sprintf("tools/list has %v and not %v", want, gone), func() error {
		names, err := s.tools()
		if err != nil {
			return err
		}
		for _, w := range want {
			if !slices.Contains(names, w) {
				return fmt.Errorf("missing %s in %v", w, names)
			}
		}
		for _, g := range gone {
			if slices.Contains(names, g) {
				return fmt.Errorf("%s still listed in %v", g, names)
			}
		}
		got = names
		return nil
	})
	return got
}

// call calls a tool that echoes (demo echo, web lookup/shout) and returns its
// text, or the error.
func (s *rlSession) call(name, text string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": text}})
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", fmt.Errorf("%s returned a tool error: %s", name, rlText(res))
	}
	return rlText(res), nil
}

// mustEcho calls name with text and fails the test unless it comes back.
func (s *rlSession) mustEcho(t *testing.T, name, want string) {
	t.Helper()
	got, err := s.call(name, want)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	if !strings.Contains(got, want) {
		t.Fatalf("call %s: got %q, want it to contain %q", name, got, want)
	}
}

func rlText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// waitChanged waits until the session has received at least n
// tools/list_changed notifications in total.
func (s *rlSession) waitChanged(t *testing.T, n int64, what string) {
	t.Helper()
	rlEventually(t, 5*time.Second, what, func() error {
		if got := s.changed.Load(); got < n {
			return fmt.Errorf("%d tools/list_changed so far, want %d", got, n)
		}
		return nil
	})
}

// rlQuiet is how long a test watches for notifications that must not come
// (more than the hub's 250 ms coalescing window, with margin for a loaded
// machine). It bounds an observation, it is not used to synchronise.
const rlQuiet = 900 * time.Millisecond

// settleChanged watches the counter for rlQuiet and returns its value then.
func (s *rlSession) settleChanged() int64 {
	deadline := time.Now().Add(rlQuiet)
	for time.Now().Before(deadline) {
		time.Sleep(rlPoll)
	}
	return s.changed.Load()
}

// rlWeb is the HTTP upstream: an official Go SDK server on httptest whose
// tool list the test can change. It counts the sessions the hub opens on it
// (initialize or server/discover requests), so a test can tell that the
// hub kept its connection.
type rlWeb struct {
	srv     *mcp.Server
	ts      *httptest.Server
	opened  atomic.Int64
	methods sync.Map // JSON-RPC method → *atomic.Int64, for the report
}

type rlTextIn struct {
	Text string `json:"text" jsonschema:"the text to return"`
}

func rlNewWeb(t *testing.T) *rlWeb {
	t.Helper()
	w := &rlWeb{srv: mcp.NewServer(&mcp.Implementation{Name: "web", Version: "1"}, nil)}
	mcp.AddTool(w.srv, &mcp.Tool{Name: "lookup", Description: "Returns the text it is given."},
		func(_ context.Context, _ *mcp.CallToolRequest, in rlTextIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "web: " + in.Text}}}, nil, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return w.srv }, nil)
	w.ts = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method != "" {
				c, _ := w.methods.LoadOrStore(msg.Method, new(atomic.Int64))
				c.(*atomic.Int64).Add(1)
				if msg.Method == "initialize" || msg.Method == "server/discover" {
					w.opened.Add(1)
				}
			}
		}
		handler.ServeHTTP(rw, r)
	}))
	t.Cleanup(func() {
		w.ts.CloseClientConnections()
		w.ts.Close()
	})
	return w
}

// addShout adds a tool, which makes the SDK server send
// notifications/tools/list_changed to the hub.
func (w *rlWeb) addShout() {
	mcp.AddTool(w.srv, &mcp.Tool{Name: "shout", Description: "Returns the text it is given, loudly."},
		func(_ context.Context, _ *mcp.CallToolRequest, in rlTextIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.ToUpper(in.Text)}}}, nil, nil
		})
}

func (w *rlWeb) methodCounts() string {
	var parts []string
	w.methods.Range(func(k, v any) bool {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v.(*atomic.Int64).Load()))
		return true
	})
	slices.Sort(parts)
	return strings.Join(parts, " ")
}
