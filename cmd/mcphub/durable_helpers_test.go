package main

// Helpers for durable_test.go: the durable-session tests run `mcphub serve`
// as a real process (so it can be killed with SIGKILL and started again on
// the same data directory), or a hub in this process wired to the SQLite
// store as serve.go wires it, and talk to it with raw HTTP so that every
// event id, Last-Event-ID and status code is visible. Every identifier here
// starts with "dur" so that it cannot collide with the helpers of the other
// test files of this package.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/hub"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/sse"
	"github.com/mcphub/mcphub/registry"
	"github.com/mcphub/mcphub/store"
)

const (
	// durVersion is the protocol revision the raw client negotiates: the
	// one whose streams start with a priming event.
	durVersion = "2025-11-25"
	// durAcceptBoth is what a compliant client sends on every POST.
	durAcceptBoth = "application/json, text/event-stream"
	// durPollEvery is the interval of every poll loop; each has a deadline.
	durPollEvery = 20 * time.Millisecond
)

// ---------------------------------------------------------------------------
// The mcphub binary and `mcphub serve` processes.

var durBuild struct {
	once sync.Once
	path string
	err  error
}

// durBinary builds ./cmd/mcphub once per test process, into a directory
// keyed by this source tree so that repeated runs reuse it (go build only
// rewrites it when the sources changed).
func durBinary(t testing.TB) string {
	t.Helper()
	durBuild.once.Do(func() {
		wd, err := os.Getwd()
		if err != nil {
			durBuild.err = err
			return
		}
		sum := sha256.Sum256([]byte(wd))
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("mcphub-durable-test-%d-%x", os.Getuid(), sum[:6]))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			durBuild.err = err
			return
		}
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		out := filepath.Join(dir, "mcphub")
		// One retry: other builds sharing the build cache can make a
		// first attempt fail spuriously.
		for attempt := 0; attempt < 2; attempt++ {
			b, err := exec.Command(goTool, "build", "-o", out, ".").CombinedOutput()
			if err == nil {
				durBuild.err = nil
				break
			}
			durBuild.err = fmt.Errorf("go build: %v\n%s", err, b)
		}
		if durBuild.err != nil {
			return
		}
		durBuild.path = out
	})
	if durBuild.err != nil {
		t.Fatal(durBuild.err)
	}
	return durBuild.path
}

// durFreePort returns a loopback address whose port was free a moment ago.
// The hub must come back on the same port after a kill, so the address is
// written into [hub] listen rather than picked by the hub.
func durFreePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// durServe is one run of `mcphub serve`.
type durServe struct {
	cmd    *exec.Cmd
	out    syncBuffer // stdout and stderr
	exited chan struct{}
	werr   error // set before exited is closed
}

// durHubDir is the home of the process-level tests: a registry, a data
// directory, and the runs of `mcphub serve` over them.
type durHubDir struct {
	t    *testing.T
	bin  string
	home string
	cfg  string
	data string
	addr string
	runs []*durServe
}

// durNewHubDir writes a registry listening on a fixed free port with the
// given [servers.*] tables.
func durNewHubDir(t *testing.T, servers string) *durHubDir {
	t.Helper()
	return durNewHubDirWith(t, "", servers)
}

// durNewHubDirWith is durNewHubDir with extra [hub] keys.
func durNewHubDirWith(t *testing.T, hubExtra, servers string) *durHubDir {
	t.Helper()
	home := t.TempDir()
	d := &durHubDir{t: t, bin: durBinary(t), home: home,
		cfg: filepath.Join(home, "hub.toml"), data: filepath.Join(home, "data"), addr: durFreePort(t)}
	text := fmt.Sprintf("[hub]\nlisten = %q\n%s\n\n%s", d.addr, hubExtra, servers)
	if err := os.WriteFile(d.cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, r := range d.runs {
				t.Logf("mcphub serve run %d output:\n%s", i+1, r.out.String())
			}
		}
	})
	return d
}

