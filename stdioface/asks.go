package stdioface

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// The hub's requests to the client (sampling, elicitation, roots): put to
// the client under ids of the face's own, which stay unique across hub
// connections, and cancelled both ways.

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
