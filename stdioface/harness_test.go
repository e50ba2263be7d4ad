package stdioface

// The face's own test harness: a hub made of the go-sdk's Streamable HTTP
// server (with /healthz, as mcphub answers it), a line client that speaks
// newline-delimited JSON-RPC to a face over pipes, and a face run in this
// process. Nothing here starts a process.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// sessionVersion is the session-era revision the tests' clients speak.
const sessionVersion = "2025-11-25"

// faceInit is a client's initialize parameters.
var faceInit = json.RawMessage(`{"protocolVersion":"` + sessionVersion + `","capabilities":{},"clientInfo":{"name":"bare","version":"1"}}`)

// sdkHub is a hub stand-in: one MCP server at /mcp, whose tool mutate adds
// a tool (the server then tells every session its tool list changed, on
// the session's GET stream), and whose events can be resumed.
type sdkHub struct {
	url    string
	server *mcp.Server
	srv    *httptest.Server
}

type mutateIn struct {
	Add string `json:"add"`
}

func startSDKHub(t *testing.T) *sdkHub {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "sdk-hub", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in mutateIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo:" + in.Add}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "mutate"}, func(_ context.Context, _ *mcp.CallToolRequest, in mutateIn) (*mcp.CallToolResult, any, error) {
		s.AddTool(&mcp.Tool{Name: in.Add, InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "added " + in.Add}}}, nil, nil
	})
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)}))
	srv := httptest.NewServer(mux)
	h := &sdkHub{url: srv.URL, server: s, srv: srv}
	t.Cleanup(h.close)
	return h
}

// close takes the hub away: its port refuses connections and its streams
// are cut.
func (h *sdkHub) close() {
	h.srv.CloseClientConnections()
	h.srv.Close()
}

// sessions counts the hub's live sessions.
func (h *sdkHub) sessions() int {
	n := 0
	for range h.server.Sessions() {
		n++
	}
	return n
}

// targetOf is the target of the hub at base, an http:// URL ("" for none).
func targetOf(t *testing.T, base string) hubclient.Target {
	t.Helper()
	if base == "" {
		return hubclient.Target{}
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	return hubclient.Target{Listen: u.Host}
}

// fixed is an Options.Find that finds the hub at target when it answers.
func fixed(target hubclient.Target) func(ctx context.Context) (hubclient.Target, error) {
	return func(ctx context.Context) (hubclient.Target, error) { return target, Probe(ctx, target) }
}

// logBuffer collects a face's log.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// poll calls cond every 10 ms until it holds or within passes.
func poll(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// lineClient is a stdio MCP client: it writes lines to a face's stdin and
// reads every line of its stdout, which must each be one JSON-RPC message.
type lineClient struct {
	t      testing.TB
	w      io.WriteCloser
	wmu    sync.Mutex
	nextID atomic.Int64
	answer func(m *jsonrpc.Message) *jsonrpc.Message // replies to the server's requests
	eof    chan struct{}                             // closed when stdout ends

	mu      sync.Mutex
	waiting map[string]chan *jsonrpc.Message
	seen    []*jsonrpc.Message
	bad     []string
}

func newLineClient(t testing.TB, w io.WriteCloser, r io.Reader, answer func(*jsonrpc.Message) *jsonrpc.Message) *lineClient {
	c := &lineClient{t: t, w: w, answer: answer, eof: make(chan struct{}), waiting: map[string]chan *jsonrpc.Message{}}
	c.nextID.Store(1000)
	go c.read(r)
	return c
}

func (c *lineClient) read(r io.Reader) {
	defer close(c.eof)
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			c.take(bytes.TrimSuffix(line, []byte("\n")))
		}
		if err != nil {
			return
		}
	}
}

func (c *lineClient) take(line []byte) {
	m, err := jsonrpc.Decode(line)
	c.mu.Lock()
	if err != nil || bytes.ContainsAny(line, "\r\n") {
		c.bad = append(c.bad, string(line))
		c.mu.Unlock()
		return
	}
	c.seen = append(c.seen, m)
	var ch chan *jsonrpc.Message
	if m.IsResponse() {
		ch = c.waiting[string(m.ID)]
		delete(c.waiting, string(m.ID))
	}
	c.mu.Unlock()
	switch {
	case ch != nil:
		ch <- m
	case m.IsRequest() && c.answer != nil:
		go func() {
			if reply := c.answer(m); reply != nil {
				c.write(reply)
			}
		}()
	}
}

func (c *lineClient) write(m *jsonrpc.Message) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.w.Write(append(m.Encode(), '\n'))
}

