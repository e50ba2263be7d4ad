package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// The calls side of Conn: requests are correlated with their responses by
// id in Conn.pending, whichever stream the response arrives on, and what the
// server sends on its own initiative is routed to the Handler.

// result is what a pending call receives: the response, or why there will be
// none.
type result struct {
	msg *jsonrpc.Message
	err error
}

// NextID mints a fresh upstream request id. Callers that must know the id
// before the request goes out (to map cancellations or related messages) take
// one here and pass it to CallWithID.
func (c *Conn) NextID() json.RawMessage {
	return jsonrpc.IntID(c.nextID.Add(1))
}

// Call sends a request and waits for its result. An upstream JSON-RPC error
// is returned as a *jsonrpc.Error, unchanged. When ctx ends first, the
// upstream is sent notifications/cancelled for the request.
func (c *Conn) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return c.CallWithID(ctx, c.NextID(), method, params)
}

// CallWithID is Call with an id minted by NextID.
func (c *Conn) CallWithID(ctx context.Context, id json.RawMessage, method string, params json.RawMessage) (json.RawMessage, error) {
	t := c.transport()
	if t == nil {
		return nil, ErrNotStarted
	}
	if c.ctx.Err() != nil {
		return nil, ErrClosed
	}
	ping := false
	if c.Modern() {
		if handled, err := c.modernLocal(method, params); handled {
			if err != nil {
				return nil, err
			}
			return json.RawMessage(`{}`), nil
		}
		if method == "ping" {
			// A stateless server has no ping; discover proves it answers.
			method, params, ping = "server/discover", nil, true
		}
		var err error
		if params, err = c.withModernMeta(params); err != nil {
			return nil, err
		}
	} else if method != "server/discover" { // the era probe's _meta is its own
		// The hub strips a stateless request's hop-only _meta before a
		// session-era server; a connection replaced meanwhile by one of
		// the other era is covered here.
		params = jsonrpc.StripHopMeta(params)
	}
	ch := make(chan result, 1)
	key := string(id)
	c.mu.Lock()
	c.pending[key] = ch
	c.mu.Unlock()
	defer c.forget(key)

	msg := jsonrpc.NewRequest(id, method, params)
	if err := t.send(ctx, msg, msg.Encode()); err != nil {
		if ctx.Err() != nil && method != "initialize" && method != "server/discover" {
			c.cancelUpstream(id, ctx.Err())
		}
		return nil, err
	}
	res, cancelled, err := wait(ctx, ch, t)
	if cancelled && method != "initialize" && method != "server/discover" {
		c.cancelUpstream(id, err)
	}
	if ping && err == nil {
		res = json.RawMessage(`{}`)
	}
	if method == "tools/list" && err == nil && c.Modern() {
		res = c.keepValidTools(res)
	}
	return res, err
}

func (r result) unpack() (json.RawMessage, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.msg.Error != nil {
		return nil, r.msg.Error
	}
	return r.msg.Result, nil
}

// wait waits for a pending request's result, the end of ctx, or the end of
// the transport; a result that raced either end still wins. cancelled
// reports that ctx ended first.
func wait(ctx context.Context, ch chan result, t transport) (res json.RawMessage, cancelled bool, err error) {
	select {
	case r := <-ch:
		res, err = r.unpack()
		return res, false, err
	case <-ctx.Done():
	case <-t.done():
	}
	select {
	case r := <-ch:
		res, err = r.unpack()
		return res, false, err
	default:
	}
	if ctx.Err() != nil {
		return nil, true, ctx.Err()
	}
	return nil, false, t.err()
}

func (c *Conn) forget(key string) {
	c.mu.Lock()
	delete(c.pending, key)
	t := c.t
	c.mu.Unlock()
	if f, ok := t.(interface{ forgetCall(key string) }); ok {
		f.forgetCall(key)
	}
}

// cancelUpstream tells the server to stop working on request id. It is sent
// in the background so a dead upstream cannot hold the caller.
//
// Over HTTP each message is its own request, so the cancellation can reach
// the server before the request it names, and a server ignores a cancel for
// an id it does not know yet (the request then runs with nobody to stop
// it). It is therefore sent again after cancelRepeats; a duplicate is
// harmless. Over stdio one pipe keeps them in order.
func (c *Conn) cancelUpstream(id json.RawMessage, why error) {
	params := fmt.Appendf(nil, `{"requestId":%s,"reason":%s}`, id, jsonrpc.Quote(why.Error()))
	repeats := cancelRepeats
	if _, ordered := c.transport().(*stdioTransport); ordered {
		repeats = nil
	} else if c.Modern() {
		// Over HTTP a stateless request is cancelled by closing its
		// stream, which the caller's context did.
		return
	}
	c.handlers.Go(func() {
		send := func() {
			ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
			defer cancel()
			if err := c.Notify(ctx, "notifications/cancelled", params); err != nil {
				c.log.Debug("could not send notifications/cancelled", "rpc_id", string(id), "err", err)
			}
		}
		send()
		for _, d := range repeats {
			if !sleepCtx(c.ctx, d) {
				return
			}
			send()
		}
	})
}

