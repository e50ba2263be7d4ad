package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/sse"
)

// ---------------------------------------------------------------------------
// A raw Streamable HTTP client.

// rawClient speaks Streamable HTTP by hand against one hub, so that every
// status code, header and event id is visible.
type rawClient struct {
	t    testing.TB
	base string
	hc   *http.Client
	ids  atomic.Int64
}

// newRawClient makes a client of the hub at base. It sets no overall
// timeout, since SSE responses are long and tests bound each read with their
// own deadlines; a hub that accepts a connection but never answers is
// bounded here (list calls may wait out the hub's 10 s warm-up).
func newRawClient(t testing.TB, base string) *rawClient {
	tr := &http.Transport{MaxIdleConnsPerHost: 16, ResponseHeaderTimeout: 15 * time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	return &rawClient{t: t, base: base, hc: &http.Client{Transport: tr}}
}

// rawReq is one HTTP request of the raw client. A session id goes with the
// protocol version, as a compliant client sends them, unless noVersion asks
// for a client that sends none (2025-03-26 and older clients).
type rawReq struct {
	method, path, sid, accept, lastEventID, auth, body string
	noVersion                                          bool
}

// send sends one request and returns the response, body unread.
func (c *rawClient) send(ctx context.Context, r rawReq) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, r.method, c.base+r.path, strings.NewReader(r.body))
	if err != nil {
		return nil, err
	}
	for k, v := range map[string]string{"Accept": r.accept, "Mcp-Session-Id": r.sid, "Last-Event-ID": r.lastEventID, "Authorization": r.auth} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	if r.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.sid != "" && !r.noVersion {
		req.Header.Set("MCP-Protocol-Version", sessionVersion)
	}
	return c.hc.Do(req)
}

// tryDo sends one request and reads its whole body; goroutines other than
// the test's use it, since it returns the error.
func (c *rawClient) tryDo(ctx context.Context, r rawReq) (*http.Response, []byte, error) {
	resp, err := c.send(ctx, r)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// do is tryDo that fails the test on a transport error.
func (c *rawClient) do(r rawReq) (*http.Response, []byte) {
	c.t.Helper()
	resp, b, err := c.tryDo(context.Background(), r)
	if err != nil {
		c.t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	return resp, b
}

// httpCase is a request and what its answer must be.
type httpCase struct {
	name     string
	req      rawReq
	status   int
	contains string // the body must contain this, when set
}

// expect sends the request of tc, checks the answer's status and body, and
// returns them for the checks only tc's test makes.
func (c *rawClient) expect(t testing.TB, tc httpCase) (*http.Response, []byte) {
	t.Helper()
	resp, body := c.do(tc.req)
	if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.contains) {
		t.Errorf("%s: HTTP %d %s; want %d with %q", tc.name, resp.StatusCode, short(body), tc.status, tc.contains)
	}
	return resp, body
}

// rawSession is one session of a rawClient on one endpoint path.
type rawSession struct {
	c    *rawClient
	path string
	sid  string
}

// session is a session on path with a known id, as a client that kept it
// across a hub restart has.
func (c *rawClient) session(path, sid string) *rawSession {
	return &rawSession{c: c, path: path, sid: sid}
}

// initialize opens a session on path and sends notifications/initialized.
func (c *rawClient) initialize(path string) (*rawSession, *jsonrpc.Message) {
	c.t.Helper()
	s := c.session(path, "")
	status, m := s.call(int(c.ids.Add(1)), "initialize", map[string]any{
		"protocolVersion": sessionVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "0"},
	})
	if status != http.StatusOK || m.Error != nil || m.Result == nil || s.sid == "" {
		c.t.Fatalf("initialize %s: HTTP %d, session %q, %s", path, status, s.sid, m.Encode())
	}
	if resp, body := c.do(s.req(http.MethodPost, acceptBoth, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)); resp.StatusCode != http.StatusAccepted {
		c.t.Fatalf("notifications/initialized: HTTP %d, want 202: %s", resp.StatusCode, body)
	}
	return s, m
}

