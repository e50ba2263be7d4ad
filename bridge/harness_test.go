package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// fakePeer is the downstream side of a call: the client session that made
// it.
type fakePeer struct {
	name string

	mu        sync.Mutex
	notes     []*jsonrpc.Message
	requests  []string
	forwarded []forwarded
}

type forwarded struct {
	upID          string
	hubToken      string
	progressToken string
}

func newPeer(name string) *fakePeer { return &fakePeer{name: name} }

func (p *fakePeer) Notify(msg *jsonrpc.Message) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notes = append(p.notes, msg)
}

// Request answers with the peer's name, so a test sees who answered.
func (p *fakePeer) Request(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests = append(p.requests, method)
	return json.RawMessage(fmt.Sprintf(`{"answeredBy":%q}`, p.name)), nil
}

func (p *fakePeer) Forwarded(upstreamID json.RawMessage, hubToken string, progressToken json.RawMessage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forwarded = append(p.forwarded, forwarded{string(upstreamID), hubToken, string(progressToken)})
}

func (p *fakePeer) notifications() []*jsonrpc.Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.notes)
}

func (p *fakePeer) forwards() []forwarded {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.forwarded)
}

var errNotFound = errors.New("not found")

// fakeStore is a StateStore in memory.
type fakeStore struct {
	events *eventLog

	mu           sync.Mutex
	state        map[string][]byte
	stateWrites  [][]byte
	catalog      map[string]map[string][]byte
	catalogSaved chan map[string][]byte
}

func newFakeStore(events *eventLog) *fakeStore {
	return &fakeStore{
		events: events, state: map[string][]byte{}, catalog: map[string]map[string][]byte{},
		catalogSaved: make(chan map[string][]byte, 256),
	}
}

func (s *fakeStore) Upstream(name string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, ok := s.state[name]
	if !ok {
		return nil, errNotFound
	}
	return data, nil
}

func (s *fakeStore) SaveUpstream(name string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state[name] = data
	s.stateWrites = append(s.stateWrites, data)
	s.events.add("state saved")
	return nil
}

func (s *fakeStore) Catalog(name string) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.catalog[name], nil
}

func (s *fakeStore) SaveCatalog(name string, items map[string][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.catalog[name] = items
	s.catalogSaved <- items
	return nil
}

func (s *fakeStore) writes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.stateWrites))
	for i, w := range s.stateWrites {
		out[i] = string(w)
	}
	return out
}

// harness is one Server wired to a fake dialer and a fake clock.
type harness struct {
	t       *testing.T
	srv     *Server
	clk     *fakeClock
	dialer  *fakeDialer
	events  *eventLog
	changed chan Status
	// hold, when set before Start, is called with each status the server
	// reports, inside its Changed call: a test can keep the report there.
	hold func(Status)
	// unreachable makes the server's TCP probes fail, as a server whose
	// host is down or whose port is closed; probes receives the address
	// of every probe, once it has been answered.
	unreachable atomic.Bool
	probes      chan string
}

// errRefused is a probe's failure while the server is unreachable.
var errRefused = errors.New("dial tcp 127.0.0.1:1: connect: connection refused")

// reach is the harness's reacher.
func (h *harness) reach(_ context.Context, addr string, _ time.Duration) error {
	err := error(nil)
	if h.unreachable.Load() {
		err = errRefused
	}
	h.probes <- addr
	return err
}

// nextProbe waits for the next TCP probe.
func (h *harness) nextProbe() string {
	h.t.Helper()
	return recv(h.t, h.probes, "a TCP probe of the server")
}

// noProbe fails when a probe was made that the test did not expect.
func (h *harness) noProbe() {
	h.t.Helper()
	select {
	case addr := <-h.probes:
		h.t.Errorf("an unexpected probe of %s", addr)
	default:
	}
}

// newHarness makes a Server from cfg (Name, Logger, dial, clock and Changed
// are filled in) without starting it.
func newHarness(t *testing.T, cfg Config, setup func(c *fakeConn)) *harness {
	t.Helper()
	h := &harness{t: t, clk: newFakeClock(), events: &eventLog{}, changed: make(chan Status, 1024), probes: make(chan string, 1024)}
	if st, ok := cfg.Store.(*fakeStore); ok {
		// One log for the store and the connections, so a test sees the
		// order of their steps.
		h.events = st.events
	}
	h.dialer = &fakeDialer{setup: setup, events: h.events, conns: make(chan *fakeConn, 64)}
	if cfg.Name == "" {
		cfg.Name = "fake"
	}
	if cfg.PingInterval == 0 {
		// Health checks set timers and send pings the other tests do not
		// expect; the tests of health.go ask for them.
		cfg.PingInterval = -1
	}
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.dial, cfg.clk, cfg.reach = h.dialer.dial, h.clk, h.reach
	cfg.Changed = func() {
		st := h.srv.Status()
		if h.hold != nil {
			h.hold(st)
		}
		h.changed <- st
	}
	h.srv = New(cfg)
	t.Cleanup(func() { h.srv.Close() })
	return h
}

// startHarness is newHarness, started.
func startHarness(t *testing.T, cfg Config, setup func(c *fakeConn)) *harness {
	t.Helper()
	h := newHarness(t, cfg, setup)
	h.srv.Start(context.Background())
	return h
}

// nextChange returns the status at the server's next Changed report.
func (h *harness) nextChange() Status {
	h.t.Helper()
	return recv(h.t, h.changed, "a change of the server")
}

// connect takes the next connection and waits until the server reports it
// connected.
func (h *harness) connect() *fakeConn {
	h.t.Helper()
	c := h.dialer.next(h.t)
	if st := h.nextChange(); st.State != StateConnected {
		h.t.Fatalf("state after connection %d = %q, want %q (last error %q)", c.n, st.State, StateConnected, st.LastError)
	}
	return c
}

type callResult struct {
	res json.RawMessage
	err error
}

// call makes a call on its own goroutine; its outcome arrives on the
// channel returned. A call of a session asks for the session era unless
// the server is spoken to in 2026-07-28 alone, as the hub asks for every
// session-era client's call it does not translate.
func (h *harness) call(ctx context.Context, session, method, params string, peer jsonrpc.Peer) <-chan callResult {
	out := make(chan callResult, 1)
	var p json.RawMessage
	if params != "" {
		p = json.RawMessage(params)
	}
	go func() {
		st := h.srv.Status()
		sessionEra := session != "" && (st.Protocol != jsonrpc.Version20260728 || st.SessionProtocol != "")
		res, err := h.srv.Call(ctx, session, sessionEra, method, p, peer)
		out <- callResult{res, err}
	}()
	return out
}

func raws(items ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(items))
	for i, s := range items {
		out[i] = json.RawMessage(s)
	}
	return out
}

// member reads one member of a JSON object as compact JSON text, "" when
// it is absent.
func member(t *testing.T, obj json.RawMessage, path ...string) string {
	t.Helper()
	for _, key := range path {
		v, ok := jsonrpc.Member(obj, key)
		if !ok {
			return ""
		}
		obj = v
	}
	return string(obj)
}
