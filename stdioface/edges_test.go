package stdioface

// The face at its edges: a snapshot of the connection's state that comes
// late, a cancellation of the hub's that overtakes its request, a shutdown
// right after the handshake, and the hub speaking before the client has its
// initialize response.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// TestFaceKeepsNewestState: a connection's stream readers take their
// state snapshots and hand them over without a common lock, so one taken
// before an event on the GET stream can come after the snapshot that event
// produced. The face keeps the newest state anyway, so a connection that
// replaces this one does not resume the GET stream from before that event
// (which would show the client its notifications twice).
func TestFaceKeepsNewestState(t *testing.T) {
	f := startSDKHub(t)
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
	if _, err := conn.Call(ctx, "tools/call", json.RawMessage(`{"name":"mutate","arguments":{"add":"x1"}}`)); err != nil {
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

// TestFaceHubCancelBeforeRequest: a connection hands the face the
// hub's request on a goroutine of its own but its notifications at once,
// so the hub's cancellation can come first. The request is then never put
// to the client and is answered at once; the same id on another connection
// is put to the client as usual.
func TestFaceHubCancelBeforeRequest(t *testing.T) {
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

// TestFaceCloseWaitsForSupervise: once the face starts supervising
// its connection, a shutdown waits for that, however soon it comes (stdin
// may end right after the handshake). The flag close reads is set before
// the supervising goroutine can run; one processor makes sure it has not.
func TestFaceCloseWaitsForSupervise(t *testing.T) {
	f := startSDKHub(t)
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
	if !poll(5*time.Second, func() bool { return f.sessions() == 0 }) {
		t.Errorf("the hub session outlived the face: %d sessions", f.sessions())
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

// TestFaceHubWaitsForInitialize: what the hub sends before the client
// has its initialize response (a log message, a roots/list request) reaches
// the client after it, and the client's answer reaches the hub.
func TestFaceHubWaitsForInitialize(t *testing.T) {
	fh := startFakeHub(t)
	face := startFace(t, fh.url, "/mcp", func(m *jsonrpc.Message) *jsonrpc.Message {
		return jsonrpc.NewResponse(m.ID, json.RawMessage(`{"roots":[{"uri":"file:///tmp/r","name":"r"}]}`))
	})
	face.initialize()
	if !poll(10*time.Second, func() bool {
		got := face.messages(func(m *jsonrpc.Message) bool {
			return m.Method == "notifications/message" || m.Method == "roots/list"
		})
		return len(got) == 2
	}) {
		t.Fatal("the hub's early notification and request did not both reach the client")
	}
	all := face.messages(func(*jsonrpc.Message) bool { return true })
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
