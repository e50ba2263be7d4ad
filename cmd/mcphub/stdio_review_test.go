package main

// The stdio face at its edges: a snapshot of the connection's state that
// comes late, a cancellation of the hub's that overtakes its request, a
// shutdown right after the handshake, the hub speaking before the client
// has its initialize response, a notification cut off by a reset, and
// stdin's end while the hub is away.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// faceInit is a client's initialize parameters.
var faceInit = json.RawMessage(`{"protocolVersion":"` + sessionVersion + `","capabilities":{},"clientInfo":{"name":"bare","version":"1"}}`)

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
	var target hubclient.Target
	if base != "" {
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		target = hubclient.Target{Listen: u.Host}
	}
	b := &bareFace{logs: &logBuffer{}}
	b.face = newFace(faceConfig{
		find: func(ctx context.Context) (hubclient.Target, error) { return target, probeHub(ctx, target) },
		hub:  target, path: "/mcp", in: strings.NewReader(""), out: io.Discard,
		log: slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
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

// TestStdioFaceKeepsNewestState: a connection's stream readers take their
// state snapshots and hand them over without a common lock, so one taken
// before an event on the GET stream can come after the snapshot that event
// produced. The face keeps the newest state anyway, so a connection that
// replaces this one does not resume the GET stream from before that event
// (which would show the client its notifications twice).
func TestStdioFaceKeepsNewestState(t *testing.T) {
	f := startInproc(t, childServer(t, "a", childOpts{}), hubConfig{store: fullStore})
	b := newBareFace(t, f.url, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := b.hub.connectFirst(ctx, faceInit); err != nil {
		t.Fatal(err)
	}
	h := &b.hub
	h.mu.Lock()
	conn := h.conn
	h.mu.Unlock()
	// A replacement right after the handshake, before any event, can
	// resume the session: the state kept has the initialize result.
	if st := h.resumeState(); st == nil || len(st.Initialize) == 0 {
		t.Fatalf("after the handshake the face keeps %+v, which a replacement cannot resume", st)
	}

	stale := conn.State()
	if _, err := conn.Call(ctx, "tools/call", json.RawMessage(`{"name":"a__mutate","arguments":{"add":["x1"]}}`)); err != nil {
		t.Fatal(err)
	}
	var newest string
	if !poll(10*time.Second, func() bool {
		newest = conn.State().LastEventIDs[getStreamKey]
		return newest != "" && newest != stale.LastEventIDs[getStreamKey]
	}) {
		t.Fatalf("the list change never moved the GET stream's last event id past %q", stale.LastEventIDs[getStreamKey])
	}
	if got := h.resumeState().LastEventIDs[getStreamKey]; got != newest {
		t.Fatalf("before the late snapshot the face resumes the GET stream from %q, want %q", got, newest)
	}

	// The late reader hands over its older snapshot, as the connection
	// would: through the connection's OnState.
	h.onState(1, conn.State)(stale)
	if got := h.resumeState().LastEventIDs[getStreamKey]; got != newest {
		t.Errorf("after a late, older snapshot the face resumes the GET stream from %q, want the newest %q", got, newest)
	}
}

// TestStdioFaceHubCancelBeforeRequest: a connection hands the face the
// hub's request on a goroutine of its own but its notifications at once,
// so the hub's cancellation can come first. The request is then never put
// to the client and is answered at once; the same id on another connection
// is put to the client as usual.
func TestStdioFaceHubCancelBeforeRequest(t *testing.T) {
	b := newBareFace(t, "", false)
	b.greet()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	h1 := faceHandler{f: b.face, gen: 1}
	h1.HandleNotification(jsonrpc.NewNotification("notifications/cancelled", json.RawMessage(`{"requestId":"mcphub-7","reason":"no longer needed"}`)), nil)
	ask := jsonrpc.NewRequest(json.RawMessage(`"mcphub-7"`), "sampling/createMessage", json.RawMessage(`{"messages":[],"maxTokens":1}`))
	done := make(chan error, 1)
	go func() {
		_, err := h1.HandleRequest(ctx, ask, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no longer needed") {
			t.Errorf("the cancelled request was answered with %v, want the hub's reason", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the request the hub had cancelled waits for the client")
	}
	if len(b.out) != 0 {
		t.Fatalf("the client was asked a request the hub had cancelled: %s", <-b.out)
	}

	// The cancellation was used up: the same id on the next connection
	// reaches the client, and is cancelled when the hub says so.
	h2 := faceHandler{f: b.face, gen: 2}
	go func() {
		_, err := h2.HandleRequest(ctx, ask, nil)
		done <- err
	}()
	if !poll(5*time.Second, func() bool { return len(b.out) == 1 }) {
		t.Fatal("the request on the next connection did not reach the client")
	}
	if line := <-b.out; !bytes.Contains(line, []byte(`"sampling/createMessage"`)) {
		t.Fatalf("the client got %s, want the sampling request", line)
	}
	h2.HandleNotification(jsonrpc.NewNotification("notifications/cancelled", json.RawMessage(`{"requestId":"mcphub-7"}`)), nil)
	select {
	case err := <-done:
		if err == nil {
			t.Error("the cancelled request on the next connection was answered without an error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the hub's cancellation did not end the request it named")
	}
}

// TestStdioFaceCloseWaitsForSupervise: once the face starts supervising
// its connection, a shutdown waits for that, however soon it comes (stdin
// may end right after the handshake). The flag close reads is set before
// the supervising goroutine can run; one processor makes sure it has not.
func TestStdioFaceCloseWaitsForSupervise(t *testing.T) {
	f := startInproc(t, childServer(t, "a", childOpts{}), hubConfig{store: fullStore})
	b := newBareFace(t, f.url, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := b.hub.connectFirst(ctx, faceInit); err != nil {
		t.Fatal(err)
	}
	h := &b.hub
	prev := runtime.GOMAXPROCS(1)
	h.startSupervising()
	h.mu.Lock()
	waits := h.supervises
	h.mu.Unlock()
	runtime.GOMAXPROCS(prev)
	if !waits {
		t.Error("right after supervising began, a shutdown would not wait for it")
	}
	b.stop()
	select {
	case <-h.supervised:
	default:
		t.Error("supervising outlived the shutdown")
	}
	if !poll(5*time.Second, func() bool { return len(f.h.Sessions()) == 0 }) {
		t.Errorf("the hub session outlived the face: %+v", f.h.Sessions())
	}
}

// fakeHub is a Streamable HTTP server that, as it answers initialize,
// sends a log notification and a roots/list request first on the same
// stream. It records what the face posts.
type fakeHub struct {
	url string

	mu  sync.Mutex
	got []*jsonrpc.Message
}

func startFakeHub(t *testing.T) *fakeHub {
	fh := &fakeHub{}
	srv := httptest.NewServer(http.HandlerFunc(fh.serve))
	t.Cleanup(srv.Close)
	fh.url = srv.URL
	return fh
}

func (fh *fakeHub) serve(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	case http.MethodDelete:
		return
	case http.MethodPost:
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	m, err := jsonrpc.Decode(data)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fh.mu.Lock()
	fh.got = append(fh.got, m)
	fh.mu.Unlock()
	switch {
	case m.Method == "initialize":
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Mcp-Session-Id", "fake-session")
		w.WriteHeader(http.StatusOK)
		res := json.RawMessage(`{"protocolVersion":"` + sessionVersion + `","capabilities":{"logging":{}},"serverInfo":{"name":"fake-hub","version":"1"}}`)
		for _, ev := range []*jsonrpc.Message{
			jsonrpc.NewNotification("notifications/message", json.RawMessage(`{"level":"info","data":"early"}`)),
			jsonrpc.NewRequest(json.RawMessage(`"mcphub-1"`), "roots/list", json.RawMessage(`{}`)),
			jsonrpc.NewResponse(m.ID, res),
		} {
			io.WriteString(w, "data: "+string(ev.Encode())+"\n\n")
		}
	case m.IsRequest():
		w.Header().Set("Content-Type", "application/json")
		w.Write(jsonrpc.NewResponse(m.ID, json.RawMessage(`{}`)).Encode())
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

// answered reports whether the face posted an answer to request id.
func (fh *fakeHub) answered(id string) *jsonrpc.Message {
	fh.mu.Lock()
	defer fh.mu.Unlock()
	for _, m := range fh.got {
		if m.IsResponse() && string(m.ID) == id {
			return m
		}
	}
	return nil
}

// TestStdioFaceHubWaitsForInitialize: what the hub sends before the client
// has its initialize response (a log message, a roots/list request) reaches
// the client after it, and the client's answer reaches the hub.
func TestStdioFaceHubWaitsForInitialize(t *testing.T) {
	fh := startFakeHub(t)
	face := startInprocFace(t, fh.url, "/mcp", func(m *jsonrpc.Message) *jsonrpc.Message {
		return jsonrpc.NewResponse(m.ID, json.RawMessage(`{"roots":[{"uri":"file:///tmp/r","name":"r"}]}`))
	})
	face.initialize()
	if !poll(10*time.Second, func() bool {
		got, _ := face.messages(func(m *jsonrpc.Message) bool {
			return m.Method == "notifications/message" || m.Method == "roots/list"
		})
		return len(got) == 2
	}) {
		t.Fatal("the hub's early notification and request did not both reach the client")
	}
	all, _ := face.messages(func(*jsonrpc.Message) bool { return true })
	if !all[0].IsResponse() {
		t.Errorf("the client's first message is %s, want the initialize response", all[0].Encode())
	}
	if !poll(10*time.Second, func() bool { return fh.answered(`"mcphub-1"`) != nil }) {
		t.Fatal("the client's answer to roots/list did not reach the hub")
	}
	if a := fh.answered(`"mcphub-1"`); a.Error != nil || !bytes.Contains(a.Result, []byte("file:///tmp/r")) {
		t.Errorf("the hub got %s for roots/list, want the client's roots", a.Encode())
	}
}

// tcpProxy passes TCP connections on to a hub. It can go down (the port
// refuses connections) and come back on the same address, and it can cut
// the first connection whose bytes to the hub hold cut, before they reach
// it.
type tcpProxy struct {
	target, addr string
	cut          []byte

	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
	didCut bool
	sent   []*bytes.Buffer // per connection, what reached the hub
}

func startTCPProxy(t *testing.T, target, cut string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{target: target, addr: ln.Addr().String(), conns: map[net.Conn]bool{}}
	if cut != "" {
		p.cut = []byte(cut)
	}
	p.serve(ln)
	t.Cleanup(p.down)
	return p
}

func (p *tcpProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pass(c)
		}
	}()
}

// track notes c, or closes it and reports false when the proxy is down.
func (p *tcpProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = true
	}
	return true
}

func (p *tcpProxy) pass(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(c, up) {
		return
	}
	sent := &bytes.Buffer{}
	p.mu.Lock()
	p.sent = append(p.sent, sent)
	p.mu.Unlock()
	go func() {
		io.Copy(c, up)
		c.Close()
		up.Close()
	}()
	defer up.Close()
	defer c.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			p.mu.Lock()
			sent.Write(buf[:n])
			if p.cut != nil && !p.didCut && bytes.Contains(sent.Bytes(), p.cut) {
				p.didCut = true
				sent.Truncate(sent.Len() - n) // never reached the hub
				p.mu.Unlock()
				return
			}
			p.mu.Unlock()
			if _, err := up.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// down closes the port and every connection through it.
func (p *tcpProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// up opens the port again.
func (p *tcpProxy) up(t *testing.T) {
	t.Helper()
	var ln net.Listener
	eventually(t, 5*time.Second, "the proxy's port opens again", func() (err error) {
		ln, err = net.Listen("tcp", p.addr)
		return err
	})
	p.serve(ln)
}

// forwarded reports whether some connection passed s to the hub, and
// whether a connection was cut.
func (p *tcpProxy) forwarded(s string) (passed, cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.sent {
		if bytes.Contains(b.Bytes(), []byte(s)) {
			passed = true
		}
	}
	return passed, p.didCut
}

// TestStdioFaceNotificationAfterReset: a notification of the client's whose
// connection is reset on the way (as when the hub restarts) is sent again
// on the next connection, which resumes the same hub session.
func TestStdioFaceNotificationAfterReset(t *testing.T) {
	f := startInproc(t, childServer(t, "a", childOpts{}), hubConfig{store: fullStore})
	u, err := url.Parse(f.url)
	if err != nil {
		t.Fatal(err)
	}
	const marker = `"reason":"stop-4242"`
	px := startTCPProxy(t, u.Host, marker)
	face := startInprocFace(t, "http://"+px.addr, "/mcp", nil)
	face.initialize()
	before := f.h.Sessions()
	face.notify("notifications/cancelled", map[string]any{"requestId": 4242, "reason": "stop-4242"})
	if !poll(20*time.Second, func() bool { passed, _ := px.forwarded(marker); return passed }) {
		_, cut := px.forwarded(marker)
		t.Fatalf("the notification never reached the hub (its first connection cut: %v)", cut)
	}
	if _, cut := px.forwarded(marker); !cut {
		t.Fatal("the proxy never cut the notification's connection")
	}
	if got := face.tool("a__echo", map[string]any{"text": "after"}); got != "a:after" {
		t.Errorf("a__echo after the reset = %q, want a:after", got)
	}
	if after := f.h.Sessions(); sessionIDs(after) != sessionIDs(before) {
		t.Errorf("sessions after the reset: %s, want the same one: %s", sessionIDs(after), sessionIDs(before))
	}
}

// TestStdioFaceEndsSessionAfterOutage: stdin ends while the hub cannot be
// reached and the face waits to reconnect; when the hub answers again
// within the drain time, the face ends the session it had before exiting.
func TestStdioFaceEndsSessionAfterOutage(t *testing.T) {
	f := startInproc(t, childServer(t, "a", childOpts{}), hubConfig{store: fullStore})
	u, err := url.Parse(f.url)
	if err != nil {
		t.Fatal(err)
	}
	px := startTCPProxy(t, u.Host, "")
	face := startInprocFace(t, "http://"+px.addr, "/mcp", nil, func(c *faceConfig) { c.drain = 20 * time.Second })
	face.initialize()
	if got := face.tool("a__echo", map[string]any{"text": "one"}); got != "a:one" {
		t.Fatalf("a__echo = %q, want a:one", got)
	}
	if n := len(f.h.Sessions()); n != 1 {
		t.Fatalf("the hub has %d sessions, want the face's one", n)
	}

	px.down()
	if !poll(15*time.Second, func() bool { return strings.Contains(face.logs.String(), "the hub cannot be reached") }) {
		t.Fatal("the face did not notice that the hub is gone")
	}
	face.in.Close()
	if !poll(5*time.Second, func() bool { return strings.Contains(face.logs.String(), "stdin ended") }) {
		t.Fatal("the face did not see stdin's end")
	}
	px.up(t)
	select {
	case err := <-face.done:
		face.done <- err // for cleanup
		if err != nil {
			t.Errorf("the face ended with %v, want nil at stdin's end", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the face did not stop within 30 s of stdin's end")
	}
	if !poll(5*time.Second, func() bool { return len(f.h.Sessions()) == 0 }) {
		t.Errorf("the hub session outlived the face: %+v", f.h.Sessions())
	}
}
