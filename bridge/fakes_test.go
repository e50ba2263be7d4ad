package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// within bounds every wait in these tests. It is a guard that turns a hang
// into a failure, never a means of synchronisation: each wait is for a
// message on a channel.
const within = 10 * time.Second

// recv returns the next value on ch, failing the test when none comes.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(within):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// eventLog records, in order, steps that different fakes take, so a test
// can assert that one happened before another.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (e *eventLog) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, fmt.Sprintf(format, args...))
}

func (e *eventLog) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.events)
}

// fakeCall is one request the bridge sent on a fakeConn (or one Await);
// the test answers it.
type fakeCall struct {
	ctx    context.Context
	id     json.RawMessage
	method string
	params json.RawMessage
	reply  chan fakeResult
}

type fakeResult struct {
	res json.RawMessage
	err error
}

func (c *fakeCall) answer(res string) { c.reply <- fakeResult{res: json.RawMessage(res)} }
func (c *fakeCall) fail(err error)    { c.reply <- fakeResult{err: err} }

// fakeInit is the initialize result fake connections report by default.
const fakeInit = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}`

// fakeConn stands in for *client.Conn. Every request the bridge makes on it
// arrives on calls for the test to answer; the connection ends when the
// test drops it or the bridge closes it.
type fakeConn struct {
	n       int // 1 for the first connection dialed
	cfg     client.Config
	handler client.Handler
	events  *eventLog

	// Set by the dialer's setup, before the bridge uses the connection.
	startErr  error
	startGate chan struct{} // when set, Start waits until it is closed
	init      *client.InitializeResult
	lists     map[string][]json.RawMessage
	resumed   []json.RawMessage

	ids   atomic.Int64
	calls chan *fakeCall
	done  chan struct{}
	once  sync.Once

	mu     sync.Mutex
	err    error
	minted []string
	notes  []*jsonrpc.Message
	closes int
}

func (c *fakeConn) Start(ctx context.Context) error {
	if c.startGate != nil {
		select {
		case <-c.startGate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return c.startErr
}

// drop ends the connection as a crash or a lost session would.
func (c *fakeConn) drop(err error) {
	c.once.Do(func() {
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		close(c.done)
	})
}

func (c *fakeConn) Close() error {
	c.mu.Lock()
	c.closes++
	first := c.closes == 1
	c.mu.Unlock()
	if first {
		c.events.add("conn %d closed", c.n)
	}
	c.drop(client.ErrClosed)
	return nil
}

func (c *fakeConn) Done() <-chan struct{} { return c.done }

func (c *fakeConn) Err() error {
	select {
	case <-c.done:
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.err
	default:
		return nil
	}
}

func (c *fakeConn) Initialize() *client.InitializeResult { return c.init }

func (c *fakeConn) NextID() json.RawMessage {
	id := jsonrpc.IntID(int64(c.n)*1000 + c.ids.Add(1))
	c.mu.Lock()
	c.minted = append(c.minted, string(id))
	c.mu.Unlock()
	return id
}

func (c *fakeConn) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return c.CallWithID(ctx, c.NextID(), method, params)
}

// CallWithID hands the request to the test and waits for its answer. When
// ctx ends first it sends notifications/cancelled for id, as *client.Conn
// does: the bridge relies on that, so what a test checks here is that the
// bridge passed the caller's context together with the id it minted.
func (c *fakeConn) CallWithID(ctx context.Context, id json.RawMessage, method string, params json.RawMessage) (json.RawMessage, error) {
	fc := &fakeCall{ctx: ctx, id: id, method: method, params: params, reply: make(chan fakeResult, 1)}
	c.calls <- fc
	select {
	case r := <-fc.reply:
		return r.res, r.err
	case <-ctx.Done():
		c.Notify(context.Background(), "notifications/cancelled", fmt.Appendf(nil, `{"requestId":%s}`, id))
		return nil, ctx.Err()
	case <-c.done:
		return nil, c.Err()
	}
}

func (c *fakeConn) Notify(_ context.Context, method string, params json.RawMessage) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notes = append(c.notes, jsonrpc.NewNotification(method, params))
	return nil
}

func (c *fakeConn) ListAll(_ context.Context, method string) ([]json.RawMessage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lists[method], nil
}

func (c *fakeConn) setList(method string, items ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lists[method] = raws(items...)
}

func (c *fakeConn) Resumed() []json.RawMessage { return c.resumed }

// Await hands the wait to the test as a call with method "await".
func (c *fakeConn) Await(ctx context.Context, id json.RawMessage) (json.RawMessage, error) {
	fc := &fakeCall{ctx: ctx, id: id, method: "await", reply: make(chan fakeResult, 1)}
	c.calls <- fc
	select {
	case r := <-fc.reply:
		return r.res, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, c.Err()
	}
}

func (c *fakeConn) Transport() string {
	if c.cfg.URL != "" {
		return client.TransportStreamableHTTP
	}
	return client.TransportStdio
}

func (c *fakeConn) PID() int { return 4000 + c.n }

// nextCall returns the next request the bridge sent on c.
func (c *fakeConn) nextCall(t *testing.T) *fakeCall {
	t.Helper()
	return recv(t, c.calls, fmt.Sprintf("a request on connection %d", c.n))
}

// noMoreCalls fails when the bridge sent c a request nobody took yet.
func (c *fakeConn) noMoreCalls(t *testing.T) {
	t.Helper()
	select {
	case fc := <-c.calls:
		t.Errorf("connection %d got an unexpected %s (id %s, params %s)", c.n, fc.method, fc.id, fc.params)
	default:
	}
}

func (c *fakeConn) mintedIDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.minted)
}

// notifications returns what the bridge sent upstream as notifications.
func (c *fakeConn) notifications() []*jsonrpc.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.notes)
}

// fakeDialer makes a fakeConn for every connection the bridge asks for.
type fakeDialer struct {
	setup  func(c *fakeConn) // may be nil
	events *eventLog
	conns  chan *fakeConn

	mu sync.Mutex
	n  int
}

func (d *fakeDialer) dial(cfg client.Config, h client.Handler) upstreamConn {
	d.mu.Lock()
	d.n++
	n := d.n
	d.mu.Unlock()
	init := &client.InitializeResult{Capabilities: json.RawMessage(`{"tools":{}}`), Raw: json.RawMessage(fakeInit)}
	c := &fakeConn{
		n: n, cfg: cfg, handler: h, events: d.events, init: init,
		lists: map[string][]json.RawMessage{"tools/list": raws(`{"name":"a"}`, `{"name":"b"}`)},
		calls: make(chan *fakeCall, 64), done: make(chan struct{}),
	}
	if d.setup != nil {
		d.setup(c)
	}
	d.conns <- c
	return c
}

// next returns the next connection the bridge dialed.
func (d *fakeDialer) next(t *testing.T) *fakeConn {
	t.Helper()
	return recv(t, d.conns, "a connection")
}

// fakeClock is a clock that moves only when the test advances it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	// armed receives the duration of every timer set, in order, so a test
	// knows when the code under test has started waiting, and for how long.
	armed chan time.Duration
}

type fakeTimer struct {
	at   time.Time
	ch   chan time.Time
	f    func()
	done bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), armed: make(chan time.Duration, 1024)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	t := &fakeTimer{ch: make(chan time.Time, 1)}
	c.add(t, d)
	return t.ch
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	t := &fakeTimer{f: f}
	c.add(t, d)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if t.done {
			return false
		}
		t.done = true
		return true
	}
}

func (c *fakeClock) add(t *fakeTimer, d time.Duration) {
	c.mu.Lock()
	t.at = c.now.Add(d)
	c.timers = append(c.timers, t)
	c.mu.Unlock()
	c.armed <- d
}

// advance moves the clock by d and fires, in order, the timers due by then.
// Functions run on the caller's goroutine, so their effects are visible
// when advance returns.
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due, left []*fakeTimer
	for _, t := range c.timers {
		switch {
		case t.done:
		case !t.at.After(c.now):
			t.done = true
			due = append(due, t)
		default:
			left = append(left, t)
		}
	}
	c.timers = left
	now := c.now
	c.mu.Unlock()
	sort.SliceStable(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		if t.ch != nil {
			t.ch <- now
		} else {
			t.f()
		}
	}
}

// nextTimer returns the duration of the next timer set.
func (c *fakeClock) nextTimer(t *testing.T) time.Duration {
	t.Helper()
	return recv(t, c.armed, "a timer")
}

// noTimer fails when a timer was set that the test did not expect.
func (c *fakeClock) noTimer(t *testing.T) {
	t.Helper()
	select {
	case d := <-c.armed:
		t.Errorf("an unexpected %v timer was set", d)
	default:
	}
}
