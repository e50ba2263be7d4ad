package stdioface

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// The client's messages on the face's connection to the hub: a request
// sent again when it never reached the hub, finished by the connection
// that resumes its stream when it did, and sent again with the token in
// force now when the hub's token changed.

// connAfter returns the current connection once it is newer than after and
// not being replaced.
func (h *faceHub) connAfter(ctx context.Context, after int) (*client.Conn, *hubTransport, int, error) {
	for {
		h.mu.Lock()
		if h.fatal != nil {
			err := h.fatal
			h.mu.Unlock()
			return nil, nil, 0, err
		}
		if !h.swapping && h.conn != nil && h.gen > after {
			c, tr, g := h.conn, h.tr, h.gen
			h.mu.Unlock()
			return c, tr, g, nil
		}
		up := h.up
		h.mu.Unlock()
		select {
		case <-up:
		case <-ctx.Done():
			return nil, nil, 0, ctx.Err()
		}
	}
}

// call relays one request of the client's under its own id. A request that
// never reached the hub (nothing accepted the connection) is sent again on
// the next connection. One that reached it and lost its connection is
// finished by the connection that resumes the session, when that one resumes
// its stream; otherwise it is sent again when it changes nothing (repeats),
// and for any other its fate is unknown and the client is told so.
func (h *faceHub) call(ctx context.Context, m *jsonrpc.Message) (json.RawMessage, error) {
	key := string(m.ID)
	after, resends := 0, 0
	var lost error // set once the request reached the hub and its connection was lost
	for {
		conn, tr, gen, err := h.connAfter(ctx, after)
		if err != nil {
			return nil, err
		}
		var res json.RawMessage
		sent := true
		if lost != nil && !resumes(conn, m.ID) && repeats[m.Method] && resends < faceMaxResends {
			// A request that may have reached a hub that died (a ping
			// written on a pooled connection as the hub was killed) and
			// that changes nothing is simply asked again.
			resends++
			lost = nil
		}
		if lost != nil {
			if !resumes(conn, m.ID) {
				return nil, fmt.Errorf("the hub restarted while this request was in flight and its answer was lost (%v); send it again", lost)
			}
			res, err = conn.Await(ctx, m.ID)
		} else {
			tr.watch(key)
			res, err = conn.CallWithID(ctx, m.ID, m.Method, m.Params)
			sent = tr.unwatch(key)
		}
		if err == nil || isRPCError(err) || ctx.Err() != nil {
			return res, err
		}
		if h.tokenReplaced(ctx, gen, err) {
			// Refused before the hub read it: it goes again, with the
			// token in force now.
			if resends++; resends > faceMaxResends {
				return nil, err
			}
			after = gen
			continue
		}
		if !sent {
			if resends++; resends > faceMaxResends {
				return nil, err
			}
			h.reportOutage(gen)
			after = gen
			continue
		}
		if definite(err) {
			return nil, err
		}
		h.f.log.Debug("a request lost its connection to the hub", "rpc_id", key, "err", err)
		h.reportOutage(gen)
		lost, after = err, gen
	}
}

// repeats holds the requests that change nothing, which the face sends
// again when their answer was lost: the hub answers them from what it
// holds, however often they come.
var repeats = map[string]bool{
	"ping": true, "server/discover": true,
	"tools/list": true, "prompts/list": true, "resources/list": true, "resources/templates/list": true,
}

// unauthorized reports whether err is the hub's 401.
func unauthorized(err error) bool {
	var he *client.HTTPError
	return errors.As(err, &he) && he.Status == http.StatusUnauthorized
}

// tokenReplaced handles the hub's 401 to connection gen: when the registry
// now gives another token than the connection sends (auth turned on, or the
// token file replaced, which the hub applies at once), the connection is
// replaced by one that sends it, resuming the session, and tokenReplaced
// reports true: the request may go again on the next connection. A 401 to
// the token in force is the hub's answer, and any other error is left to
// the caller.
func (h *faceHub) tokenReplaced(ctx context.Context, gen int, err error) bool {
	if !unauthorized(err) {
		return false
	}
	fresh, ferr := h.f.cfg.Find(ctx)
	h.mu.Lock()
	sent, current := h.target.Token, gen == h.gen
	h.mu.Unlock()
	if !current {
		return true // replaced already; the next connection is newer
	}
	if ferr != nil || fresh.Token == sent {
		return false
	}
	h.f.log.Info("the hub's token changed; reconnecting with the registry's token in force now")
	h.reportOutage(gen)
	return true
}

// resumes reports whether conn resumed the stream of request id.
func resumes(conn *client.Conn, id json.RawMessage) bool {
	for _, r := range conn.Resumed() {
		if string(r) == string(id) {
			return true
		}
	}
	return false
}

func isRPCError(err error) bool {
	var rpcErr *jsonrpc.Error
	return errors.As(err, &rpcErr)
}

// definite reports whether err is the hub's final word on a request rather
// than a lost connection: a refusal by HTTP status, an answer too large, or
// a session the hub no longer knows.
func definite(err error) bool {
	var he *client.HTTPError
	if errors.As(err, &he) {
		return he.Status >= 400 && he.Status < 500
	}
	return errors.Is(err, client.ErrMessageTooLarge) || errors.Is(err, client.ErrSessionExpired)
}

// notify passes one notification of the client's to the hub. One that
// could not reach the hub is sent again on the next connection.
func (h *faceHub) notify(m *jsonrpc.Message) {
	after := 0
	for range 3 {
		conn, _, gen, err := h.connAfter(h.f.ctx, after)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(h.f.ctx, faceNotifyTimeout)
		err = conn.Notify(ctx, m.Method, m.Params)
		cancel()
		if err == nil || h.f.ctx.Err() != nil {
			return
		}
		if h.tokenReplaced(h.f.ctx, gen, err) {
			after = gen
			continue
		}
		if refused(err) {
			h.f.log.Debug("the hub refused a notification", "method", m.Method, "err", err)
			return
		}
		// Any other failure (a connection reset while the hub restarts,
		// a hub that does not answer) may have lost it on the way: it goes
		// again on the next connection.
		h.f.log.Debug("could not pass a notification to the hub; sending it again on the next connection", "method", m.Method, "err", err)
		h.reportOutage(gen)
		after = gen
	}
}

// refused reports whether err is the hub's answer to a notification, which
// sending it again would not change: an HTTP status (a session the hub no
// longer knows is one), or a message too large.
func refused(err error) bool {
	var he *client.HTTPError
	return errors.As(err, &he) || errors.Is(err, client.ErrSessionExpired) || errors.Is(err, client.ErrMessageTooLarge)
}