// start runs `mcphub serve --config … --data-dir …`. It does not wait for
// the hub to answer. Cleanup stops the process by its PID: SIGTERM, then
// SIGKILL if it is still there after 10 s.
func (d *durHubDir) start() *durServe {
	t := d.t
	t.Helper()
	r := &durServe{exited: make(chan struct{})}
	r.cmd = exec.Command(d.bin, "serve", "--config", d.cfg, "--data-dir", d.data, "--log-level", "debug")
	r.cmd.Dir = d.home
	r.cmd.Env = durEnv(d.home)
	r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.werr = r.cmd.Wait()
		close(r.exited)
	}()
	d.runs = append(d.runs, r)
	t.Cleanup(func() { r.stop() })
	return r
}

// durEnv is the environment of a hub: this one without mcphub's own
// variables (a stray MCPHUB_E2E_FAKE would make a child a fake server), with
// a private HOME.
func durEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "MCPHUB_") || strings.HasPrefix(k, "XDG_") || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home)
}

func (r *durServe) pid() int { return r.cmd.Process.Pid }

func (r *durServe) running() bool {
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// kill9 kills the hub with SIGKILL and waits until it is reaped.
func (r *durServe) kill9(t *testing.T) {
	t.Helper()
	if err := killPID(r.pid()); err != nil {
		t.Fatalf("kill -9 %d: %v", r.pid(), err)
	}
	select {
	case <-r.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("mcphub serve (pid %d) survived SIGKILL for 10 s", r.pid())
	}
}

// stop ends the process by its PID: SIGTERM, then SIGKILL.
func (r *durServe) stop() {
	if !r.running() {
		return
	}
	termPID(r.pid())
	select {
	case <-r.exited:
	case <-time.After(10 * time.Second):
		killPID(r.pid())
		<-r.exited
	}
}

// status fetches /readyz once.
func (d *durHubDir) status() (*hub.Status, error) { return fetchReadyz(d.addr) }

// fetchReadyz fetches http://addr/readyz once and decodes the status.
func fetchReadyz(addr string) (*hub.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/readyz: HTTP %d: %s", resp.StatusCode, body)
	}
	var st hub.Status
	if err := json.Unmarshal(body, &st); err != nil {
		return nil, fmt.Errorf("/readyz: %v: %s", err, body)
	}
	return &st, nil
}

// waitConnected polls /readyz until the server is connected and returns
// its status (with the PID of a stdio server).
func (d *durHubDir) waitConnected(r *durServe, server string) hub.ServerStatus {
	t := d.t
	t.Helper()
	var last string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if !r.running() {
			t.Fatalf("mcphub serve exited: %v", r.werr)
		}
		st, err := d.status()
		if err != nil {
			last = err.Error()
		} else {
			for _, s := range st.Servers {
				if s.Name == server {
					last = fmt.Sprintf("%s is %s (%s)", s.Name, s.State, s.LastError)
					if s.State == hub.StateConnected {
						return s
					}
				}
			}
		}
		time.Sleep(durPollEvery)
	}
	t.Fatalf("server %s did not connect within 20 s: %s", server, last)
	return hub.ServerStatus{}
}

// durProcGone reports whether a process has exited: no such PID, or a
// zombie. A stdio child outlives its parent only by being reparented to
// PID 1, and when PID 1 does not reap orphans (as in some containers) the
// exited child stays a zombie forever; it runs no code, so it counts as gone.
// Only Linux has /proc to tell a zombie from a running process; elsewhere a
// PID that pidGone does not report gone counts as running.
func durProcGone(pid int) (gone bool, how string) {
	if pidGone(pid) {
		return true, "ESRCH"
	}
	if runtime.GOOS != "linux" {
		return false, "running"
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist), "no /proc entry"
	}
	// The state follows the parenthesised command name.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return true, "zombie (exited; PID 1 has not reaped it)"
	}
	return false, "running"
}

// logStored logs what the dead hub left in its data directory for a
// server: the upstream connection state a restart resumes (session id, last
// event id per upstream stream) and the in-flight call records.
func (d *durHubDir) logStored(server string) {
	t := d.t
	t.Helper()
	db, err := store.Open(d.data)
	if err != nil {
		t.Logf("open the store: %v", err)
		return
	}
	defer db.Close()
	state, err := db.Upstream(server)
	t.Logf("stored upstream state of %s: %s (err %v)", server, durShort(state), err)
	calls, err := db.Calls()
	t.Logf("stored in-flight calls: %+v (err %v)", calls, err)
}

