package stdioface

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// The stdio face: one MCP session of a stdio client (newline-delimited
// JSON-RPC on stdin and stdout), carried to the hub's Streamable HTTP
// endpoint by a client.Conn. The client's requests go to the hub under the
// client's own ids, so its cancellations and progress tokens pass through as
// they are; the hub's requests come to the client under ids of the face's
// own. This file reads and writes the client's side (stdioface_lines.go
// frames its lines); stdioface_hub.go keeps the connection to the hub alive
// across hub restarts, and stdioface_transport.go is what one connection
// hands the face.

const (
	// faceMaxLine bounds one line from the client; a longer one is
	// refused and skipped.
	faceMaxLine = 32 << 20
	// DefaultGiveUp is how long the hub may stay unreachable before the
	// face gives up. A desktop client keeps its servers for hours and
	// shows a dead one as failed, so waiting out a slow restart is worth
	// minutes.
	DefaultGiveUp = 5 * time.Minute
	// DefaultDrain is how long the calls in flight when stdin ends may
	// take to finish, for a client that writes its requests and closes
	// stdin.
	DefaultDrain = 5 * time.Second
	// faceConnectTimeout bounds one connection attempt to the hub.
	faceConnectTimeout = 30 * time.Second
	// faceEarlyCancelKeep is how long a cancellation of the hub's that came
	// before the request it names is remembered, and faceEarlyCancelMax
	// how many are.
	faceEarlyCancelKeep = time.Minute
	faceEarlyCancelMax  = 256
)

// Options is what one face needs: where the hub answers and how to find it
// again, the client's two streams and the log. Run fills it in from the
// registry; a test or another front end may fill it in itself.
type Options struct {
	// Find returns where the hub answers now (it may move to another port
	// across a restart); hubclient.ErrNoHub when none answers. A
	// Finder's Find suits it.
	Find func(ctx context.Context) (hubclient.Target, error)
	// Revive starts the hub again after it has been gone a while; nil
	// means only wait for it. Set when this face started the hub.
	Revive func(ctx context.Context) error
	// Hub is where the hub answered at startup.
	Hub hubclient.Target
	// Path is the endpoint relayed to: /mcp, /NAME/mcp or
	// /profiles/NAME/mcp (hubclient.View.Path).
	Path string
	// In and Out are the client's side: newline-delimited JSON-RPC.
	In  io.Reader
	Out io.Writer
	// Log receives the face's diagnostics; never stdout, which carries
	// only MCP messages.
	Log *slog.Logger
	// GiveUp, Drain and ReviveAfter override DefaultGiveUp, DefaultDrain
	// and DefaultReviveAfter when set.
	GiveUp, Drain, ReviveAfter time.Duration
}

// face is one running stdio face.
type face struct {
	cfg Options
	log *slog.Logger

	ctx    context.Context // ends at shutdown; parent of every call
	cancel context.CancelFunc

	out        chan []byte   // encoded lines for the writer
	writerStop chan struct{} // closed to make the writer finish
	writerDone chan struct{} // closed when the writer has returned

	notes chan *jsonrpc.Message // the client's notifications, sent in order

	// What the hub sends on its own before the client has the initialize
	// response is held until then: a server may not speak first.
	greetMu sync.Mutex
	greeted bool
	held    [][]byte

	hub faceHub // the connection to the hub

	callsMu sync.Mutex
	calls   map[string]faceCall // client request id → the call relaying it
	callsWG sync.WaitGroup
	// bg counts work of the face's own that outlives the call that began
	// it (a wait for the hub, a listing); it ends with f.ctx.
	bg sync.WaitGroup

	srvMu   sync.Mutex
	srvNext atomic.Int64
	srvWait map[string]chan *jsonrpc.Message       // face id → where the client's answer goes
	srvHub  map[hubRequest]context.CancelCauseFunc // the hub's request → its forwarding
	// srvEarly holds the hub's cancellations that came before the request
	// they name was being forwarded: a connection hands over a request on
	// a goroutine of its own, but a notification at once.
	srvEarly map[hubRequest]earlyCancel
}

