package main

// The stdio face's test harness: a line client that speaks newline-delimited
// JSON-RPC to a face (in this process over pipes, or a `mcphub stdio`
// process), and the two ways to run a face.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/stdioface"
)

// lineClient is a stdio MCP client: it writes lines to a face's stdin and
// reads every line of its stdout, which must each be one JSON-RPC message.
type lineClient struct {
	t      testing.TB
	w      io.WriteCloser
	wmu    sync.Mutex
	nextID atomic.Int64
	// answer replies to a request of the server's; nil means no reply.
	answer func(m *jsonrpc.Message) *jsonrpc.Message
	eof    chan struct{} // closed when stdout ends

	mu      sync.Mutex
	waiting map[string]chan *jsonrpc.Message
	seen    []*jsonrpc.Message // every message, in arrival order
	bad     []string           // lines that are not one JSON-RPC message
}

func newLineClient(t testing.TB, w io.WriteCloser, r io.Reader, answer func(*jsonrpc.Message) *jsonrpc.Message) *lineClient {
	c := &lineClient{t: t, w: w, answer: answer, eof: make(chan struct{}), waiting: map[string]chan *jsonrpc.Message{}}
	c.nextID.Store(1000)
	go c.read(r)
	return c
}

func (c *lineClient) read(r io.Reader) {
	defer close(c.eof)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			c.take(bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r")))
		}
		if err != nil {
			return
		}
	}
}

// take handles one line of the face's stdout.
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

// write sends one message as a line.
func (c *lineClient) write(m *jsonrpc.Message) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.w.Write(append(m.Encode(), '\n'))
}

// send sends a request with id and returns where its response arrives.
func (c *lineClient) send(id int64, method string, params any) <-chan *jsonrpc.Message {
	c.t.Helper()
	raw, err := json.Marshal(params)
	if err != nil {
		c.t.Fatal(err)
	}
	ch := make(chan *jsonrpc.Message, 1)
	rid := jsonrpc.IntID(id)
	c.mu.Lock()
	c.waiting[string(rid)] = ch
	c.mu.Unlock()
	c.write(jsonrpc.NewRequest(rid, method, raw))
	return ch
}

// request sends a request with a fresh id and waits for its response.
func (c *lineClient) request(method string, params any) *jsonrpc.Message {
	c.t.Helper()
	return c.await(c.send(c.nextID.Add(1), method, params), 30*time.Second, method)
}

func (c *lineClient) await(ch <-chan *jsonrpc.Message, within time.Duration, what string) *jsonrpc.Message {
	c.t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(within):
		c.t.Fatalf("%s: no response within %s", what, within)
	case <-c.eof:
		c.t.Fatalf("%s: stdout ended before the response", what)
	}
	return nil
}

// notify sends a notification.
func (c *lineClient) notify(method string, params any) {
	raw, _ := json.Marshal(params)
	c.write(jsonrpc.NewNotification(method, raw))
}

// initialize performs the handshake, declaring sampling and roots.
func (c *lineClient) initialize() *jsonrpc.Message {
	c.t.Helper()
	m := c.request("initialize", map[string]any{
		"protocolVersion": sessionVersion,
		"capabilities":    map[string]any{"sampling": map[string]any{}, "roots": map[string]any{"listChanged": true}},
		"clientInfo":      map[string]any{"name": "line-client", "version": "1"},
	})
	if m.Error != nil {
		c.t.Fatalf("initialize: %s", m.Encode())
	}
	c.notify("notifications/initialized", nil)
	return m
}

// tool calls a tool and returns its text; a JSON-RPC error fails the test.
func (c *lineClient) tool(name string, args any) string {
	c.t.Helper()
	m := c.request("tools/call", map[string]any{"name": name, "arguments": args})
	if m.Error != nil {
		c.t.Fatalf("tools/call %s: %s", name, m.Encode())
	}
	res, err := decodeResult(m)
	if err != nil {
		c.t.Fatalf("tools/call %s: %v: %s", name, err, m.Encode())
	}
	return res.text()
}

// state calls the fake's state tool.
func (c *lineClient) state(tool string) fakeState {
	c.t.Helper()
	var st fakeState
	if err := json.Unmarshal([]byte(c.tool(tool, map[string]any{})), &st); err != nil {
		c.t.Fatal(err)
	}
	return st
}

// tools lists the tool names.
func (c *lineClient) tools() []string {
	c.t.Helper()
	m := c.request("tools/list", map[string]any{})
	if m.Error != nil {
		c.t.Fatalf("tools/list: %s", m.Encode())
	}
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		c.t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// messages returns every message so far that match accepts, in order, with
// its position among all messages.
func (c *lineClient) messages(match func(*jsonrpc.Message) bool) (found []*jsonrpc.Message, at []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, m := range c.seen {
		if match(m) {
			found, at = append(found, m), append(at, i)
		}
	}
	return found, at
}

// badLines are the lines of stdout that were not one JSON-RPC message.
func (c *lineClient) badLines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.bad...)
}

// ---------------------------------------------------------------------------
// A face in this process.