// ---------------------------------------------------------------------------
// A raw Streamable HTTP client.

// durClient speaks Streamable HTTP by hand against one endpoint URL.
type durClient struct {
	t   testing.TB
	url string
	sid string
	hc  *http.Client
}

func durNewClient(t testing.TB, url string) *durClient {
	// No overall timeout: SSE responses are long, and the tests bound each
	// read with their own deadlines. A hub that accepts a connection but
	// never answers is bounded here (list calls may wait out the hub's
	// 10 s warm-up).
	tr := &http.Transport{MaxIdleConnsPerHost: 16, ResponseHeaderTimeout: 15 * time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	return &durClient{t: t, url: url, hc: &http.Client{Transport: tr}}
}

// post sends one JSON-RPC message and returns the response, body unread.
func (c *durClient) post(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", durAcceptBoth)
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("MCP-Protocol-Version", durVersion)
	}
	return c.hc.Do(req)
}

// get opens a GET stream, resuming after lastEventID when it is set.
func (c *durClient) get(ctx context.Context, lastEventID string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.sid)
	req.Header.Set("MCP-Protocol-Version", durVersion)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	return c.hc.Do(req)
}

// call sends a request and waits for its response, whether the hub answers
// with JSON or with an SSE stream. It returns the HTTP status too.
func (c *durClient) call(id int, method string, params any) (int, *jsonrpc.Message) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := c.post(ctx, durRequest(id, method, params))
	if err != nil {
		c.t.Fatalf("POST %s: %v", method, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, &jsonrpc.Message{Result: b}
	}
	if method == "initialize" {
		c.sid = resp.Header.Get("Mcp-Session-Id")
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct == "application/json" {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			c.t.Fatalf("%s: read: %v", method, err)
		}
		m, err := jsonrpc.Decode(b)
		if err != nil {
			c.t.Fatalf("%s: decode %s: %v", method, b, err)
		}
		return resp.StatusCode, m
	}
	r := sse.NewReader(resp.Body, 0)
	for {
		ev, err := r.Next()
		if err != nil {
			c.t.Fatalf("%s: the SSE stream ended before the response: %v", method, err)
		}
		if ev.Data == "" {
			continue
		}
		m, err := jsonrpc.Decode([]byte(ev.Data))
		if err == nil && m.IsResponse() && string(m.ID) == strconv.Itoa(id) {
			return resp.StatusCode, m
		}
	}
}

// initialize opens a session at durVersion and sends notifications/initialized.
func (c *durClient) initialize() {
	c.t.Helper()
	status, m := c.call(1, "initialize", map[string]any{
		"protocolVersion": durVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "durable-test", "version": "0"},
	})
	if status != http.StatusOK || m.Error != nil || c.sid == "" {
		c.t.Fatalf("initialize: HTTP %d, sid %q, %s", status, c.sid, m.Encode())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.post(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		c.t.Fatalf("notifications/initialized: HTTP %d, want 202", resp.StatusCode)
	}
}

// durRequest encodes a JSON-RPC request with an integer id.
func durRequest(id int, method string, params any) []byte {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		panic(err)
	}
	return b
}

// durToolCall is the params of a tools/call that asks for progress.
func durToolCall(name string, args map[string]any, progressToken string) map[string]any {
	return map[string]any{"name": name, "arguments": args, "_meta": map[string]any{"progressToken": progressToken}}
}

// ---------------------------------------------------------------------------
// Reading SSE streams.

// durEvent is one SSE event as the client saw it; Msg is nil for an event
// without data (a priming event).
type durEvent struct {
	ID  string
	Msg *jsonrpc.Message
}

// durStream reads one SSE response in the background. Events arrive on
// events, which is closed when the response ends; err then says why.
type durStream struct {
	body   io.ReadCloser
	events chan durEvent
	err    error // valid once events is closed
}