// faceCall is a request of the client's being relayed. A long one
// (subscriptions/listen) never ends on its own: stdin's end cancels it
// instead of waiting for it.
type faceCall struct {
	cancel context.CancelFunc
	long   bool
}

// earlyCancel is a cancellation of the hub's waiting for its request.
type earlyCancel struct {
	reason string
	at     time.Time
}

// hubRequest names a request the hub sent on one connection.
type hubRequest struct {
	gen int
	id  string
}

// Relay runs one face with o until stdin ends (nil), ctx ends (nil: a
// signal), or the hub is lost for good (its error). Before it returns, the
// hub session is deleted and what was queued for the client is written.
func Relay(ctx context.Context, o Options) error {
	return newFace(o).run(ctx)
}

func newFace(cfg Options) *face {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&cfg.GiveUp, DefaultGiveUp}, {&cfg.Drain, DefaultDrain}, {&cfg.ReviveAfter, DefaultReviveAfter}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &face{
		cfg: cfg, log: cfg.Log, ctx: ctx, cancel: cancel,
		out: make(chan []byte, 256), writerStop: make(chan struct{}), writerDone: make(chan struct{}),
		notes: make(chan *jsonrpc.Message, 256),
		calls: map[string]faceCall{}, srvWait: map[string]chan *jsonrpc.Message{},
		srvHub: map[hubRequest]context.CancelCauseFunc{}, srvEarly: map[hubRequest]earlyCancel{},
	}
	f.hub.init(f)
	return f
}

// run relays until stdin ends (nil), ctx ends (nil: a signal), or the hub is
// lost for good (its error).
func (f *face) run(ctx context.Context) error {
	go f.writer()
	msgs := make(chan *jsonrpc.Message)
	go f.reader(msgs)
	first, err := f.handshake(ctx, msgs)
	if err != nil {
		f.shutdown(ctx, false)
		if errors.Is(err, io.EOF) || ctx.Err() != nil {
			return nil
		}
		return err
	}
	if first != nil {
		init, err := f.runStateless(ctx, msgs, first)
		if init == nil {
			return err
		}
		if err := f.open(ctx, init); err != nil {
			f.shutdown(ctx, false)
			return err
		}
	}
	f.hub.startSupervising()
	go f.sendNotes()
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				f.log.Debug("stdin ended; closing the hub session")
				f.shutdown(ctx, true)
				return nil
			}
			f.dispatch(m)
		case <-ctx.Done():
			f.log.Debug("stopping on a signal; closing the hub session")
			f.shutdown(ctx, false)
			return nil
		case <-f.hub.failed:
			f.shutdown(ctx, false)
			return f.hub.fatalErr()
		case <-f.writerDone:
			// The client no longer reads its stdout: it is gone.
			f.shutdown(ctx, false)
			return nil
		}
	}
}