// cancelRepeats are the delays after which an HTTP cancellation is sent
// again, for a request that was still on its way when it was first sent.
var cancelRepeats = []time.Duration{100 * time.Millisecond, time.Second}

// Notify sends a notification.
func (c *Conn) Notify(ctx context.Context, method string, params json.RawMessage) error {
	t := c.transport()
	if t == nil {
		return ErrNotStarted
	}
	if c.Modern() {
		_, stdio := t.(*stdioTransport)
		if method != "notifications/cancelled" || !stdio {
			// The stateless era has no other client notification, and
			// none over HTTP, where closing a stream cancels.
			return nil
		}
	}
	msg := jsonrpc.NewNotification(method, params)
	return t.send(ctx, msg, msg.Encode())
}

// failCall ends one pending call with err, reporting whether there was
// one; transports use it when the stream that should have carried a
// response is lost for good.
func (c *Conn) failCall(id json.RawMessage, err error) bool {
	c.mu.Lock()
	ch := c.pending[string(id)]
	delete(c.pending, string(id))
	c.mu.Unlock()
	if ch != nil {
		ch <- result{err: err}
	}
	return ch != nil
}

// failAll ends every pending call with err and reports how many there were.
func (c *Conn) failAll(err error) int {
	c.mu.Lock()
	chans := c.pending
	c.pending = make(map[string]chan result)
	c.mu.Unlock()
	for _, ch := range chans {
		ch <- result{err: err}
	}
	return len(chans)
}

// deliver routes one message from the upstream. related is the id of the
// request whose stream carried it, if any.
func (c *Conn) deliver(m *jsonrpc.Message, related json.RawMessage) {
	switch m.Kind() {
	case jsonrpc.KindResponse, jsonrpc.KindErrorResponse:
		if m.Error != nil {
			// The message and data reach callers, logs and status: an
			// upstream may quote its credentials in them.
			m.Error.Message = c.scrub(m.Error.Message)
			m.Error.Data = c.scrubJSON(m.Error.Data)
		}
		c.mu.Lock()
		ch := c.pending[string(m.ID)]
		delete(c.pending, string(m.ID))
		c.mu.Unlock()
		if ch == nil {
			c.log.Debug("response for no pending request", "rpc_id", string(m.ID))
			return
		}
		ch <- result{msg: m}
	case jsonrpc.KindNotification:
		if m.Method == "notifications/subscriptions/acknowledged" {
			return // the listen stream's, for the connection alone
		}
		if c.handler != nil {
			c.handler.HandleNotification(m, related)
		}
	case jsonrpc.KindRequest:
		c.handlers.Go(func() { c.answer(m, related) })
	}
}

// answer runs a server-to-client request through the handler and sends the
// reply upstream. ping is answered here.
func (c *Conn) answer(m *jsonrpc.Message, related json.RawMessage) {
	var reply *jsonrpc.Message
	switch {
	case m.Method == "ping":
		reply = jsonrpc.NewResponse(m.ID, nil)
	case c.handler == nil:
		reply = jsonrpc.NewErrorResponse(m.ID, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "mcphub does not handle %s here", m.Method))
	default:
		res, err := c.handler.HandleRequest(c.ctx, m, related)
		var rpcErr *jsonrpc.Error
		switch {
		case errors.As(err, &rpcErr):
			reply = jsonrpc.NewErrorResponse(m.ID, rpcErr)
		case err != nil:
			reply = jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInternalError, err.Error()))
		default:
			reply = jsonrpc.NewResponse(m.ID, res)
		}
	}
	c.sendReply(m.Method, reply)
}

// sendReply sends the answer to a server-to-client request upstream.
func (c *Conn) sendReply(method string, reply *jsonrpc.Message) {
	t := c.transport()
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	if err := t.send(ctx, reply, reply.Encode()); err != nil {
		c.log.Warn("could not answer the server's request", "method", method, "rpc_id", string(reply.ID), "err", err)
	}
}
