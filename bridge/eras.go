package bridge

import (
	"errors"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// A server may speak both eras on one endpoint: it serves a request that
// carries 2026-07-28 _meta statelessly, and keeps a session for a client
// that opens with initialize. Its session-era tools ask their client for
// sampling or elicitation in the middle of a call, which only a session
// can carry; its stateless ones answer input_required. So each client is
// relayed in its own era: when the shared connection of a remote server
// whose era is found (protocol "auto") speaks 2026-07-28, the Server also
// opens a session-era connection (client.Config.SessionEra), and once it
// is in, calls of session-era sessions take it (or, with share =
// "session", their own session-era connections) while stateless calls
// keep the shared one. A server that refuses the session, or answers
// initialize without a session id, lacks the session era: the hub then
// translates for session-era clients, as it does for a server of the
// stateless era alone.

// probesEras reports whether the server's era is found when connecting
// over Streamable HTTP, the only case where one endpoint can serve both:
// a stdio server is kept in a session whenever it offers one (see
// client's handshake), the legacy SSE transport predates 2026-07-28, and a
// pinned revision pins.
func (s *Server) probesEras() bool {
	return s.remote() && s.cfg.Client.ProtocolVersion == "" && s.cfg.Client.Transport != client.TransportSSE
}

// noteEra is told of each connection a link makes, with its initialize
// result: the shared connection speaking 2026-07-28 starts the
// session-era one, and the session-era one coming up makes the server
// dual-era.
func (s *Server) noteEra(l *link, init *client.InitializeResult) {
	switch {
	case l.primary() && init.ProtocolVersion == jsonrpc.Version20260728 && s.probesEras():
		s.startEraLink()
	case l.era:
		s.mu.Lock()
		first := s.era == l && s.dualVersion == ""
		if s.era == l {
			s.dualVersion = init.ProtocolVersion
		}
		s.mu.Unlock()
		if first {
			s.log.Info("the server speaks both eras: session-era clients are relayed in a session", "protocol", init.ProtocolVersion)
		}
	}
}

// startEraLink opens the session-era connection, unless one is open or
// being tried.
func (s *Server) startEraLink() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.ctx == nil || s.era != nil {
		return
	}
	s.era = newLink(s, "", true)
	s.superviseLocked(s.era)
}

// lacksSessionEra handles a session-era connection's failure because the
// server keeps no sessions. The session-era link beside the shared one
// stops (stop): calls of session-era sessions go back to the shared
// connection, translated by the hub, and the era is asked again the next
// time the shared connection is made. A session's own connection tries
// again at once, finding the era (again). Other failures are retried like
// any connection's.
func (s *Server) lacksSessionEra(l *link, err error) (stop, again bool) {
	if !errors.Is(err, client.ErrNoSessionEra) {
		return false, false
	}
	if l.session != "" && !l.autoEra {
		l.autoEra = true
		return false, true
	}
	if !l.era {
		return false, false
	}
	s.mu.Lock()
	if s.era == l {
		s.era, s.dualVersion = nil, ""
	}
	s.mu.Unlock()
	s.log.Info("the server keeps no sessions: session-era clients are served over 2026-07-28", "err", err)
	l.changed()
	return true, false
}

// dual is the revision session-era clients are relayed in when the server
// speaks both eras and its session-era connection is up, "" otherwise: a
// call that asks for that era while it is down is translated over the
// shared connection instead, not failed.
func (s *Server) dual() string {
	s.mu.Lock()
	era, v := s.era, s.dualVersion
	s.mu.Unlock()
	if era == nil || era.current() == nil {
		return ""
	}
	return v
}
