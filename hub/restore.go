package hub

import (
	"encoding/json"
	"fmt"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// restore brings back the sessions of a previous run: each keeps its id,
// version, capabilities, log level, subscriptions and streams, so a client
// sending its old Mcp-Session-Id is served without re-initializing and GET
// with Last-Event-ID replays what it missed. A request that was in flight is
// finished by its upstream when it can resume it, and answered with an error
// otherwise: no client waits forever. Upstreams exist but have
// not started.
func (set *sessionSet) restore(st Store) error {
	recs, err := st.Sessions()
	if err != nil {
		return fmt.Errorf("restore sessions: %w", err)
	}
	calls, err := st.Calls()
	if err != nil {
		return fmt.Errorf("restore calls: %w", err)
	}
	byStream := callsByStream(calls)
	adopted, failed := 0, 0
	for _, rec := range recs {
		s, a, f, err := set.restoreSession(st, rec, byStream, adoptFunc{set.adopt, lostOnRestart})
		if err != nil {
			return err
		}
		adopted, failed = adopted+a, failed+f
		set.mu.Lock()
		set.byID[s.id] = s
		set.mu.Unlock()
	}
	if len(recs) > 0 {
		set.log.Info("restored sessions", "sessions", len(recs), "calls_resumed", adopted, "calls_lost", failed)
	}
	return nil
}

func callsByStream(calls []CallRecord) map[string]CallRecord {
	byStream := make(map[string]CallRecord, len(calls))
	for _, c := range calls {
		byStream[c.Stream] = c
	}
	return byStream
}

// adoptFunc hands a request that was in flight to an upstream that resumes
// it, reporting false when none can; lost is what the client is told then.
type adoptFunc struct {
	adopt func(s *session, st *stream, c CallRecord) bool
	lost  string
}

// restoreSession rebuilds one stored session with its streams. A request
// that was in flight is handed to adopt, and answered with an error when it
// cannot be resumed.
func (set *sessionSet) restoreSession(st Store, rec SessionRecord, byStream map[string]CallRecord, adopt adoptFunc) (s *session, adopted, failed int, err error) {
	s = newSession(set.ctx, rec.Endpoint, rec.Version, rec.ClientInfo, rec.Capabilities)
	s.id, s.created, s.logLevel, s.principal = rec.ID, rec.Created, rec.LogLevel, rec.Principal
	s.lastSeen.Store(rec.LastSeen.UnixNano())
	s.buf = set.buffers()
	for _, uri := range rec.Subscriptions {
		s.subs[uri] = struct{}{}
	}
	streams, err := st.Streams(rec.ID)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("restore streams: %w", err)
	}
	for _, sr := range streams {
		str := newStream(sr.ID, sr.Post, s.buf)
		str.requestID = []byte(sr.RequestID)
		str.next, str.committed, str.finished = sr.NextSeq, sr.NextSeq-1, sr.Finished
		set.store.bindStream(s, str)
		s.streams[sr.ID] = str
		if !sr.Post || sr.Finished {
			continue
		}
		if c, ok := byStream[sr.ID]; ok && adopt.adopt(s, str, c) {
			adopted++
			continue
		}
		failed++
		answerLost(str, adopt.lost, "")
	}
	return s, adopted, failed, nil
}

// Why a request in flight was lost: the hub restarted, or the replica of a
// team hub that relayed it stopped and another took its session.
const (
	lostOnRestart   = "mcphub restarted while this request was in flight and its server cannot resume it; it was not completed (it is not retried)"
	lostWithReplica = "the mcphub replica relaying this request stopped and another took over the session, but the request's server cannot resume it from there (a stdio server's process stops with its replica); it was not completed (it is not retried)"
)

// answerLost ends a POST stream whose request cannot be finished, saying
// msg and why.
func answerLost(st *stream, msg, why string) {
	if why != "" {
		msg += ": " + why
	}
	st.append(jsonrpc.NewErrorResponse(st.requestID, jsonrpc.NewError(codeServerError, msg)).Encode(), true)
}

// adopt hands a request that was in flight to its upstream to finish.
func (set *sessionSet) adopt(s *session, st *stream, c CallRecord) bool {
	e := set.servers.get(c.Server)
	if e == nil {
		return false
	}
	return set.adoptOn(e.up, s, st, c, lostOnRestart, nil)
}

// adoptOn hands a request that was in flight to up, which resumes the
// upstream stream its result travels on; a failure is answered with lost.
// finished, when set, runs once the request is answered.
func (set *sessionSet) adoptOn(up Upstream, s *session, st *stream, c CallRecord, lost string, finished func()) bool {
	var origToken json.RawMessage
	if c.ProgressToken != "" {
		origToken = json.RawMessage(c.ProgressToken)
	}
	peer := &sessionPeer{store: set.store, s: s, st: st, server: c.Server, send: func(b []byte) { st.append(b, false) }}
	// Progress the client already has must not come again when the
	// upstream replays from a slightly older event.
	if evs, err := st.load(-1); err == nil {
		for i := len(evs) - 1; i >= 0; i-- {
			if m, err := jsonrpc.Decode(evs[i].data); err == nil && m.Method == "notifications/progress" {
				peer.advance(m.Params)
				break
			}
		}
	}
	return up.Adopt(json.RawMessage(c.UpstreamID), c.HubToken, origToken, peer, func(res json.RawMessage, err error) {
		if err != nil {
			answerLost(st, lost, err.Error())
		} else {
			st.append(jsonrpc.NewResponse(st.requestID, res).Encode(), true)
		}
		if finished != nil {
			finished()
		}
	})
}