// handshake waits for the client's initialize, connects to the hub with the
// client's own parameters and answers with the hub's result. Before it, ping
// is answered and any other request refused, as a server does before
// initialize, except a request of the 2026-07-28 revision, which has no
// initialize: handshake returns it, and the face relays that client
// statelessly (stdioface_stateless.go).
func (f *face) handshake(ctx context.Context, msgs <-chan *jsonrpc.Message) (stateless *jsonrpc.Message, err error) {
	for {
		var m *jsonrpc.Message
		var ok bool
		select {
		case m, ok = <-msgs:
			if !ok {
				return nil, io.EOF
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		switch {
		case m.Method == "initialize" && m.IsRequest():
			return nil, f.open(ctx, m)
		case statelessRequest(m):
			return m, nil
		case m.Method == "ping" && m.IsRequest():
			f.send(jsonrpc.NewResponse(m.ID, nil))
		case m.IsRequest():
			f.send(jsonrpc.NewErrorResponse(m.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "the session is not initialized: send initialize first")))
		}
	}
}

// open connects to the hub with the client's initialize and answers it with
// the hub's result, or with the hub's refusal.
func (f *face) open(ctx context.Context, m *jsonrpc.Message) error {
	res, err := f.hub.connectFirst(ctx, m.Params)
	if err != nil {
		// The hub's own refusal is passed on as it is.
		rpcErr := jsonrpc.Errorf(jsonrpc.CodeInternalError, "mcphub stdio could not open a session on the hub: %v", err)
		errors.As(err, &rpcErr)
		f.send(jsonrpc.NewErrorResponse(m.ID, rpcErr))
		return err
	}
	f.send(jsonrpc.NewResponse(m.ID, res))
	f.greet()
	return nil
}

// dispatch routes one message of the client's.
func (f *face) dispatch(m *jsonrpc.Message) {
	switch m.Kind() {
	case jsonrpc.KindRequest:
		if m.Method == "initialize" {
			f.send(jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "the session is already initialized")))
			return
		}
		f.startCall(m)
	case jsonrpc.KindNotification:
		switch m.Method {
		case "notifications/initialized":
			return // the connection sent its own when it connected
		case "notifications/cancelled":
			f.cancelCall(m.Params)
		}
		select {
		case f.notes <- m:
		case <-f.ctx.Done():
		}
	case jsonrpc.KindResponse, jsonrpc.KindErrorResponse:
		f.answered(m)
	}
}

// startCall relays a request of the client's over the session.
func (f *face) startCall(m *jsonrpc.Message) {
	f.track(m, func(ctx context.Context) error {
		res, err := f.hub.call(ctx, m)
		if err == nil && ctx.Err() == nil {
			f.send(jsonrpc.NewResponse(m.ID, res))
		}
		return err
	})
}

// track runs relay, which answers request m, on its own goroutine, so that
// stdin's end waits for it (or, for subscriptions/listen, cancels it) and
// the client's notifications/cancelled stops it. An error relay returns is
// the client's answer, unless the call was cancelled: a cancelled request
// is not answered.
func (f *face) track(m *jsonrpc.Message, relay func(ctx context.Context) error) {
	ctx, cancel := context.WithCancel(f.ctx)
	key := string(m.ID)
	f.callsMu.Lock()
	if _, dup := f.calls[key]; dup {
		f.callsMu.Unlock()
		cancel()
		f.send(jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "a request with this id is already in flight")))
		return
	}
	f.calls[key] = faceCall{cancel: cancel, long: m.Method == "subscriptions/listen"}
	f.callsMu.Unlock()
	f.callsWG.Add(1)
	go func() {
		defer f.callsWG.Done()
		defer func() {
			f.callsMu.Lock()
			delete(f.calls, key)
			f.callsMu.Unlock()
			cancel()
		}()
		if err := relay(ctx); err != nil && ctx.Err() == nil {
			f.send(jsonrpc.NewErrorResponse(m.ID, asRPCError(err)))
		}
	}()
}

// inFlight lists the ids of the client's requests still waiting.
func (f *face) inFlight() map[string]bool {
	f.callsMu.Lock()
	defer f.callsMu.Unlock()
	ids := make(map[string]bool, len(f.calls))
	for k := range f.calls {
		ids[k] = true
	}
	return ids
}

// cancelCall stops waiting for a request the client cancelled; the
// cancellation itself goes to the hub as the client sent it.
func (f *face) cancelCall(params json.RawMessage) {
	id, ok := jsonrpc.Member(params, "requestId")
	if !ok {
		return
	}
	f.callsMu.Lock()
	c, ok := f.calls[string(id)]
	f.callsMu.Unlock()
	if ok {
		c.cancel()
	}
}

// asRPCError is the error the client gets for a failed call: the hub's
// JSON-RPC error as it was sent, or an internal error saying what happened.
func asRPCError(err error) *jsonrpc.Error {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return rpcErr
	}
	return jsonrpc.NewError(jsonrpc.CodeInternalError, err.Error())
}

