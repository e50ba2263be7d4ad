package hub

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// Multi-round-trip requests (SEP-2322) between the eras. A session-era
// server asks its client for sampling, elicitation or roots with a request
// in the middle of a call; a 2026-07-28 client takes no requests and is
// asked with an input_required result instead, then retries the call with
// inputResponses and the requestState it was given. The hub holds the
// upstream call meanwhile ("parks" it) and answers the server's requests
// with the client's responses when the retry comes.

// mrtrStatePrefix starts a requestState this hub minted: the same for
// every state of one run, different between runs and between hubs (one
// mcphub may serve another). Any other state is the upstream's own and
// travels to it untouched.
var mrtrStatePrefix = "mcphub-mrtr:" + rand.Text()[:8] + ":"

// mrtrGather is how long a call that asks for input waits for more asks
// before answering input_required: a server asks for several inputs at
// once (the Go SDK sends them concurrently) and the client should get them
// in one round.
const mrtrGather = 50 * time.Millisecond

// mrtrParkFor bounds how long a parked call waits for the client's retry.
const mrtrParkFor = 5 * time.Minute

// errMissingCapability ends a call whose server asked for input the client
// did not declare it can give.
var errMissingCapability = errors.New("the client lacks a capability the server asked for")

// inputAsk is one server request waiting for the client's response.
type inputAsk struct {
	key    string
	method string
	params json.RawMessage
	answer chan json.RawMessage
}

// mrtrCall is a stateless call that may ask its client for input: it runs
// on its own (the HTTP request that started it may end while it waits for
// the retry) until it finishes or nobody retries it.
type mrtrCall struct {
	endpoint, method, name string
	// principal is the caller's (Caller.principal): only it may retry.
	principal string

	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when res and err are set
	res    json.RawMessage
	err    error

	mu      sync.Mutex
	sink    *modernReply // the current round's reply; nil between rounds
	caps    clientCaps
	asks    map[string]*inputAsk // key → unanswered ask
	nextKey int
	wake    chan struct{} // signalled when an ask arrives
	missing string        // the capability a refused ask needed
	park    *time.Timer   // cancels the call when no retry comes
	state   string        // the requestState it is parked under, "" when not
	parked  time.Time
}

func newMRTRCall(parent context.Context, endpoint, method, name string, caps clientCaps) *mrtrCall {
	ctx, cancel := context.WithCancelCause(parent)
	return &mrtrCall{endpoint: endpoint, method: method, name: name, ctx: ctx, cancel: cancel,
		done: make(chan struct{}), caps: caps, asks: map[string]*inputAsk{}, wake: make(chan struct{}, 1)}
}

// setSink directs what the upstream sends about the call (progress, log
// messages) to the reply of the current round.
func (c *mrtrCall) setSink(out *modernReply) {
	c.mu.Lock()
	c.sink = out
	c.mu.Unlock()
}

// clearSink stops sending to out, unless a retry has taken the call over.
func (c *mrtrCall) clearSink(out *modernReply) {
	c.mu.Lock()
	if c.sink == out {
		c.sink = nil
	}
	c.mu.Unlock()
}

// emit sends a message to the current round's reply; between rounds it is
// dropped, as a stateless stream cannot be resumed.
func (c *mrtrCall) emit(data []byte) {
	c.mu.Lock()
	out := c.sink
	c.mu.Unlock()
	if out != nil {
		out.send(data)
	}
}

func (c *mrtrCall) missingCapability() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.missing
}

// ask is the server's request for input, made on the call's behalf: it
// waits for the client's response, which comes with a retry.
func (c *mrtrCall) ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if !c.caps.allows(method) {
		c.mu.Lock()
		c.missing = capabilityOf(method)
		c.mu.Unlock()
		c.cancel(errMissingCapability)
		return nil, jsonrpc.Errorf(jsonrpc.CodeMissingRequiredCapability, "the client did not declare the capability %s needs", method)
	}
	a := &inputAsk{method: method, params: params, answer: make(chan json.RawMessage, 1)}
	c.mu.Lock()
	c.nextKey++
	a.key = inputKey(method, c.nextKey)
	c.asks[a.key] = a
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	select {
	case res := <-a.answer:
		return res, nil
	case <-ctx.Done():
	case <-c.ctx.Done():
	}
	c.mu.Lock()
	delete(c.asks, a.key)
	c.mu.Unlock()
	return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, "the client did not answer")
}

// inputKey names an ask in inputRequests by what it asks for.
func inputKey(method string, n int) string {
	switch method {
	case "sampling/createMessage":
		return "sampling-" + strconv.Itoa(n)
	case "elicitation/create":
		return "elicitation-" + strconv.Itoa(n)
	case "roots/list":
		return "roots-" + strconv.Itoa(n)
	}
	return "input-" + strconv.Itoa(n)
}

// capabilityOf is the client capability a server request needs.
func capabilityOf(method string) string {
	switch method {
	case "sampling/createMessage":
		return "sampling"
	case "elicitation/create":
		return "elicitation"
	case "roots/list":
		return "roots"
	}
	return method
}

