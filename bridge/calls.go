package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// hubTokenPrefix starts every progress token the bridge sends upstream.
const hubTokenPrefix = "mcphub-"

// inflight is one call on a link and where its messages go.
type inflight struct {
	peer      jsonrpc.Peer
	session   string // the client session that made the call
	upID      json.RawMessage
	origToken json.RawMessage // the client's progress token, nil if none
}

// call forwards one request on the link, with a fresh upstream id and, when
// the client asked for progress, a fresh progress token mapped back to the
// client's own.
func (l *link) call(ctx context.Context, session, method string, params json.RawMessage, peer jsonrpc.Peer) (json.RawMessage, error) {
	conn := l.waitConnected(ctx)
	if conn == nil {
		return nil, l.unavailable()
	}
	c := &inflight{peer: peer, session: session, upID: conn.NextID()}
	// A call without a peer (one the hub makes itself) has nowhere to send
	// progress, but its token is mapped all the same: no client's token is
	// sent upstream as it is.
	params, hubToken, origToken, err := l.mapProgressToken(params)
	if err != nil {
		return nil, err
	}
	c.origToken = origToken
	l.track(c, hubToken)
	defer l.untrack(c, hubToken)
	if peer != nil && l.primary() {
		peer.Forwarded(c.upID, hubToken, c.origToken)
	}
	// The upstream connection sends notifications/cancelled naming c.upID
	// when ctx ends before the result arrives.
	res, err := conn.CallWithID(ctx, c.upID, method, params)
	if err != nil {
		return nil, callError(l.srv.cfg.Name, err)
	}
	if max := l.srv.cfg.MaxResponseBytes; max > 0 && int64(len(res)) > max {
		return nil, &tooLargeError{fmt.Sprintf("server %s answered %s with %d bytes, over the %d-byte limit ([hub] max_response_bytes)", l.srv.cfg.Name, method, len(res), max)}
	}
	l.noteSubscription(method, params)
	return res, nil
}

// mapProgressToken replaces the client's _meta.progressToken, if any, with
// a token minted here, so no client's token reaches the upstream and two
// clients' tokens cannot collide there. It returns the rewritten params,
// the minted token ("" when there is none) and the client's token.
func (l *link) mapProgressToken(params json.RawMessage) (out json.RawMessage, hubToken string, orig json.RawMessage, err error) {
	meta, ok := jsonrpc.Member(params, "_meta")
	if !ok {
		return params, "", nil, nil
	}
	tok, ok := jsonrpc.Member(meta, "progressToken")
	if !ok {
		return params, "", nil, nil
	}
	hubToken = hubTokenPrefix + l.srv.tag + "-" + strconv.FormatInt(l.tokenSeq.Add(1), 10)
	newMeta, err := jsonrpc.SetMember(meta, "progressToken", jsonrpc.Quote(hubToken))
	if err == nil {
		params, err = jsonrpc.SetMember(params, "_meta", newMeta)
	}
	if err != nil {
		return nil, "", nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "malformed _meta")
	}
	return params, hubToken, tok, nil
}

// noteSubscription remembers the resources subscribed upstream, so a new
// connection renews them.
func (l *link) noteSubscription(method string, params json.RawMessage) {
	if method != "resources/subscribe" && method != "resources/unsubscribe" {
		return
	}
	uri, _ := jsonrpc.StringMember(params, "uri")
	l.mu.Lock()
	defer l.mu.Unlock()
	if method == "resources/subscribe" {
		l.subs[uri] = true
	} else {
		delete(l.subs, uri)
	}
}

func (l *link) track(c *inflight, token string) {
	l.mu.Lock()
	l.calls[string(c.upID)] = c
	if token != "" {
		l.tokens[token] = c
	}
	l.order = append(l.order, c)
	l.mu.Unlock()
}

func (l *link) untrack(c *inflight, token string) {
	l.mu.Lock()
	delete(l.calls, string(c.upID))
	if token != "" {
		delete(l.tokens, token)
	}
	for i, o := range l.order {
		if o == c {
			l.order = append(l.order[:i], l.order[i+1:]...)
			break
		}
	}
	l.mu.Unlock()
}

// owner finds the call a message belongs to: the request whose stream
// carried it, when the transport tells. Otherwise (stdio) it can only be
// inferred when every call in flight comes from one session: then it is that
// session's most recent call (with soleCall, only when exactly one call is in
// flight). With calls of several sessions in flight the message is ambiguous
// and no call is returned: a guess could hand one client's sampling prompt
// to another. share = "session" makes every case exact.
func (l *link) owner(related json.RawMessage, soleCall bool) (c *inflight, ambiguous bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if related != nil {
		if c := l.calls[string(related)]; c != nil && c.peer != nil {
			return c, false
		}
	}
	var last *inflight
	n := 0
	for _, o := range l.order {
		if o.peer == nil {
			continue
		}
		if last != nil && o.session != last.session {
			return nil, true
		}
		last = o
		n++
	}
	if soleCall && n != 1 {
		return nil, n > 1
	}
	return last, false
}
