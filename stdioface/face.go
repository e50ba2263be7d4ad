package stdioface

import (
	"context"
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
// own. This file runs one face from the handshake to its shutdown;
// stdio.go reads and writes the client's side (lines.go frames its lines),
// calls.go relays the client's requests and asks.go the hub's; hub.go
// opens the connection to the hub, hub_call.go carries messages on it,
// hub_supervise.go keeps it alive across hub restarts and hub_close.go ends
// it; transport.go is what one connection hands the face. stateless.go
// relays a client of the 2026-07-28 revision, and spawn.go finds or starts
// the hub.

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
// statelessly (stateless.go).
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