// sendNotes sends the client's notifications to the hub, one at a time in
// the order they came.
func (f *face) sendNotes() {
	for {
		select {
		case m := <-f.notes:
			f.hub.notify(m)
		case <-f.ctx.Done():
			return
		}
	}
}

// askClient forwards a request of the hub's (sampling, elicitation, roots)
// to the client under a fresh id of the face's own, so ids stay unique
// across hub connections, and returns the client's result or its JSON-RPC
// error. When the hub cancels the request, or the connection that carried
// it ends, the client is told to stop with notifications/cancelled.
func (f *face) askClient(ctx context.Context, gen int, m *jsonrpc.Message) (json.RawMessage, error) {
	id := jsonrpc.IntID(f.srvNext.Add(1))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	answer := make(chan *jsonrpc.Message, 1)
	key := hubRequest{gen: gen, id: string(m.ID)}
	f.srvMu.Lock()
	if early, ok := f.srvEarly[key]; ok {
		// Cancelled before it got here: the client is not asked.
		delete(f.srvEarly, key)
		f.srvMu.Unlock()
		return nil, errors.New(early.reason)
	}
	f.srvWait[string(id)] = answer
	f.srvHub[key] = cancel
	f.srvMu.Unlock()
	defer func() {
		f.srvMu.Lock()
		delete(f.srvWait, string(id))
		delete(f.srvHub, key)
		f.srvMu.Unlock()
	}()
	f.sendHub(jsonrpc.NewRequest(id, m.Method, m.Params))
	select {
	case a := <-answer:
		if a.Error != nil {
			return nil, a.Error
		}
		return a.Result, nil
	case <-ctx.Done():
		why := context.Cause(ctx)
		f.sendHub(jsonrpc.NewNotification("notifications/cancelled",
			append(append(append([]byte(`{"requestId":`), id...), `,"reason":`...), jsonrpc.Quote(why.Error())...)))
		return nil, why
	}
}

// hubCancelled handles the hub's notifications/cancelled for a request it
// sent on connection gen: the forwarding stops and the client is told under
// the face's id. A request not being forwarded yet may still be on its way
// to askClient: the cancellation is remembered for it a while. It reports
// whether the request was one being forwarded.
func (f *face) hubCancelled(gen int, params json.RawMessage) bool {
	id, ok := jsonrpc.Member(params, "requestId")
	if !ok {
		return false
	}
	reason, _ := jsonrpc.StringMember(params, "reason")
	if reason == "" {
		reason = "cancelled by the server"
	}
	key := hubRequest{gen: gen, id: string(id)}
	f.srvMu.Lock()
	cancel := f.srvHub[key]
	if cancel == nil {
		f.rememberCancel(key, reason)
	}
	f.srvMu.Unlock()
	if cancel == nil {
		return false
	}
	cancel(errors.New(reason))
	return true
}

// rememberCancel keeps the cancellation of a request not yet forwarded,
// forgetting those kept longer than faceEarlyCancelKeep (their request was
// answered before they came) and, past faceEarlyCancelMax, any. The hub's
// ids are unique on one connection, so one kept for long harms nothing.
// f.srvMu is held.
func (f *face) rememberCancel(key hubRequest, reason string) {
	now := time.Now()
	for k, e := range f.srvEarly {
		if now.Sub(e.at) > faceEarlyCancelKeep || len(f.srvEarly) >= faceEarlyCancelMax {
			delete(f.srvEarly, k)
		}
	}
	f.srvEarly[key] = earlyCancel{reason: reason, at: now}
}

// answered delivers the client's response to a request of the hub's.
func (f *face) answered(m *jsonrpc.Message) {
	f.srvMu.Lock()
	ch := f.srvWait[string(m.ID)]
	delete(f.srvWait, string(m.ID))
	f.srvMu.Unlock()
	if ch == nil {
		f.log.Debug("the client answered a request that is not waiting", "rpc_id", string(m.ID))
		return
	}
	ch <- m
}

