package bridge

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// A server may speak both eras on one endpoint: it serves a request that
// carries 2026-07-28 _meta statelessly, and keeps a session for a client
// that opens with initialize. Its session-era tools ask their client for
// sampling or elicitation in the middle of a call, which only a session
// can carry; its stateless ones answer input_required. So each client is
// relayed in its own era: when the shared connection of a remote server
// whose era is found (protocol "auto") speaks 2026-07-28 and its
// server/discover names a session-era revision too, the Server also opens
// a session-era connection (client.Config.SessionEra). While it is
// up, the hub asks for it (hub.Upstream.Call's sessionEra) for the calls
// of session-era sessions, and stateless calls keep the shared one; with
// share = "session", each session's own connection asks for a session
// first and finds the era when refused. A server that refuses the session, or
// answers initialize without a session id, lacks the session era: the hub
// translates for session-era clients, as it does for a server of the
// stateless era alone, and the session is asked for again after
// Backoff.SlowRetry.

// probesEras reports whether the server's era is found when connecting
// over Streamable HTTP, the only case where one endpoint can serve both:
// a stdio server is kept in a session whenever it offers one (see
// client's handshake), the legacy SSE transport predates 2026-07-28, and a
// pinned revision pins.
func (s *Server) probesEras() bool {
	return s.remote() && s.cfg.Client.ProtocolVersion == "" && s.cfg.Client.Transport != client.TransportSSE
}

// eraWait bounds how long a new shared connection waits for the
// session-era one it started before it is installed: long enough for a
// server's initialize, short of holding the server back when the session
// era is slow to answer (it then joins when it is in).
const eraWait = 10 * time.Second

// noteEra is told of each connection a link makes, with its initialize
// result, before it is installed. The shared connection speaking
// 2026-07-28 starts the session-era one and waits (at most eraWait) until
// it has connected or failed, so that the server is reported connected
// with the eras it will be spoken to in, and a session-era client's first
// call is not translated for want of a moment. The session-era one coming
// up makes the server dual-era.
func (s *Server) noteEra(ctx context.Context, l *link, init *client.InitializeResult) {
	switch {
	case l.era:
		s.mu.Lock()
		first := s.era == l && s.dualVersion == ""
		if s.era == l {
			s.dualVersion, s.noSessions = init.ProtocolVersion, false
		}
		s.mu.Unlock()
		if first {
			s.log.Info("the server speaks both eras: session-era clients are relayed in a session", "protocol", init.ProtocolVersion)
		}
	case !l.primary() || init.ProtocolVersion != jsonrpc.Version20260728 || !s.probesEras():
		// Not the shared connection of a server whose era is found,
		// speaking 2026-07-28: nothing to ask.
	case !slices.ContainsFunc(init.SupportedVersions, jsonrpc.IsSessionVersion):
		// The server names no session-era revision: it is not asked for
		// a session (a server of the stateless era alone may count any
		// request without 2026-07-28 headers against its client), and a
		// session-era connection of an earlier deployment is stopped.
		s.mu.Lock()
		old := s.era
		s.era, s.dualVersion, s.noSessions = nil, "", true
		s.mu.Unlock()
		if old != nil {
			old.stop()
		}
	default:
		era := s.startEraLink()
		if era == nil {
			return
		}
		// Within half of what is left of the connect timeout: the lists
		// are fetched after the wait, under the same budget.
		wait := eraWait
		if d, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(d)/2)
		}
		ctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		select {
		case <-era.settled:
		case <-era.done:
		case <-ctx.Done():
		}
	}
}

// startEraLink opens the session-era connection, unless one is open or
// being tried, and returns it; nil once the Server is closing.
func (s *Server) startEraLink() *link {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.ctx == nil {
		return nil
	}
	if s.era == nil {
		s.era = newLink(s, "", true)
		s.superviseLocked(s.era)
	}
	return s.era
}

// lacksSessionEra handles the failure of the session-era connection
// beside the shared one because the server keeps no sessions: calls of
// session-era sessions go back to the shared connection, translated by
// the hub, and the link is settled as failed; its supervisor asks again
// after Backoff.SlowRetry. Other failures are retried like any
// connection's.
func (s *Server) lacksSessionEra(l *link, err error) bool {
	if !l.era || !errors.Is(err, client.ErrNoSessionEra) {
		return false
	}
	s.mu.Lock()
	had := s.dualVersion != ""
	s.dualVersion, s.noSessions = "", true
	s.mu.Unlock()
	l.mu.Lock()
	first := l.state == StateStarting
	l.lastErr = err.Error()
	l.setStateLocked(StateFailed)
	l.mu.Unlock()
	if first || had {
		// Told once, not at every slow retry.
		s.log.Info("the server keeps no sessions: session-era clients are served over 2026-07-28", "err", err)
		l.changed()
	}
	return true
}

// refusesSessions reports whether the server refused the session-era
// connection beside the shared one the last time it was asked.
func (s *Server) refusesSessions() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.noSessions
}

// eraUp returns the session-era connection and the revision session-era
// clients are relayed in, while the server speaks both eras and that
// connection is up and not stopping; nil and "" otherwise: a call that
// asks for that era meanwhile is translated over the shared connection
// instead, not failed.
func (s *Server) eraUp() (*link, string) {
	s.mu.Lock()
	era, v, stopped := s.era, s.dualVersion, s.closed || s.ctx == nil
	s.mu.Unlock()
	if era == nil || v == "" || stopped || era.current() == nil {
		return nil, ""
	}
	return era, v
}

// dual is eraUp's revision.
func (s *Server) dual() string {
	_, v := s.eraUp()
	return v
}
