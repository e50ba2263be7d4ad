package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/hub"
	"github.com/mcphub/mcphub/registry"
)

// fakeEnv, when set, makes the test binary a stdio MCP server named by its
// value instead of running tests: that is how the e2e tests get a real stdio
// upstream whose behaviour they control.
const fakeEnv = "MCPHUB_E2E_FAKE"

func TestMain(m *testing.M) {
	if name := os.Getenv(fakeEnv); name != "" {
		f := newFake(name, true)
		if err := f.srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "fake server:", err)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fake is an upstream MCP server (Go SDK) whose tools let tests observe what
// reached it: which calls are in flight, which saw cancellation, its PID.
type fake struct {
	name string
	srv  *mcp.Server

	mu        sync.Mutex
	inflight  map[string]bool
	cancelled []string
	release   map[string]chan struct{}
}

// fakeState is what the state tool reports.
type fakeState struct {
	Name      string   `json:"name"`
	PID       int      `json:"pid"`
	Inflight  []string `json:"inflight"`
	Cancelled []string `json:"cancelled"`
}

type (
	textIn struct {
		Text string `json:"text"`
	}
	tagIn struct {
		Tag string `json:"tag"`
	}
	noIn       struct{}
	progressIn struct {
		Tag     string `json:"tag"`
		N       int    `json:"n"`
		DelayMs int    `json:"delayMs,omitempty"`
	}
	sampleIn struct {
		Prompt string `json:"prompt"`
	}
	mutateIn struct {
		Add   []string `json:"add"`
		GapMs int      `json:"gapMs,omitempty"`
	}
	uriIn struct {
		URI string `json:"uri"`
	}
	bytesIn struct {
		Bytes int `json:"bytes"`
	}
)

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func newFake(name string, stdio bool) *fake {
	f := &fake{name: name, inflight: map[string]bool{}, release: map[string]chan struct{}{}}
	f.srv = mcp.NewServer(&mcp.Implementation{Name: "fake-" + name, Version: "1"}, &mcp.ServerOptions{
		Logger:             slog.New(slog.DiscardHandler),
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	s := f.srv
	echo := func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
		return textResult(name + ":" + in.Text), nil, nil
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, echo)
	mcp.AddTool(s, &mcp.Tool{Name: "progress"}, func(ctx context.Context, req *mcp.CallToolRequest, in progressIn) (*mcp.CallToolResult, any, error) {
		tok := req.Params.GetProgressToken()
		for i := 0; i < in.N; i++ {
			if tok != nil {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: tok, Progress: float64(i + 1), Total: float64(in.N),
					Message: fmt.Sprintf("%s/%d", in.Tag, i),
				})
			}
			time.Sleep(time.Duration(in.DelayMs) * time.Millisecond)
		}
		return textResult("done:" + in.Tag), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "block"}, func(ctx context.Context, _ *mcp.CallToolRequest, in tagIn) (*mcp.CallToolResult, any, error) {
		return f.block(ctx, in.Tag)
	})
	mcp.AddTool(s, &mcp.Tool{Name: "release"}, func(_ context.Context, _ *mcp.CallToolRequest, in tagIn) (*mcp.CallToolResult, any, error) {
		close(f.releaseChan(in.Tag))
		return textResult("ok"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "state"}, func(context.Context, *mcp.CallToolRequest, noIn) (*mcp.CallToolResult, any, error) {
		b, _ := json.Marshal(f.state())
		return textResult(string(b)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sample"}, func(ctx context.Context, req *mcp.CallToolRequest, in sampleIn) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 16,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Prompt}}}})
		if err != nil {
			return nil, nil, err
		}
		tc, _ := res.Content.(*mcp.TextContent)
		if tc == nil {
			return nil, nil, fmt.Errorf("sampling answered %T, not text", res.Content)
		}
		return textResult("sampled:" + tc.Text), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "mutate"}, func(_ context.Context, _ *mcp.CallToolRequest, in mutateIn) (*mcp.CallToolResult, any, error) {
		for i, n := range in.Add {
			if i > 0 {
				time.Sleep(time.Duration(in.GapMs) * time.Millisecond)
			}
			mcp.AddTool(s, &mcp.Tool{Name: n}, echo)
		}
		return textResult("ok"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "touch"}, func(_ context.Context, _ *mcp.CallToolRequest, in uriIn) (*mcp.CallToolResult, any, error) {
		// Sent while this call is in flight, but it belongs to no request.
		s.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: in.URI})
		return textResult("touched"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "big"}, func(_ context.Context, _ *mcp.CallToolRequest, in bytesIn) (*mcp.CallToolResult, any, error) {
		return textResult(strings.Repeat("x", in.Bytes)), nil, nil
	})
	if stdio {
		// A line on stdout that is not JSON-RPC, then a normal result.
		mcp.AddTool(s, &mcp.Tool{Name: "noise"}, func(context.Context, *mcp.CallToolRequest, noIn) (*mcp.CallToolResult, any, error) {
			os.Stdout.Write([]byte("this is not json {\n"))
			return textResult("after noise"), nil, nil
		})
		mcp.AddTool(s, &mcp.Tool{Name: "crash"}, func(context.Context, *mcp.CallToolRequest, noIn) (*mcp.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	}
	s.AddPrompt(&mcp.Prompt{Name: "slow", Arguments: []*mcp.PromptArgument{{Name: "tag"}}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			if _, _, err := f.block(ctx, "prompt:"+req.Params.Arguments["tag"]); err != nil {
				return nil, err
			}
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "slow"}}}}, nil
		})
	uri := "test://" + name + "/res"
	s.AddResource(&mcp.Resource{URI: uri, Name: "res", MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: "res of " + name}}}, nil
		})
	return f
}