// send queues one message for the client. Each is written as one line.
func (f *face) send(m *jsonrpc.Message) {
	f.queue(frameLine(m))
}

func (f *face) queue(line []byte) {
	select {
	case f.out <- line:
	case <-f.writerDone:
	}
}

// sendHub queues a message the hub sent on its own (a notification, a
// request of its, the cancellation of one). Until the client has the
// initialize response it is held, in order, and queued right after it.
func (f *face) sendHub(m *jsonrpc.Message) {
	line := frameLine(m)
	f.greetMu.Lock()
	if !f.greeted {
		f.held = append(f.held, line)
		f.greetMu.Unlock()
		return
	}
	f.greetMu.Unlock()
	f.queue(line)
}

// greet lets the hub's own messages through once the initialize response
// is queued, those held first. Queueing them under greetMu keeps a message
// that comes meanwhile behind them.
func (f *face) greet() {
	f.greetMu.Lock()
	defer f.greetMu.Unlock()
	for _, line := range f.held {
		f.queue(line)
	}
	f.held, f.greeted = nil, true
}

// writer is the one goroutine that writes to stdout. When told to stop it
// writes what is queued, then returns.
func (f *face) writer() {
	defer close(f.writerDone)
	w := bufio.NewWriterSize(f.cfg.Out, 64<<10)
	write := func(line []byte) bool {
		if _, err := w.Write(line); err != nil {
			f.log.Debug("stdout is closed", "err", err)
			return false
		}
		// Flush once nothing more is queued, so a burst is one write.
		if len(f.out) == 0 {
			if err := w.Flush(); err != nil {
				f.log.Debug("stdout is closed", "err", err)
				return false
			}
		}
		return true
	}
	for {
		select {
		case line := <-f.out:
			if !write(line) {
				return
			}
		case <-f.writerStop:
			for {
				select {
				case line := <-f.out:
					if !write(line) {
						return
					}
				default:
					w.Flush()
					return
				}
			}
		}
	}
}

// reader decodes the client's lines and hands them over in order; it closes
// msgs when stdin ends. A line that is not a JSON-RPC message is answered
// with the JSON-RPC error for it.
func (f *face) reader(msgs chan<- *jsonrpc.Message) {
	defer close(msgs)
	err := readLines(f.cfg.In, faceMaxLine, func(line []byte, tooLong bool) bool {
		m, rpcErr := decodeLine(line, tooLong)
		if rpcErr != nil {
			f.log.Warn("refused a line from the client", "err", rpcErr.Message)
			var id json.RawMessage
			if m != nil {
				id = m.ID
			}
			f.send(jsonrpc.NewErrorResponse(id, rpcErr))
			return true
		}
		if m == nil {
			return true
		}
		select {
		case msgs <- m:
			return true
		case <-f.ctx.Done():
			return false
		}
	})
	if err != nil && !errors.Is(err, io.EOF) {
		f.log.Debug("reading stdin failed", "err", err)
	}
}

// shutdown ends the session: with drain, the calls in flight get a while
// to finish first, cut short when ctx ends (a signal: the client that
// closed stdin is about to kill the face, and the hub session must be
// deleted first). The hub session is deleted (unless the connection is
// down), and what is queued for the client is written.
func (f *face) shutdown(ctx context.Context, drain bool) {
	if drain {
		f.callsMu.Lock()
		for _, c := range f.calls {
			if c.long {
				c.cancel()
			}
		}
		f.callsMu.Unlock()
		done := make(chan struct{})
		go func() {
			f.callsWG.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(f.cfg.Drain):
			f.log.Warn("stdin ended with requests in flight; they are abandoned", "waited", f.cfg.Drain)
		case <-ctx.Done():
			f.log.Debug("stopped while requests were in flight; they are abandoned")
		}
	}
	f.cancel()
	f.hub.close()
	f.callsWG.Wait()
	f.bg.Wait()
	close(f.writerStop)
	<-f.writerDone
}