func durFollow(body io.ReadCloser) *durStream {
	s := &durStream{body: body, events: make(chan durEvent, 1024)}
	go func() {
		defer close(s.events)
		r := sse.NewReader(body, 0)
		for {
			ev, err := r.Next()
			if err != nil {
				s.err = err
				return
			}
			if !ev.HasID && ev.Data == "" {
				continue // a heartbeat comment
			}
			de := durEvent{ID: ev.ID}
			if ev.Data != "" {
				m, err := jsonrpc.Decode([]byte(ev.Data))
				if err != nil {
					s.err = fmt.Errorf("event %s is not JSON-RPC: %v: %q", ev.ID, err, ev.Data)
					return
				}
				de.Msg = m
			}
			s.events <- de
		}
	}()
	return s
}

// cut closes the connection and returns what had been read before the
// close: the events still queued, until the reader stops.
func (s *durStream) cut(deadline time.Duration) []durEvent {
	s.body.Close()
	var out []durEvent
	timeout := time.After(deadline)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return out
			}
			out = append(out, ev)
		case <-timeout:
			return out
		}
	}
}

// durSplitID splits an event id "<stream>_<seq>".
func durSplitID(t testing.TB, id string) (string, int) {
	t.Helper()
	i := strings.LastIndexByte(id, '_')
	if i <= 0 {
		t.Fatalf("event id %q is not <stream>_<seq>", id)
	}
	seq, err := strconv.Atoi(id[i+1:])
	if err != nil {
		t.Fatalf("event id %q is not <stream>_<seq>", id)
	}
	return id[:i], seq
}

// durProgress is the interesting part of notifications/progress.
type durProgress struct {
	Token    string  `json:"progressToken"`
	Progress float64 `json:"progress"`
	Total    float64 `json:"total"`
	Message  string  `json:"message"`
}

// durAsProgress decodes a progress notification; ok is false for anything
// else.
func durAsProgress(m *jsonrpc.Message) (durProgress, bool) {
	var p durProgress
	if m == nil || m.Method != "notifications/progress" {
		return p, false
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return p, false
	}
	return p, true
}

// durResultText is the concatenated text of a tools/call result.
func durResultText(m *jsonrpc.Message) string {
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	json.Unmarshal(m.Result, &res)
	var b strings.Builder
	for _, c := range res.Content {
		b.WriteString(c.Text)
	}
	if res.IsError {
		return "tool error: " + b.String()
	}
	return b.String()
}

// durResume retries GET with Last-Event-ID until the hub answers, whatever
// the reason it cannot yet (not listening, or the stream is still held by
// the handler of the connection that was just cut: 409). Any other answer
// than 200 or 409 fails the test at once.
func (c *durClient) resume(lastEventID string, within time.Duration) *durStream {
	c.t.Helper()
	deadline := time.Now().Add(within)
	var last string
	for time.Now().Before(deadline) {
		resp, err := c.get(context.Background(), lastEventID)
		if err != nil {
			last = err.Error()
			time.Sleep(durPollEvery)
			continue
		}
		if resp.StatusCode == http.StatusOK {
			return durFollow(resp.Body)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusConflict {
			c.t.Fatalf("GET with Last-Event-ID %s (session %s): HTTP %d: %s", lastEventID, c.sid, resp.StatusCode, b)
		}
		last = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, b)
		time.Sleep(durPollEvery)
	}
	c.t.Fatalf("GET with Last-Event-ID %s was not answered within %s: %s", lastEventID, within, last)
	return nil
}

// ---------------------------------------------------------------------------
// An in-process Go SDK upstream.

// durUpstream is a Go SDK server served over Streamable HTTP in the test
// process, with a slow_progress tool and a subscribable resource.
type durUpstream struct {
	srv      *mcp.Server
	url      string
	calls    atomic.Int64 // slow_progress invocations
	progress atomic.Int64 // progress notifications sent, all calls
	stop     chan struct{}
}

// durFeedURI is the upstream resource whose updates go to GET streams.
const durFeedURI = "test://durable/feed"