// block waits until the tag is released or the request is cancelled, and
// records which of the two happened.
func (f *fake) block(ctx context.Context, tag string) (*mcp.CallToolResult, any, error) {
	rel := f.releaseChan(tag)
	f.mu.Lock()
	f.inflight[tag] = true
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.inflight, tag)
		f.mu.Unlock()
	}()
	select {
	case <-rel:
		return textResult("released:" + tag), nil, nil
	case <-ctx.Done():
		f.mu.Lock()
		f.cancelled = append(f.cancelled, tag)
		f.mu.Unlock()
		return nil, nil, ctx.Err()
	}
}

func (f *fake) releaseChan(tag string) chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := f.release[tag]
	if ch == nil {
		ch = make(chan struct{})
		f.release[tag] = ch
	}
	return ch
}

func (f *fake) state() fakeState {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := fakeState{Name: f.name, PID: os.Getpid(), Cancelled: slices.Clone(f.cancelled)}
	for t := range f.inflight {
		st.Inflight = append(st.Inflight, t)
	}
	sort.Strings(st.Inflight)
	return st
}

// startHTTPFake serves a fake over Streamable HTTP and returns its endpoint.
func startHTTPFake(t *testing.T, name string) string {
	return startGatedHTTPFake(t, name, nil)
}

// startGatedHTTPFake is startHTTPFake whose requests wait for gate to close
// (nil: no gate), so the hub sees the server starting for as long as a test
// wants.
func startGatedHTTPFake(t *testing.T, name string, gate <-chan struct{}) string {
	t.Helper()
	f := newFake(name, false)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return f.srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gate != nil {
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts.URL + "/mcp"
}

// stdioServer is the registry table of a stdio fake: this test binary.
// GORACE keeps a -race child from sleeping a second on exit.
func stdioServer(t *testing.T, name, extra string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("[servers.%s]\ncommand = %q\nenv = { %s = %q, GORACE = \"atexit_sleep_ms=0\" }\n%s\n",
		name, exe, fakeEnv, name, extra)
}

// httpServer is the registry table of an HTTP fake.
func httpServer(name, url, extra string) string {
	return fmt.Sprintf("[servers.%s]\nurl = %q\ntransport = \"streamable-http\"\n%s\n", name, url, extra)
}

// hubFixture is an in-process hub served over httptest.
type hubFixture struct {
	t   *testing.T
	h   *hub.Hub
	url string

	mu   sync.Mutex
	pids map[int]bool // every upstream process seen; none may survive Close
}

// syncBuffer collects logs; it is printed when a test fails.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startHub parses the registry, starts a hub over it, serves it, and waits
// until every server is connected. hubTable holds extra [hub] keys.
func startHub(t *testing.T, hubTable string, servers []string, tweak func(*hub.Options)) *hubFixture {
	t.Helper()
	f := newHub(t, hubTable, servers, tweak, nil)
	f.waitConnected(nil)
	return f
}

// newHub is startHub without the wait; wrap, when set, wraps the hub's
// handler.
func newHub(t *testing.T, hubTable string, servers []string, tweak func(*hub.Options), wrap func(http.Handler) http.Handler) *hubFixture {
	t.Helper()
	text := "[hub]\nlisten = \"127.0.0.1:0\"\n" + hubTable + "\n" + strings.Join(servers, "\n")
	reg, err := registry.Parse("", []byte(text), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("registry: %v\n%s", err, text)
	}
	logs := &syncBuffer{}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("E2E_LOG") != "" {
			t.Logf("hub log:\n%s", logs.String())
		}
	})
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := hub.Options{Registry: reg, NewUpstream: newUpstream(logger), Version: "test", Logger: logger,
		Heartbeat: 5 * time.Second, ListChangedDelay: 200 * time.Millisecond}
	if tweak != nil {
		tweak(&opts)
	}
	h := hub.New(opts)
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var handler http.Handler = h
	if wrap != nil {
		handler = wrap(h)
	}
	srv := httptest.NewServer(handler)
	f := &hubFixture{t: t, h: h, url: srv.URL, pids: map[int]bool{}}
	t.Cleanup(func() {
		for _, s := range h.Status().Servers {
			f.addPID(s.PID)
		}
		h.Close()
		srv.CloseClientConnections()
		srv.Close()
		f.mu.Lock()
		defer f.mu.Unlock()
		for pid := range f.pids {
			if !pidGone(pid) {
				t.Errorf("upstream process %d survived hub Close", pid)
			}
		}
	})
	return f
}

