package stdioface

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// The client's requests and notifications on their way to the hub: each
// request relayed on a goroutine of its own, tracked by its id so that the
// client's notifications/cancelled stops it and stdin's end waits for it;
// the notifications sent in the order they came.

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