// answer hands the client's inputResponses to the asks they name. Asks
// it leaves unanswered are asked again in the next input_required.
func (c *mrtrCall) answer(responses json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	jsonrpc.Members(responses, func(k []byte, v json.RawMessage) {
		if a := c.asks[string(k)]; a != nil {
			delete(c.asks, a.key)
			a.answer <- v
		}
	})
	if len(c.asks) > 0 {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// inputRequired is the input_required result asking for every unanswered
// ask, with the requestState that resumes the call.
func (c *mrtrCall) inputRequired(state string) json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []byte(`{"resultType":"input_required","inputRequests":{`)
	first := true
	for key, a := range c.asks {
		if !first {
			out = append(out, ',')
		}
		first = false
		out = jsonrpc.AppendString(out, key)
		out = append(out, `:{"method":`...)
		out = jsonrpc.AppendString(out, a.method)
		if len(a.params) > 0 {
			out = append(out, `,"params":`...)
			out = append(out, a.params...)
		}
		out = append(out, '}')
	}
	out = append(out, `},"requestState":`...)
	out = jsonrpc.AppendString(out, state)
	return append(out, '}')
}

func (c *mrtrCall) pending() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.asks) > 0
}

// parkedCalls are the calls waiting for their client's retry, by the
// requestState they were given.
type parkedCalls struct {
	mu    sync.Mutex
	calls map[string]*mrtrCall
	// prefix starts the states this hub mints: mrtrStatePrefix, or on a
	// replica of a team hub the cluster's prefix and this replica's name
	// (see clusterStatePrefix). Set before the hub serves.
	prefix string
}

// mine is the prefix of the states this hub mints.
func (p *parkedCalls) mine() string {
	if p.prefix != "" {
		return p.prefix
	}
	return mrtrStatePrefix
}

// ours reports whether a requestState is one this hub minted.
func (p *parkedCalls) ours(state string) bool { return strings.HasPrefix(state, p.mine()) }

// park keeps c for a retry and returns the requestState naming it; the
// call is cancelled when no retry takes it within mrtrParkFor. At most
// limit calls wait at once: past it the one waiting longest is cancelled.
func (p *parkedCalls) park(c *mrtrCall, limit int) string {
	state := p.mine() + rand.Text()
	p.mu.Lock()
	if p.calls == nil {
		p.calls = map[string]*mrtrCall{}
	}
	var oldest *mrtrCall
	if limit > 0 && len(p.calls) >= limit {
		for _, o := range p.calls {
			if oldest == nil || o.parked.Before(oldest.parked) {
				oldest = o
			}
		}
		p.removeLocked(oldest)
	}
	c.mu.Lock()
	c.state, c.parked = state, time.Now()
	c.park = time.AfterFunc(mrtrParkFor, func() {
		if p.take(state, c.principal) != nil {
			c.cancel(fmt.Errorf("no retry with its requestState came within %s", mrtrParkFor))
		}
	})
	c.mu.Unlock()
	p.calls[state] = c
	p.mu.Unlock()
	if oldest != nil {
		oldest.cancel(errors.New("too many calls waited for their clients' input"))
	}
	return state
}

// owns reports whether a call principal made waits under a requestState.
func (p *parkedCalls) owns(state, principal string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.calls[state]
	return c != nil && c.principal == principal
}

// take removes and returns the call a requestState names when principal
// (Caller.principal) made it; nil for none, and another caller's call is
// left waiting for its own retry.
func (p *parkedCalls) take(state, principal string) *mrtrCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.calls[state]
	if c == nil || c.principal != principal {
		return nil
	}
	p.removeLocked(c)
	return c
}

// forget removes a call that ended while it waited.
func (p *parkedCalls) forget(c *mrtrCall) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.mu.Lock()
	state := c.state
	c.mu.Unlock()
	if state != "" && p.calls[state] == c {
		p.removeLocked(c)
	}
}

func (p *parkedCalls) removeLocked(c *mrtrCall) {
	c.mu.Lock()
	delete(p.calls, c.state)
	c.state = ""
	if c.park != nil {
		c.park.Stop()
	}
	c.mu.Unlock()
}

// stop ends the waits as the hub stops (its context has cancelled the
// calls themselves).
func (p *parkedCalls) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.calls {
		p.removeLocked(c)
	}
}

// fulfilInputs turns a stateless server's input_required result for a
// session-era client into what that client understands: each input it
// asks for becomes a request on the client's session (sent together, as
// the server asked for them together), and the call is retried upstream
// with the answers and the server's requestState until it completes. The
// complete result loses resultType, which the session era does not have.
//
// input_required comes from a stateless connection: every round takes the
// shared one, never a dual-era server's session-era connection, which
// would take the retry for a new call.
func (r *router) fulfilInputs(ctx context.Context, up Upstream, s *session, method string, params json.RawMessage, peer jsonrpc.Peer, res json.RawMessage) (json.RawMessage, error) {
	if jsonrpc.InputRequired(res) && peer == nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, "the server asked for input that nobody can give")
	}
	res, err := jsonrpc.Rounds(ctx, params, res, func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
		return up.Call(ctx, s.id, false, method, p, peer)
	}, func(ctx context.Context, m string, p json.RawMessage) (json.RawMessage, error) {
		return peer.Request(ctx, m, p)
	})
	if err != nil {
		return nil, err
	}
	if out, err := jsonrpc.DeleteMember(res, "resultType"); err == nil {
		res = out
	}
	return res, nil
}
