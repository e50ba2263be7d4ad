package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ---------------------------------------------------------------------------
// Upstreams: the fake MCP server.

// fake is an upstream MCP server (Go SDK) whose tools let tests observe what
// reached it: which calls are in flight, which saw cancellation, its PID,
// how many progress notifications and subscriptions it saw.
type fake struct {
	name string
	srv  *mcp.Server
	stop chan struct{} // closed when the test ends; nil over stdio

	calls      atomic.Int64 // slow_progress invocations
	progress   atomic.Int64 // slow_progress notifications sent, all calls
	subscribes atomic.Int64 // resources/subscribe requests

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
	slowIn struct {
		N       int    `json:"n"`
		DelayMs int    `json:"delay_ms,omitempty"`
		Tag     string `json:"tag,omitempty"`
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

// resURI is the URI of a fake's one resource.
func resURI(name string) string { return "test://" + name + "/res" }

func newFake(name string, stdio bool) *fake {
	f := &fake{name: name, inflight: map[string]bool{}, release: map[string]chan struct{}{}}
	f.srv = mcp.NewServer(&mcp.Implementation{Name: "fake-" + name, Version: "1"}, &mcp.ServerOptions{
		Logger:             slog.New(slog.DiscardHandler),
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { f.subscribes.Add(1); return nil },
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
	mcp.AddTool(s, &mcp.Tool{Name: "slow_progress", Description: "Sends n progress notifications, delay_ms apart, then returns \"done n tag\"."},
		f.slowProgress)
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
	uri := resURI(name)
	s.AddResource(&mcp.Resource{URI: uri, Name: "res", MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: "res of " + name}}}, nil
		})
	return f
}

// slowProgress sends n progress notifications 1..n, delay_ms apart, with
// messages "tag/i", then returns "done n tag". It ignores the request's
// context on purpose: while the hub is dead its notifications are still
// stored for replay (over a resumable HTTP stream), and it ends early only
// when the test does.
func (f *fake) slowProgress(ctx context.Context, req *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
	f.calls.Add(1)
	tok := req.Params.GetProgressToken()
	for i := 1; i <= in.N; i++ {
		if tok != nil {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: tok, Progress: float64(i), Total: float64(in.N), Message: in.Tag + "/" + strconv.Itoa(i)})
			f.progress.Add(1)
		}
		if in.DelayMs > 0 {
			select {
			case <-time.After(time.Duration(in.DelayMs) * time.Millisecond):
			case <-f.stop:
				return nil, nil, errors.New("test over")
			}
		}
	}
	return textResult(strings.TrimSpace("done " + strconv.Itoa(in.N) + " " + in.Tag)), nil, nil
}

// addShout adds a tool, which makes the SDK server send
// notifications/tools/list_changed to the hub.
func (f *fake) addShout() {
	mcp.AddTool(f.srv, &mcp.Tool{Name: "shout", Description: "Returns the text it is given, loudly."},
		func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			return textResult(strings.ToUpper(in.Text)), nil, nil
		})
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

// soakServer is the upstream of the soak: echo, progress (n notifications
// when the call has a progress token), block (until cancelled), inflight
// (how many blocks are running) and release (ends every running block, so a
// test that found some still running after their cancellation can clean up
// without waiting for them).
func soakServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "soak", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	var (
		inflight atomic.Int64
		mu       sync.Mutex
		release  = make(chan struct{})
	)
	type (
		echoIn struct {
			Text string `json:"text"`
		}
		progressIn struct {
			N       int `json:"n"`
			DelayMs int `json:"delayMs"`
		}
		none struct{}
	)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return textResult(in.Text), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "progress"}, func(ctx context.Context, req *mcp.CallToolRequest, in progressIn) (*mcp.CallToolResult, any, error) {
		tok := req.Params.GetProgressToken()
		for i := 1; i <= in.N; i++ {
			if tok != nil {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: float64(in.N)})
			}
			select {
			case <-time.After(time.Duration(in.DelayMs) * time.Millisecond):
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
		return textResult("done"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "block"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		inflight.Add(1)
		defer inflight.Add(-1)
		mu.Lock()
		rel := release
		mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-rel:
			return textResult("released"), nil, nil
		case <-time.After(time.Minute):
			return textResult("never cancelled"), nil, nil
		}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "release"}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		mu.Lock()
		close(release)
		release = make(chan struct{})
		mu.Unlock()
		return textResult("ok"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "inflight"}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		return textResult(fmt.Sprint(inflight.Load())), nil, nil
	})
	return s
}

// httpUpstream is an MCP server served over Streamable HTTP in this test
// process. It counts the requests it gets by method and the sessions the hub
// opens on it (initialize or server/discover), so a test can tell that the
// hub kept its connection.
type httpUpstream struct {
	*fake  // nil when it serves a server of the test's own
	url    string
	opened atomic.Int64

	methods sync.Map // JSON-RPC method → *atomic.Int64
}

// upstreamOpts is how an HTTP upstream differs from a plain fake.
type upstreamOpts struct {
	server    *mcp.Server     // serve this instead of a fake
	gate      <-chan struct{} // requests wait until it is closed (nil: no gate), so the hub sees the server starting for as long as a test wants
	resumable bool            // keep every event, so a client that loses a stream resumes it by GET with Last-Event-ID
}

// startUpstream serves a fake named name (or o.server) until the test ends.
func startUpstream(t testing.TB, name string, o upstreamOpts) *httpUpstream {
	t.Helper()
	u := &httpUpstream{}
	srv := o.server
	if srv == nil {
		u.fake = newFake(name, false)
		u.stop = make(chan struct{})
		srv = u.srv
	}
	opts := &mcp.StreamableHTTPOptions{Logger: slog.New(slog.DiscardHandler)}
	if o.resumable {
		opts.EventStore = mcp.NewMemoryEventStore(nil)
	}
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, opts)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.gate != nil {
			select {
			case <-o.gate:
			case <-r.Context().Done():
				return
			}
		}
		if r.Method == http.MethodPost {
			u.count(r)
		}
		handler.ServeHTTP(w, r)
	}))
	u.url = ts.URL + "/mcp"
	t.Cleanup(func() {
		if u.fake != nil {
			close(u.stop)
		}
		ts.CloseClientConnections()
		ts.Close()
	})
	return u
}

// count records the method of a POST and leaves its body to be read again.
func (u *httpUpstream) count(r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method == "" {
		return
	}
	c, _ := u.methods.LoadOrStore(msg.Method, new(atomic.Int64))
	c.(*atomic.Int64).Add(1)
	if msg.Method == "initialize" || msg.Method == "server/discover" {
		u.opened.Add(1)
	}
}

// methodCounts lists the requests by method, for failure messages.
func (u *httpUpstream) methodCounts() string {
	var parts []string
	u.methods.Range(func(k, v any) bool {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v.(*atomic.Int64).Load()))
		return true
	})
	slices.Sort(parts)
	return strings.Join(parts, " ")
}
