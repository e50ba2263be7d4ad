package hub

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// maxQueued bounds the messages a session keeps for a GET stream that is not
// open; past it, or past the session's share of the buffers, the oldest are
// dropped.
var maxQueued = 1000

// maxGetStreams bounds the standalone streams one session may hold open.
var maxGetStreams = 8

// errSessionEnded is returned to work that outlives its session.
var errSessionEnded = errors.New("the session ended")

// session is one downstream client session on one endpoint.
type session struct {
	id       string
	endpoint string // "" for /mcp, else the server name of /{server}/mcp
	version  string
	created  time.Time
	lastSeen atomic.Int64 // unix nanoseconds

	clientInfo json.RawMessage
	caps       clientCaps
	// principal is the caller that opened the session (Caller.principal).
	principal string

	ctx    context.Context // ended by close; parent of the session's calls
	cancel context.CancelFunc

	mu       sync.Mutex
	logLevel string              // "" = never set
	subs     map[string]struct{} // subscribed resource URIs
	streams  map[string]*stream
	queue    [][]byte                           // messages waiting for a standalone stream
	queued   int64                              // their memory, as buffers counts it
	buf      *buffers                           // the hub's, set when the session joins it
	calls    map[string]context.CancelCauseFunc // downstream request id → cancel
	replies  map[string]chan *jsonrpc.Message   // hub-minted request id → waiter
	nextOut  int64
	closed   bool
}

// clientCaps is what mcphub needs to know of a client's capabilities.
type clientCaps struct {
	raw         json.RawMessage
	sampling    bool
	elicitation bool
	roots       bool
}

func parseClientCaps(raw json.RawMessage) clientCaps {
	c := clientCaps{raw: raw}
	_, c.sampling = jsonrpc.Member(raw, "sampling")
	_, c.elicitation = jsonrpc.Member(raw, "elicitation")
	_, c.roots = jsonrpc.Member(raw, "roots")
	return c
}

// newSessionID returns a random (version 4) UUID, the form of session id
// clients and proxies expect.
func newSessionID() string { return uuid.NewString() }

func newSession(parent context.Context, endpoint, version string, clientInfo, caps json.RawMessage) *session {
	s := newCallSession(parent, endpoint, version, clientInfo, caps)
	s.id = newSessionID()
	return s
}

// newCallSession is the session of one stateless request: it has no id
// (the shared upstream connections serve it) and is never listed.
func newCallSession(parent context.Context, endpoint, version string, clientInfo, caps json.RawMessage) *session {
	ctx, cancel := context.WithCancel(parent)
	s := &session{
		endpoint: endpoint, version: version, created: time.Now(),
		clientInfo: clientInfo, caps: parseClientCaps(caps),
		ctx: ctx, cancel: cancel,
		subs: map[string]struct{}{}, streams: map[string]*stream{},
		calls: map[string]context.CancelCauseFunc{}, replies: map[string]chan *jsonrpc.Message{},
	}
	s.touch()
	return s
}

func (s *session) touch() { s.lastSeen.Store(time.Now().UnixNano()) }

// primes reports whether the session's streams start with a priming event:
// protocol 2025-11-25 and later, which let clients resume from it.
func (s *session) primes() bool { return jsonrpc.AtLeast(s.version, jsonrpc.Version20251125) }

// openStream creates and registers a stream of the session.
func (s *session) openStream(post bool) (*stream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errSessionEnded
	}
	if !post {
		open := 0
		for _, st := range s.streams {
			if !st.post && st.isAttached() {
				open++
			}
		}
		if open >= maxGetStreams {
			return nil, fmt.Errorf("%w: this session already has %d open GET streams", errTooManyStreams, open)
		}
	}
	st := newStream(newStreamID(), post, s.buf)
	s.streams[st.id] = st
	s.pruneLocked()
	return st, nil
}

// maxSessionStreams bounds the streams a session keeps in memory: a client
// that reconnects often leaves detached streams behind. Past the bound,
// detached streams with no request in flight are forgotten (a Last-Event-ID
// naming one is then refused as unknown).
var maxSessionStreams = 64

func (s *session) pruneLocked() {
	if len(s.streams) <= maxSessionStreams {
		return
	}
	for id, st := range s.streams {
		if len(s.streams) <= maxSessionStreams*3/4 {
			return
		}
		st.mu.Lock()
		idle := !st.attached && (!st.post || st.finished)
		st.mu.Unlock()
		if idle {
			delete(s.streams, id)
			st.release()
		}
	}
}

var errTooManyStreams = errors.New("too many streams")

// newStreamID is short: it is repeated in every event id of the stream.
func newStreamID() string { return rand.Text()[:10] }

// resumeStream finds the stream a Last-Event-ID belongs to and claims it.
func (s *session) resumeStream(lastEventID string) (*stream, int, error) {
	sid, seq, err := parseEventID(lastEventID)
	if err != nil {
		return nil, 0, err
	}
	s.mu.Lock()
	st := s.streams[sid]
	s.mu.Unlock()
	if st == nil {
		return nil, 0, errUnknownStream
	}
	cursor, err := st.attach(seq)
	return st, cursor, err
}