func (f *hubFixture) addPID(pid int) {
	if pid > 0 {
		f.mu.Lock()
		f.pids[pid] = true
		f.mu.Unlock()
	}
}

// waitConnected waits until every server is connected and, for each server
// in avoid, with a PID other than the one given.
func (f *hubFixture) waitConnected(avoid map[string]int) hub.Status {
	f.t.Helper()
	var st hub.Status
	ok := poll(15*time.Second, func() bool {
		st = f.h.Status()
		for _, s := range st.Servers {
			f.addPID(s.PID)
			if s.State != hub.StateConnected {
				return false
			}
			if old, has := avoid[s.Name]; has && (s.PID == old || s.PID == 0) {
				return false
			}
		}
		return true
	})
	if !ok {
		f.t.Fatalf("servers did not connect: %+v", st.Servers)
	}
	return st
}

// poll calls cond until it holds or the deadline passes.
func poll(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// connect opens a Go SDK client session on an endpoint path of the hub.
func (f *hubFixture) connect(path string, opts *mcp.ClientOptions) *mcp.ClientSession {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "0"}, opts)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: f.url + path},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		f.t.Fatalf("connect %s: %v", path, err)
	}
	f.t.Cleanup(func() { cs.Close() })
	return cs
}

// callText calls a tool and returns its text; a tool error is an error.
func callText(ctx context.Context, cs *mcp.ClientSession, name string, args any) (string, error) {
	return callTextParams(ctx, cs, &mcp.CallToolParams{Name: name, Arguments: args})
}

func callTextParams(ctx context.Context, cs *mcp.ClientSession, p *mcp.CallToolParams) (string, error) {
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return "", fmt.Errorf("tool %s failed: %s", p.Name, b.String())
	}
	return b.String(), nil
}

// mustCall is callText with a deadline that fails the test on error.
func mustCall(t *testing.T, cs *mcp.ClientSession, name string, args any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := callText(ctx, cs, name, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out
}

// upstreamState asks a fake, through the hub, what it has seen.
func upstreamState(t *testing.T, cs *mcp.ClientSession, tool string) fakeState {
	t.Helper()
	var st fakeState
	if err := json.Unmarshal([]byte(mustCall(t, cs, tool, map[string]any{})), &st); err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return st
}

// readyz fetches /readyz.
func (f *hubFixture) readyz() hub.Status {
	f.t.Helper()
	resp, err := http.Get(f.url + "/readyz")
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var st hub.Status
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &st) != nil {
		f.t.Fatalf("/readyz: %d %s", resp.StatusCode, body)
	}
	for _, s := range st.Servers {
		f.addPID(s.PID)
	}
	return st
}

// serverStatus returns one server's entry of a status.
func serverStatus(st hub.Status, name string) hub.ServerStatus {
	for _, s := range st.Servers {
		if s.Name == name {
			return s
		}
	}
	return hub.ServerStatus{}
}

// rpcReply is a decoded JSON-RPC response.
type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// readSSE parses an SSE body into its JSON-RPC messages, skipping priming
// events and comments, and closes out at the end.
func readSSE(r io.Reader, out chan<- rpcReply) {
	defer close(out)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if d := strings.Join(data, "\n"); strings.TrimSpace(d) != "" {
				var m rpcReply
				if json.Unmarshal([]byte(d), &m) == nil {
					out <- m
				}
			}
			data = nil
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
}