// req is a request of the session.
func (s *rawSession) req(method, accept, body string) rawReq {
	return rawReq{method: method, path: s.path, sid: s.sid, accept: accept, body: body}
}

// post sends one JSON-RPC message and returns the response, body unread.
func (s *rawSession) post(ctx context.Context, body []byte) (*http.Response, error) {
	return s.c.send(ctx, s.req(http.MethodPost, acceptBoth, string(body)))
}

// get opens a GET stream, resuming after lastEventID when it is set.
func (s *rawSession) get(ctx context.Context, lastEventID string) (*http.Response, error) {
	r := s.req(http.MethodGet, acceptSSE, "")
	r.lastEventID = lastEventID
	return s.c.send(ctx, r)
}

// delete ends the session.
func (s *rawSession) delete() int {
	s.c.t.Helper()
	resp, _ := s.c.do(s.req(http.MethodDelete, "", ""))
	return resp.StatusCode
}

// call sends a request and waits for its response, whether the hub answers
// with JSON or with an SSE stream. It returns the HTTP status too; the
// message of another status holds the body as its result.
func (s *rawSession) call(id int, method string, params any) (int, *jsonrpc.Message) {
	t := s.c.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := s.post(ctx, rpcRequest(id, method, params))
	if err != nil {
		t.Fatalf("POST %s: %v", method, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, &jsonrpc.Message{Result: b}
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if method == "initialize" {
		s.sid = resp.Header.Get("Mcp-Session-Id")
		// The hub answers initialize itself, at once, as JSON.
		if ct != "application/json" {
			t.Errorf("initialize answered as %q, want application/json", ct)
		}
	}
	if ct == "application/json" {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s: read: %v", method, err)
		}
		m, err := jsonrpc.Decode(b)
		if err != nil {
			t.Fatalf("%s: decode %s: %v", method, b, err)
		}
		return resp.StatusCode, m
	}
	r := sse.NewReader(resp.Body, 0)
	for {
		ev, err := r.Next()
		if err != nil {
			t.Fatalf("%s: the SSE stream ended before the response: %v", method, err)
		}
		if m, err := jsonrpc.Decode([]byte(ev.Data)); ev.Data != "" && err == nil && m.IsResponse() && string(m.ID) == strconv.Itoa(id) {
			return resp.StatusCode, m
		}
	}
}

// request sends a request that asks for a JSON answer (no SSE) and returns
// the status, the decoded message (empty when the body is not JSON-RPC) and
// the body.
func (s *rawSession) request(method string, params any) (int, *jsonrpc.Message, string) {
	s.c.t.Helper()
	resp, body := s.c.do(s.req(http.MethodPost, acceptJSON, string(rpcRequest(int(s.c.ids.Add(1)), method, params))))
	m, err := jsonrpc.Decode(body)
	if err != nil {
		m = &jsonrpc.Message{}
	}
	return resp.StatusCode, m, string(body)
}

// tool makes a tools/call in JSON mode.
func (s *rawSession) tool(name string, args any) (int, *jsonrpc.Message, string) {
	s.c.t.Helper()
	return s.request("tools/call", map[string]any{"name": name, "arguments": args})
}

// toolOK makes a tools/call that must succeed and returns its text.
func (s *rawSession) toolOK(name string, args any) string {
	s.c.t.Helper()
	status, m, body := s.tool(name, args)
	res, err := decodeResult(m)
	if status != http.StatusOK || m.Error != nil || err != nil || res.IsError || len(res.Content) == 0 {
		s.c.t.Fatalf("%s %s: %d %s", s.path, name, status, body)
	}
	return res.text()
}

// state asks a fake what it has seen.
func (s *rawSession) state() fakeState {
	s.c.t.Helper()
	var st fakeState
	if err := json.Unmarshal([]byte(s.toolOK("state", map[string]any{})), &st); err != nil {
		s.c.t.Fatal(err)
	}
	return st
}

// openGET opens the session's standalone SSE stream; cleanup closes it.
func (s *rawSession) openGET() *sseStream {
	t := s.c.t
	t.Helper()
	resp, err := s.get(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), acceptSSE) {
		resp.Body.Close()
		t.Fatalf("GET %s: %d %s", s.path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	t.Cleanup(func() { resp.Body.Close() })
	return follow(resp.Body)
}

// resume retries GET with Last-Event-ID until the hub answers, whatever the
// reason it cannot yet (not listening, or the stream is still held by the
// handler of the connection that was just cut: 409). Any other answer than
// 200 or 409 fails the test at once.
func (s *rawSession) resume(lastEventID string, within time.Duration) *sseStream {
	t := s.c.t
	t.Helper()
	var stream *sseStream
	eventually(t, within, "GET with Last-Event-ID "+lastEventID+" is answered", func() error {
		resp, err := s.get(context.Background(), lastEventID)
		if err != nil {
			return err
		}
		if resp.StatusCode == http.StatusOK {
			stream = follow(resp.Body)
			return nil
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusConflict {
			t.Fatalf("GET with Last-Event-ID %s (session %s): HTTP %d: %s", lastEventID, s.sid, resp.StatusCode, b)
		}
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	})
	return stream
}

// rpcRequest encodes a JSON-RPC request with an integer id.
func rpcRequest(id int, method string, params any) []byte {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		panic(err)
	}
	return b
}

// progressCall is the params of a tools/call that asks for progress.
func progressCall(name string, args map[string]any, progressToken string) map[string]any {
	return map[string]any{"name": name, "arguments": args, "_meta": map[string]any{"progressToken": progressToken}}
}

// toolResult is the part of a tools/call result the tests read.
type toolResult struct {
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

func decodeResult(m *jsonrpc.Message) (toolResult, error) {
	var res toolResult
	err := json.Unmarshal(m.Result, &res)
	return res, err
}

// text is the concatenated text of the result.
func (r toolResult) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// sseEvent is one SSE event as the client saw it; Msg is nil for an event
// without data (a priming event).
type sseEvent struct {
	ID  string
	Msg *jsonrpc.Message
}

// sseStream reads one SSE response in the background. Events arrive on
// events, which is closed when the response ends; err then says why.
type sseStream struct {
	body   io.ReadCloser
	events chan sseEvent
	err    error // valid once events is closed
}

func follow(body io.ReadCloser) *sseStream {
	s := &sseStream{body: body, events: make(chan sseEvent, 1024)}
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
			se := sseEvent{ID: ev.ID}
			if ev.Data != "" {
				if se.Msg, err = jsonrpc.Decode([]byte(ev.Data)); err != nil {
					s.err = fmt.Errorf("event %s is not JSON-RPC: %v: %q", ev.ID, err, ev.Data)
					return
				}
			}
			s.events <- se
		}
	}()
	return s
}

// cut closes the connection and returns what had been read before the
// close: the events still queued, until the reader stops or the deadline.
func (s *sseStream) cut(within time.Duration) []sseEvent {
	s.body.Close()
	return s.drain(within)
}

// await reads the stream until match accepts an event and returns it; the
// test fails if the stream ends or the deadline passes first.
func (s *sseStream) await(t testing.TB, within time.Duration, what string, match func(sseEvent) bool) sseEvent {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("%s: the stream ended first: %v", what, s.err)
			}
			if match(ev) {
				return ev
			}
		case <-timeout:
			t.Fatalf("%s: not within %s", what, within)
		}
	}
}