// inprocFace is a face relaying to a hub at base, run in this process over
// pipes.
type inprocFace struct {
	*lineClient
	in   *io.PipeWriter
	done chan error // the face's run result
	logs *logBuffer
}

// startInprocFace runs a face against the hub at base (an http:// URL) on
// path, with answer replying to the server's requests; tweak changes its
// configuration last.
func startInprocFace(t *testing.T, base, path string, answer func(*jsonrpc.Message) *jsonrpc.Message, tweak ...func(*stdioface.Options)) *inprocFace {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	target := hubclient.Target{Listen: u.Host}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	f := &inprocFace{in: inW, done: make(chan error, 1), logs: &logBuffer{}}
	cfg := stdioface.Options{
		Find: func(ctx context.Context) (hubclient.Target, error) { return target, stdioface.Probe(ctx, target) },
		Hub:  target, Path: path, In: inR, Out: outW,
		Log: slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, tw := range tweak {
		tw(&cfg)
	}
	go func() {
		err := stdioface.Relay(context.Background(), cfg)
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
func (f *inprocFace) closeStdin(t testing.TB) error {
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

// ---------------------------------------------------------------------------
// A `mcphub stdio` process.

// stdioProc is a running `mcphub stdio`.
type stdioProc struct {
	*lineClient
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr logBuffer
	exited chan struct{}
	werr   error
}

// startStdioProc runs `mcphub stdio` with the hub's environment. Cleanup
// closes its stdin and, if it has not exited within 10 s, stops it by PID.
func startStdioProc(t *testing.T, h *procHub, answer func(*jsonrpc.Message) *jsonrpc.Message, args ...string) *stdioProc {
	t.Helper()
	p := &stdioProc{exited: make(chan struct{})}
	p.cmd = exec.Command(h.bin, append([]string{"stdio", "--log-level", "debug"}, args...)...)
	p.cmd.Env = h.env()
	p.cmd.Dir = h.home
	p.cmd.Stderr = &p.stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.lineClient = newLineClient(t, p.stdin, stdout, answer)
	go func() {
		<-p.lineClient.eof // Wait may not run before stdout is read to its end
		p.werr = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.stdin.Close()
		if !p.waitExit(10 * time.Second) {
			t.Errorf("mcphub stdio (pid %d) did not exit within 10 s of stdin's end", p.cmd.Process.Pid)
			termPID(p.cmd.Process.Pid)
			if !p.waitExit(5 * time.Second) {
				killPID(p.cmd.Process.Pid)
				<-p.exited
			}
		}
		if t.Failed() || os.Getenv("E2E_LOG") != "" {
			t.Logf("mcphub stdio stderr:\n%s", p.stderr.String())
		}
	})
	return p
}

func (p *stdioProc) waitExit(d time.Duration) bool {
	select {
	case <-p.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// exitCode closes stdin and returns the exit code.
func (p *stdioProc) exitCode(t testing.TB) int {
	t.Helper()
	p.stdin.Close()
	return p.code(t, "stdin's end")
}

// termCode stops the process with SIGTERM and returns the exit code.
func (p *stdioProc) termCode(t testing.TB) int {
	t.Helper()
	if err := termPID(p.cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	return p.code(t, "SIGTERM")
}

// code waits for the process to exit after what and returns its exit code.
func (p *stdioProc) code(t testing.TB, what string) int {
	t.Helper()
	if !p.waitExit(15 * time.Second) {
		t.Fatalf("mcphub stdio did not exit within 15 s of %s", what)
	}
	var ee *exec.ExitError
	switch {
	case p.werr == nil:
		return 0
	case errors.As(p.werr, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("mcphub stdio: %v", p.werr)
	return -1
}

// ---------------------------------------------------------------------------
// The hub's sessions.

// hubSessions lists the live sessions of the hub at base.
func hubSessions(base, token string) ([]api.SessionInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/control/sessions", nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/control/sessions: HTTP %d", resp.StatusCode)
	}
	var out []api.SessionInfo
	return out, json.NewDecoder(resp.Body).Decode(&out)
}

// sessionIDs lists the ids of sessions.
func sessionIDs(ss []api.SessionInfo) string {
	var ids []string
	for _, s := range ss {
		ids = append(ids, s.ID)
	}
	return strings.Join(ids, ",")
}

// samplingAnswer answers sampling/createMessage with "label|prompt" and
// refuses anything else with method not found.
func samplingAnswer(label string) func(*jsonrpc.Message) *jsonrpc.Message {
	return func(m *jsonrpc.Message) *jsonrpc.Message {
		if m.Method != "sampling/createMessage" {
			return jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "no "+m.Method))
		}
		var p struct {
			Messages []struct {
				Content struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"messages"`
		}
		json.Unmarshal(m.Params, &p)
		prompt := ""
		if len(p.Messages) > 0 {
			prompt = p.Messages[0].Content.Text
		}
		res, _ := json.Marshal(map[string]any{"role": "assistant", "model": "line-client",
			"content": map[string]any{"type": "text", "text": label + "|" + prompt}})
		return jsonrpc.NewResponse(m.ID, res)
	}
}