// deliver sends a message that belongs to no POST stream: to one attached
// standalone stream, or into the queue until one attaches. Each message goes
// to exactly one stream.
func (s *session) deliver(data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	for _, st := range s.streams {
		if !st.post && st.isAttached() {
			// Older queued messages go first, so order is kept when a
			// stream has just attached and not pulled yet.
			s.pullLocked(st)
			st.append(data, false)
			return
		}
	}
	s.queue = append(s.queue, data)
	s.queued += int64(len(data) + eventOverhead)
	s.buf.add(int64(len(data) + eventOverhead))
	bg := s.buf.budget()
	for len(s.queue) > 0 && (len(s.queue) > maxQueued || bg.over(s.queued)) {
		n := int64(len(s.queue[0]) + eventOverhead)
		s.queued -= n
		s.buf.add(-n)
		s.queue[0] = nil
		s.queue = s.queue[1:]
	}
}

// pull moves queued messages into st, which a handler now serves. It holds
// the session lock while appending, so a message delivered meanwhile cannot
// overtake the queued ones.
func (s *session) pull(st *stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pullLocked(st)
}

func (s *session) pullLocked(st *stream) {
	for _, data := range s.queue {
		st.append(data, false)
	}
	s.queue = nil
	s.buf.add(-s.queued)
	s.queued = 0
}

// maxSessionCalls bounds the requests one session may have in flight, so one
// client cannot hold every upstream slot; past it requests are refused.
var maxSessionCalls = 64

var errTooManyCalls = errors.New("too many requests in flight")

// track registers an in-flight client request so notifications/cancelled can
// reach it; the returned function unregisters it. It refuses a request past
// maxSessionCalls, or one whose id is already in flight.
func (s *session) track(id json.RawMessage, cancel context.CancelCauseFunc) (func(), error) {
	key := string(id)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errSessionEnded
	}
	if len(s.calls) >= maxSessionCalls {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: this session already has %d requests in flight", errTooManyCalls, maxSessionCalls)
	}
	if _, dup := s.calls[key]; dup {
		s.mu.Unlock()
		return nil, fmt.Errorf("request id %s is already in flight in this session; ids must not be reused", key)
	}
	s.calls[key] = cancel
	s.mu.Unlock()
	// Idempotent: a later call must not untrack a new request that reused
	// the id once this one was answered.
	done := false
	return func() {
		s.mu.Lock()
		if !done {
			done = true
			delete(s.calls, key)
		}
		s.mu.Unlock()
	}, nil
}

// errClientCancelled is the cause of a call the client cancelled.
var errClientCancelled = errors.New("cancelled by the client")

// cancelCall cancels the in-flight request the client named.
func (s *session) cancelCall(id json.RawMessage) bool {
	s.mu.Lock()
	cancel := s.calls[string(id)]
	s.mu.Unlock()
	if cancel != nil {
		cancel(errClientCancelled)
	}
	return cancel != nil
}

// request sends a server-to-client request to this session and waits for the
// client's answer. send places the encoded request on the right stream.
func (s *session) request(ctx context.Context, method string, params json.RawMessage, send func([]byte)) (json.RawMessage, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errSessionEnded
	}
	s.nextOut++
	id := jsonrpc.Quote("mcphub-" + strconv.FormatInt(s.nextOut, 10))
	ch := make(chan *jsonrpc.Message, 1)
	s.replies[string(id)] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.replies, string(id))
		s.mu.Unlock()
	}()
	send(jsonrpc.NewRequest(id, method, params).Encode())
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, m.Error
		}
		return m.Result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.ctx.Done():
		return nil, errSessionEnded
	}
}

// reply hands a client's response to the request waiting for it.
func (s *session) reply(m *jsonrpc.Message) bool {
	s.mu.Lock()
	ch := s.replies[string(m.ID)]
	s.mu.Unlock()
	if ch == nil {
		return false
	}
	select {
	case ch <- m:
	default:
	}
	return true
}

// close ends the session: its calls are cancelled, its streams end, and
// the memory they and its queue held is freed.
func (s *session) close() {
	s.mu.Lock()
	s.closed = true
	streams := s.streams
	s.queue = nil
	s.buf.add(-s.queued)
	s.queued = 0
	s.mu.Unlock()
	s.cancel()
	for _, st := range streams {
		st.release()
	}
}

// disconnectStreams cuts the handlers serving the session's standalone
// (GET) streams; the streams stay, for the client to resume. A POST
// stream carries only its own call and ends with it: cutting one its
// client cannot resume would cancel the call.
func (s *session) disconnectStreams() {
	s.mu.Lock()
	streams := slices.Collect(maps.Values(s.streams))
	s.mu.Unlock()
	for _, st := range streams {
		if !st.post {
			st.disconnect()
		}
	}
}

// busy reports whether the session is in use now: a stream is attached or a
// request is in flight. Idle expiry leaves busy sessions alone.
func (s *session) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.calls) > 0 {
		return true
	}
	for _, st := range s.streams {
		if st.isAttached() {
			return true
		}
	}
	return false
}

// openStreams counts the session's streams being served now.
func (s *session) openStreams() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, st := range s.streams {
		if st.isAttached() {
			n++
		}
	}
	return n
}

// subscriptions returns the resource URIs the session is subscribed to.
func (s *session) subscriptions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.subs))
	for uri := range s.subs {
		out = append(out, uri)
	}
	return out
}

// subscribed reports whether the session is subscribed to uri.
func (s *session) subscribed(uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.subs[uri]
	return ok
}

// level returns the session's log level ("" when never set).
func (s *session) level() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logLevel
}

// heldBy reports whether a caller may use the session: the one that opened
// it (anyone, for a session opened while auth was off), or another replica
// serving it for that caller. A request another replica forwards carries
// its client's credential, so only a replica's own connection (a
// replicas = "one" server's) is taken on its word.
func (s *session) heldBy(c Caller) bool {
	return s.principal == "" || c.principal() == s.principal || c.ID == "replica"
}