// drain returns the events that arrive until the stream ends or the
// deadline passes.
func (s *sseStream) drain(within time.Duration) []sseEvent {
	var out []sseEvent
	timeout := time.After(within)
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

// progressOf decodes a progress notification; ok is false for anything else.
func progressOf(m *jsonrpc.Message) (p progressNote, ok bool) {
	if m == nil || m.Method != "notifications/progress" || json.Unmarshal(m.Params, &p) != nil {
		return p, false
	}
	return p, true
}

// progressNote is the interesting part of notifications/progress.
type progressNote struct {
	Token    string  `json:"progressToken"`
	Progress float64 `json:"progress"`
	Total    float64 `json:"total"`
	Message  string  `json:"message"`
}

// short cuts a message for a failure line.
func short(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// ---------------------------------------------------------------------------
// The Go SDK client.

// sdkSession is a Go SDK client session on a hub endpoint that counts the
// tools/list_changed notifications it receives.
type sdkSession struct {
	*mcp.ClientSession
	changed atomic.Int64
}

// sdkOpts is how a session differs from the default one.
type sdkOpts struct {
	client *mcp.ClientOptions // handlers
	hc     *http.Client       // nil for http.DefaultClient
	latest bool               // let the SDK pick its newest protocol version instead of sessionVersion
	within time.Duration      // for connecting; 0 is 10 s
}

// connectSDK opens a session on endpoint; cleanup closes it.
func connectSDK(t testing.TB, endpoint string, o sdkOpts) *sdkSession {
	t.Helper()
	s := &sdkSession{}
	var opts mcp.ClientOptions
	if o.client != nil {
		opts = *o.client
	}
	next := opts.ToolListChangedHandler
	opts.ToolListChangedHandler = func(ctx context.Context, req *mcp.ToolListChangedRequest) {
		s.changed.Add(1)
		if next != nil {
			next(ctx, req)
		}
	}
	var sessOpts *mcp.ClientSessionOptions
	if !o.latest {
		sessOpts = &mcp.ClientSessionOptions{ProtocolVersion: sessionVersion}
	}
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(o.within, 10*time.Second))
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "0"}, &opts)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: o.hc}, sessOpts)
	if err != nil {
		t.Fatalf("connect %s: %v", endpoint, err)
	}
	s.ClientSession = cs
	t.Cleanup(func() { cs.Close() })
	return s
}