// request sends a request with a fresh id and waits for its response.
func (c *lineClient) request(method string, params any) *jsonrpc.Message {
	c.t.Helper()
	raw, err := json.Marshal(params)
	if err != nil {
		c.t.Fatal(err)
	}
	ch := make(chan *jsonrpc.Message, 1)
	id := jsonrpc.IntID(c.nextID.Add(1))
	c.mu.Lock()
	c.waiting[string(id)] = ch
	c.mu.Unlock()
	c.write(jsonrpc.NewRequest(id, method, raw))
	select {
	case m := <-ch:
		return m
	case <-time.After(30 * time.Second):
		c.t.Fatalf("%s: no response within 30 s", method)
	case <-c.eof:
		c.t.Fatalf("%s: stdout ended before the response", method)
	}
	return nil
}

// notify sends a notification.
func (c *lineClient) notify(method string, params any) {
	raw, _ := json.Marshal(params)
	c.write(jsonrpc.NewNotification(method, raw))
}

// initialize performs the handshake.
func (c *lineClient) initialize() *jsonrpc.Message {
	c.t.Helper()
	m := c.request("initialize", map[string]any{
		"protocolVersion": sessionVersion,
		"capabilities":    map[string]any{"roots": map[string]any{"listChanged": true}},
		"clientInfo":      map[string]any{"name": "line-client", "version": "1"},
	})
	if m.Error != nil {
		c.t.Fatalf("initialize: %s", m.Encode())
	}
	c.notify("notifications/initialized", nil)
	return m
}

// messages returns every message so far that match accepts, in order.
func (c *lineClient) messages(match func(*jsonrpc.Message) bool) []*jsonrpc.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	var found []*jsonrpc.Message
	for _, m := range c.seen {
		if match(m) {
			found = append(found, m)
		}
	}
	return found
}

// badLines are the lines of stdout that were not one JSON-RPC message.
func (c *lineClient) badLines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.bad...)
}

// runningFace is a face run by Relay in this process over pipes.
type runningFace struct {
	*lineClient
	in   *io.PipeWriter
	done chan error
	logs *logBuffer
}

// startFace runs a face against the hub at base on path, with answer
// replying to the server's requests; tweak changes its options last.
func startFace(t *testing.T, base, path string, answer func(*jsonrpc.Message) *jsonrpc.Message, tweak ...func(*Options)) *runningFace {
	t.Helper()
	target := targetOf(t, base)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	f := &runningFace{in: inW, done: make(chan error, 1), logs: &logBuffer{}}
	o := Options{Find: fixed(target), Hub: target, Path: path, In: inR, Out: outW, Log: f.logs.logger()}
	for _, tw := range tweak {
		tw(&o)
	}
	go func() {
		err := Relay(context.Background(), o)
		outW.Close()
		inR.Close()
		f.done <- err
	}()
	f.lineClient = newLineClient(t, inW, outR, answer)
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-f.done:
		case <-time.After(15 * time.Second):
			t.Errorf("the face did not stop within 15 s of stdin's end")
		}
		if t.Failed() {
			t.Logf("face log:\n%s", f.logs.String())
		}
	})
	return f
}

// closeStdin ends the face's input and returns its result.
func (f *runningFace) closeStdin(t testing.TB) error {
	t.Helper()
	f.in.Close()
	select {
	case err := <-f.done:
		f.done <- err // for cleanup
		return err
	case <-time.After(15 * time.Second):
		t.Fatal("the face did not stop within 15 s of stdin's end")
	}
	return nil
}

// bareFace is a face that is not run: the test drives its parts.
type bareFace struct {
	*face
	logs *logBuffer
	once sync.Once
}

// newBareFace makes a face relaying to the hub at base (an http:// URL,
// or "" for none). With writer its writer runs into io.Discard, and
// cleanup shuts it down; without, what it sends stays in its out queue for
// the test to read, and cleanup only cancels it.
func newBareFace(t *testing.T, base string, writer bool) *bareFace {
	t.Helper()
	target := targetOf(t, base)
	b := &bareFace{logs: &logBuffer{}}
	b.face = newFace(Options{Find: fixed(target), Hub: target, Path: "/mcp", In: strings.NewReader(""), Out: io.Discard, Log: b.logs.logger()})
	if writer {
		go b.writer()
	}
	t.Cleanup(func() {
		if writer {
			b.stop()
		} else {
			b.cancel()
		}
		if t.Failed() {
			t.Logf("face log:\n%s", b.logs.String())
		}
	})
	return b
}

// stop shuts a face with a writer down, once.
func (b *bareFace) stop() {
	b.once.Do(func() { b.shutdown(context.Background(), false) })
}
