package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/registry"
)

// waitFor bounds every wait in these tests; nothing sleeps to synchronise.
const waitFor = 5 * time.Second

// fakeCall is one request the hub routed to a fake upstream.
type fakeCall struct {
	Ctx     context.Context
	Session string
	// SessionEra is what the hub asked of a dual-era server: its
	// session-era connection.
	SessionEra bool
	Method     string
	Params     json.RawMessage
	Peer       jsonrpc.Peer
}

// callHandler decides a fake call's result. It runs on the hub's goroutine,
// so it may block on ctx or talk to the call's Peer.
type callHandler func(ctx context.Context, c *fakeCall) (json.RawMessage, error)

// fakeUpstream is an in-memory Upstream: it serves fixed lists and a fixed
// initialize result, records every call, and lets a test decide each call's
// result, raise hub events and report a status.
type fakeUpstream struct {
	name string

	mu       sync.Mutex
	lists    map[string][]json.RawMessage
	init     json.RawMessage
	status   UpstreamStatus
	handler  callHandler
	events   UpstreamEvents
	calls    []*fakeCall
	notified []string // methods of client notifications forwarded to us
	levels   []string
	closedSS []string
	started  bool
	closed   bool

	callCh chan *fakeCall // every call, as it starts
}

func newFake(name string) *fakeUpstream {
	return &fakeUpstream{
		name:   name,
		lists:  map[string][]json.RawMessage{},
		init:   json.RawMessage(fmt.Sprintf(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":%q,"version":"1"}}`, name)),
		status: UpstreamStatus{State: api.StateConnected, Transport: "fake", Since: time.Now()},
		callCh: make(chan *fakeCall, 64),
	}
}

// items turns JSON texts into raw list items.
func items(texts ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(texts))
	for i, s := range texts {
		out[i] = json.RawMessage(s)
	}
	return out
}

// toolItems builds simple tool items for names.
func toolItems(names ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(names))
	for i, n := range names {
		out[i] = json.RawMessage(fmt.Sprintf(`{"name":%q,"inputSchema":{"type":"object"}}`, n))
	}
	return out
}

// setList replaces the items of a list method; call changed to tell the hub.
func (f *fakeUpstream) setList(method string, list []json.RawMessage) *fakeUpstream {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists[method] = list
	return f
}

func (f *fakeUpstream) setHandler(h callHandler) *fakeUpstream {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handler = h
	return f
}

func (f *fakeUpstream) setStatus(st UpstreamStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status = st
}

// changed reports a state or list change to the hub, as a real upstream does
// after refetching its lists.
func (f *fakeUpstream) changed() {
	f.mu.Lock()
	ev := f.events
	f.mu.Unlock()
	ev.Changed()
}

// notify raises a notification that belongs to no call.
func (f *fakeUpstream) notify(session string, msg *jsonrpc.Message) {
	f.mu.Lock()
	ev := f.events
	f.mu.Unlock()
	ev.Notification(session, msg)
}

// nextCall waits for the next call the hub routes here.
func (f *fakeUpstream) nextCall(t *testing.T) *fakeCall {
	t.Helper()
	select {
	case c := <-f.callCh:
		return c
	case <-time.After(waitFor):
		t.Fatalf("fake %s: no call arrived within %s", f.name, waitFor)
		return nil
	}
}

// callCount returns how many calls of method arrived.
func (f *fakeUpstream) callCount(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c.Method == method {
			n++
		}
	}
	return n
}

func (f *fakeUpstream) Start(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started = true
}

func (f *fakeUpstream) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func (f *fakeUpstream) Call(ctx context.Context, session string, sessionEra bool, method string, params json.RawMessage, peer jsonrpc.Peer) (json.RawMessage, error) {
	c := &fakeCall{Ctx: ctx, Session: session, SessionEra: sessionEra, Method: method, Params: append(json.RawMessage(nil), params...), Peer: peer}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	h := f.handler
	f.mu.Unlock()
	select {
	case f.callCh <- c:
	default:
	}
	if h == nil {
		return json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`), nil
	}
	return h(ctx, c)
}

func (f *fakeUpstream) Notify(ctx context.Context, session, method string, params json.RawMessage) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notified = append(f.notified, method)
	return nil
}

func (f *fakeUpstream) SetLogLevel(level string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.levels = append(f.levels, level)
}

func (f *fakeUpstream) SessionClosed(session string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closedSS = append(f.closedSS, session)
}

func (f *fakeUpstream) Initialize() json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.init
}

func (f *fakeUpstream) List(method string) []json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]json.RawMessage(nil), f.lists[method]...)
}

func (f *fakeUpstream) Status() UpstreamStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}

// blockUntilCancelled is a handler that holds the call until its context
// ends and reports that on done.
func blockUntilCancelled(done chan<- error) callHandler {
	return func(ctx context.Context, c *fakeCall) (json.RawMessage, error) {
		<-ctx.Done()
		done <- context.Cause(ctx)
		return nil, ctx.Err()
	}
}

// parseRegistry parses a registry text; servers need only a command.
func parseRegistry(t testing.TB, text string) *registry.Registry {
	t.Helper()
	reg, err := registry.Parse("", []byte(text), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("registry: %v", err)
	}
	return reg
}

// fakeFactory returns a NewUpstreamFunc handing out the given fakes (a fresh
// empty fake for any other server) and recording the events the hub gives.
func fakeFactory(fakes map[string]*fakeUpstream) NewUpstreamFunc {
	var mu sync.Mutex
	return func(spec *registry.Server, _ registry.Hub, events UpstreamEvents) Upstream {
		mu.Lock()
		f := fakes[spec.Name]
		if f == nil {
			f = newFake(spec.Name)
			fakes[spec.Name] = f
		}
		mu.Unlock()
		f.mu.Lock()
		f.events = events
		f.mu.Unlock()
		return f
	}
}

// Adopt refuses: the fake keeps nothing across a hub restart.
func (f *fakeUpstream) Adopt(json.RawMessage, string, json.RawMessage, jsonrpc.Peer, func(json.RawMessage, error)) bool {
	return false
}

// upstreamLog is a hub over twoServers whose NewUpstream makes a new fake
// for every upstream it is asked for (a restart makes a third), so a test
// can tell a replacement from the upstream it replaces.
type upstreamLog struct {
	h    *Hub
	mu   sync.Mutex
	made []*fakeUpstream
}

// startUpstreamLog starts it; prepare, when set, adjusts the nth fake
// (counting from 0) before the hub gets it.
func startUpstreamLog(t *testing.T, prepare func(n int, f *fakeUpstream)) *upstreamLog {
	t.Helper()
	l := &upstreamLog{}
	l.h = New(Options{Registry: parseRegistry(t, twoServers), Logger: slog.New(slog.DiscardHandler), NewUpstream: func(spec *registry.Server, _ registry.Hub, events UpstreamEvents) Upstream {
		f := newFake(spec.Name)
		f.events = events
		l.mu.Lock()
		defer l.mu.Unlock()
		if prepare != nil {
			prepare(len(l.made), f)
		}
		l.made = append(l.made, f)
		return f
	}})
	if err := l.h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.h.Close() })
	return l
}

// nth returns the nth upstream made, nil when there is none yet.
func (l *upstreamLog) nth(n int) *fakeUpstream {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n >= len(l.made) {
		return nil
	}
	return l.made[n]
}
