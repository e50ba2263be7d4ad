package bridge

import (
	"encoding/json"
	"fmt"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// adoption is a call an earlier run of the hub sent upstream.
type adoption struct {
	c        *inflight
	hubToken string
	done     func(json.RawMessage, error)
}

// Adopt takes over a request an earlier run of the hub sent on the stored
// upstream session (Config.Client.Resume, or the state in Config.Store):
// when the connection resumes that session, the request's stream is
// reopened and its messages go to peer and its result to done. It reports
// false when the stored state has no open stream for the request, or the
// stored session was already offered, so nothing could finish it; call it
// before Start.
func (s *Server) Adopt(upstreamID json.RawMessage, hubToken string, progressToken json.RawMessage, peer jsonrpc.Peer, done func(json.RawMessage, error)) bool {
	r := s.cfg.Client.Resume
	if r == nil || r.SessionID == "" {
		return false
	}
	if _, ok := r.LastEventIDs[string(upstreamID)]; !ok {
		return false
	}
	l := s.sharedLink()
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.resumeUsed {
		// Only the first connection resumes; an adoption queued now would
		// wait for a reconnect and then be refused.
		return false
	}
	l.adoptions = append(l.adoptions, adoption{c: &inflight{peer: peer, upID: upstreamID, origToken: progressToken}, hubToken: hubToken, done: done})
	return true
}

// adopt finishes the calls of an earlier run on a connection that resumed
// their session; on a fresh session they are lost and answered so.
func (l *link) adopt(conn upstreamConn, adoptions []adoption) {
	resumed := map[string]bool{}
	for _, id := range conn.Resumed() {
		resumed[string(id)] = true
	}
	for _, a := range adoptions {
		if !resumed[string(a.c.upID)] {
			l.untrack(a.c, a.hubToken)
			a.done(nil, &unavailableError{fmt.Sprintf("server %s did not resume the session the request was sent on", l.srv.cfg.Name)})
			continue
		}
		started := l.srv.group.Go(func() {
			defer l.untrack(a.c, a.hubToken)
			res, err := conn.Await(l.ctx, a.c.upID)
			if err != nil {
				err = callError(l.srv.cfg.Name, err)
			}
			a.done(res, err)
		})
		if !started {
			// The server is stopping: the call is answered, never left
			// waiting.
			l.untrack(a.c, a.hubToken)
			a.done(nil, &unavailableError{fmt.Sprintf("server %s stopped before the request could be resumed", l.srv.cfg.Name)})
		}
	}
	if len(adoptions) > 0 {
		l.logger().Info("resumed calls of the previous run", "calls", len(adoptions))
	}
}

// abandon answers the adopted calls when no connection could be made to
// resume them.
func (l *link) abandon(adoptions []adoption, err error) {
	for _, a := range adoptions {
		l.untrack(a.c, a.hubToken)
		a.done(nil, &unavailableError{fmt.Sprintf("server %s could not be reached to resume the request: %v", l.srv.cfg.Name, err)})
	}
}