type durSlowIn struct {
	N       int    `json:"n"`
	DelayMs int    `json:"delay_ms,omitempty"`
	Tag     string `json:"tag,omitempty"`
}

// durNewUpstream starts the upstream; with resumable it keeps every event in
// an SDK MemoryEventStore, so a client (the hub) that loses a stream can
// resume it by GET with Last-Event-ID.
func durNewUpstream(t testing.TB, resumable bool) *durUpstream {
	t.Helper()
	u := &durUpstream{stop: make(chan struct{})}
	u.srv = mcp.NewServer(&mcp.Implementation{Name: "durable-upstream", Version: "1"}, &mcp.ServerOptions{
		Logger:             slog.New(slog.DiscardHandler),
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	mcp.AddTool(u.srv, &mcp.Tool{Name: "slow_progress", Description: "Sends n progress notifications, delay_ms apart, then returns \"done n\"."},
		func(ctx context.Context, req *mcp.CallToolRequest, in durSlowIn) (*mcp.CallToolResult, any, error) {
			u.calls.Add(1)
			tok := req.Params.GetProgressToken()
			for i := 1; i <= in.N; i++ {
				if tok != nil {
					// The error is ignored on purpose: while the hub is
					// dead the event is still stored for replay.
					req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
						ProgressToken: tok, Progress: float64(i), Total: float64(in.N), Message: in.Tag + "/" + strconv.Itoa(i)})
					u.progress.Add(1)
				}
				if in.DelayMs > 0 {
					select {
					case <-time.After(time.Duration(in.DelayMs) * time.Millisecond):
					case <-u.stop:
						return nil, nil, errors.New("test over")
					}
				}
			}
			text := "done " + strconv.Itoa(in.N)
			if in.Tag != "" {
				text += " " + in.Tag
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
	u.srv.AddResource(&mcp.Resource{URI: durFeedURI, Name: "feed", MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: durFeedURI, MIMEType: "text/plain", Text: "feed"}}}, nil
		})
	opts := &mcp.StreamableHTTPOptions{Logger: slog.New(slog.DiscardHandler)}
	if resumable {
		opts.EventStore = mcp.NewMemoryEventStore(nil)
	}
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return u.srv }, opts))
	u.url = ts.URL + "/mcp"
	t.Cleanup(func() {
		close(u.stop)
		ts.CloseClientConnections()
		ts.Close()
	})
	return u
}

// durRemoteTable is the registry table of an HTTP upstream.
func durRemoteTable(name, url string) string {
	return fmt.Sprintf("[servers.%s]\nurl = %q\ntransport = \"streamable-http\"\nconnect_timeout = \"10s\"\n\n", name, url)
}

// ---------------------------------------------------------------------------
// An in-process hub with the SQLite store, wired as serve.go wires it.

// durInProcessHub is a hub served by httptest.
type durInProcessHub struct {
	url  string
	logs *syncBuffer
}

// durStartHub starts a hub over the registry's servers, with the SQLite
// store in a temporary directory when withStore is set (as `mcphub serve`),
// or none (as `mcphub serve --no-store`), and waits until every server is
// connected.
func durStartHub(t testing.TB, servers string, withStore bool) *durInProcessHub {
	t.Helper()
	text := "[hub]\nlisten = \"127.0.0.1:0\"\n\n" + servers
	reg, err := registry.Parse("", []byte(text), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("registry: %v\n%s", err, text)
	}
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	db, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	opts := hub.Options{Registry: reg, NewUpstream: newStoredUpstream(logger, db, nil), Version: "test", Logger: logger,
		Heartbeat: 5 * time.Second}
	if withStore {
		opts.Store = hubStore{db}
	}
	h := hub.New(opts)
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("hub log:\n%s", logs.String())
		}
		h.Close()
		ts.CloseClientConnections()
		ts.Close()
		db.Close()
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		ok := true
		for _, s := range h.Status().Servers {
			ok = ok && s.State == hub.StateConnected
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("servers did not connect: %+v", h.Status().Servers)
		}
		time.Sleep(durPollEvery)
	}
	return &durInProcessHub{url: ts.URL + "/mcp", logs: logs}
}