// callText calls a tool and returns its text; a tool error is an error.
func (s *sdkSession) callText(ctx context.Context, name string, args any) (string, error) {
	return s.callParams(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
}

func (s *sdkSession) callParams(ctx context.Context, p *mcp.CallToolParams) (string, error) {
	res, err := s.CallTool(ctx, p)
	if err != nil {
		return "", err
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	if res.IsError {
		return "", fmt.Errorf("tool %s failed: %s", p.Name, strings.Join(parts, ""))
	}
	return strings.Join(parts, ""), nil
}

// call is callText with a 10 s deadline.
func (s *sdkSession) call(name string, args any) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.callText(ctx, name, args)
}

// mustCall is call that fails the test on error.
func (s *sdkSession) mustCall(t testing.TB, name string, args any) string {
	t.Helper()
	out, err := s.call(name, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out
}

// mustEcho calls a tool that echoes with text and fails the test unless the
// text comes back.
func (s *sdkSession) mustEcho(t testing.TB, name, text string) {
	t.Helper()
	if got := s.mustCall(t, name, map[string]any{"text": text}); !strings.Contains(got, text) {
		t.Fatalf("call %s: got %q, want it to contain %q", name, got, text)
	}
}

// state asks a fake, through the hub, what it has seen.
func (s *sdkSession) state(t testing.TB, tool string) fakeState {
	t.Helper()
	var st fakeState
	if err := json.Unmarshal([]byte(s.mustCall(t, tool, map[string]any{})), &st); err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return st
}

// tools lists the session's tool names, every page, sorted.
func (s *sdkSession) tools() ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var names []string
	for tool, err := range s.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names, nil
}

// waitTools polls tools/list until every name in want is there and every
// name in gone is not; it returns the list.
func (s *sdkSession) waitTools(t testing.TB, want, gone []string) []string {
	t.Helper()
	var got []string
	eventually(t, 10*time.Second, fmt.Sprintf("tools/list has %v and not %v", want, gone), func() error {
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

// waitChanged waits until the session has received at least n
// tools/list_changed notifications in total.
func (s *sdkSession) waitChanged(t testing.TB, n int64, what string) {
	t.Helper()
	eventually(t, 5*time.Second, what, func() error {
		if got := s.changed.Load(); got < n {
			return fmt.Errorf("%d tools/list_changed so far, want %d", got, n)
		}
		return nil
	})
}
