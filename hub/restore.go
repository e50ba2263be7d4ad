package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// restore brings back the sessions of a previous run: each keeps its id,
// version, capabilities, log level, subscriptions and streams, so a client
// sending its old Mcp-Session-Id is served without re-initializing and GET
// with Last-Event-ID replays what it missed. A request that was in flight is
// finished by its upstream when it can resume it, and answered with an error
// otherwise: no client waits forever. h.mu is held; upstreams exist but have
// not started.
func (h *Hub) restoreLocked() error {
	st := h.opts.Store
	recs, err := st.Sessions()
	if err != nil {
		return fmt.Errorf("restore sessions: %w", err)
	}
	calls, err := st.Calls()
	if err != nil {
		return fmt.Errorf("restore calls: %w", err)
	}
	byStream := make(map[string]CallRecord, len(calls))
	for _, c := range calls {
		byStream[c.Stream] = c
	}
	adopted, failed := 0, 0
	for _, rec := range recs {
		s := newSession(h.ctx, rec.Endpoint, rec.Version, rec.ClientInfo, rec.Capabilities)
		s.id, s.created, s.logLevel = rec.ID, rec.Created, rec.LogLevel
		s.lastSeen.Store(rec.LastSeen.UnixNano())
		for _, uri := range rec.Subscriptions {
			s.subs[uri] = struct{}{}
		}
		streams, err := st.Streams(rec.ID)
		if err != nil {
			return fmt.Errorf("restore streams: %w", err)
		}
		for _, sr := range streams {
			str := newStream(sr.ID, sr.Post)
			str.requestID = []byte(sr.RequestID)
			str.next, str.committed, str.finished = sr.NextSeq, sr.NextSeq-1, sr.Finished
			h.bindStream(s, str)
			s.streams[sr.ID] = str
			if !sr.Post || sr.Finished {
				continue
			}
			if c, ok := byStream[sr.ID]; ok && h.adopt(s, str, c) {
				adopted++
				continue
			}
			failed++
			h.answerLost(str, "")
		}
		h.sessions[s.id] = s
	}
	if len(recs) > 0 {
		h.log.Info("restored sessions", "sessions", len(recs), "calls_resumed", adopted, "calls_lost", failed)
	}
	return nil
}

// answerLost ends a POST stream whose request cannot be finished.
func (h *Hub) answerLost(st *stream, why string) {
	msg := "mcphub restarted while this request was in flight and its server cannot resume it; it was not completed (it is not retried)"
	if why != "" {
		msg += ": " + why
	}
	st.append(jsonrpc.NewErrorResponse(st.requestID, jsonrpc.NewError(codeServerError, msg)).Encode(), true)
}

// adopt hands a request that was in flight to its upstream to finish.
func (h *Hub) adopt(s *session, st *stream, c CallRecord) bool {
	e := h.servers[c.Server]
	if e == nil {
		return false
	}
	var origToken json.RawMessage
	if c.ProgressToken != "" {
		origToken = json.RawMessage(c.ProgressToken)
	}
	peer := &sessionPeer{h: h, s: s, st: st, server: c.Server, send: func(b []byte) { st.append(b, false) }}
	// Progress the client already has must not come again when the
	// upstream replays from a slightly older event.
	if evs, err := h.opts.Store.EventsAfter(st.id, -1); err == nil {
		for i := len(evs) - 1; i >= 0; i-- {
			if m, err := jsonrpc.Decode(evs[i].Data); err == nil && m.Method == "notifications/progress" {
				peer.advance(m.Params)
				break
			}
		}
	}
	return e.up.Adopt(json.RawMessage(c.UpstreamID), c.HubToken, origToken, peer, func(res json.RawMessage, err error) {
		if err != nil {
			h.answerLost(st, err.Error())
			return
		}
		st.append(jsonrpc.NewResponse(st.requestID, res).Encode(), true)
	})
}

// resubscribe renews, once each server connects, the resource subscriptions
// that restored sessions hold.
func (h *Hub) resubscribe() {
	type sub struct {
		s   *session
		uri string
	}
	byServer := map[string][]sub{}
	for _, s := range h.sessionList() {
		s.mu.Lock()
		uris := make([]string, 0, len(s.subs))
		for uri := range s.subs {
			uris = append(uris, uri)
		}
		s.mu.Unlock()
		for _, uri := range uris {
			if c := h.view(s.endpoint); c != nil {
				if server, ok := c.resourceServer(uri); ok {
					byServer[server] = append(byServer[server], sub{s, uri})
				}
			}
		}
	}
	for server, subs := range byServer {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			if !h.waitConnected(server) {
				return
			}
			for _, sb := range subs {
				if !h.countSubscription(server, sb.s.id, sb.uri, true) {
					continue
				}
				params := fmt.Appendf(nil, `{"uri":%s}`, jsonrpc.Quote(sb.uri))
				if _, err := h.forward(h.ctx, sb.s, server, "resources/subscribe", params, nil); err != nil {
					h.log.Warn("could not renew a subscription after restart", "server", server, "uri", sb.uri, "err", err)
				}
			}
		}()
	}
}

// waitConnected waits until a server is connected, up to its connect timeout.
func (h *Hub) waitConnected(server string) bool {
	e := h.server(server)
	if e == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(h.ctx, e.spec.ConnectTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if e := h.server(server); e != nil && e.up.Status().State == StateConnected {
			return true
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return false
		}
	}
}
