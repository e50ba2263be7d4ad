package hub

import (
	"net/http"
	"sort"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// SessionInfo describes one live session for `mcphub sessions`.
type SessionInfo struct {
	ID            string  `json:"id"`
	Endpoint      string  `json:"endpoint"`
	Client        string  `json:"client"`
	ClientVersion string  `json:"client_version"`
	Protocol      string  `json:"protocol"`
	AgeSeconds    float64 `json:"age_seconds"`
	IdleSeconds   float64 `json:"idle_seconds"`
	OpenStreams   int     `json:"open_streams"`
	StoredEvents  int     `json:"stored_events"`
	StoredBytes   int64   `json:"stored_bytes"`
}

// Sessions lists the live sessions, oldest first.
func (h *Hub) Sessions() []SessionInfo {
	now := time.Now()
	var out []SessionInfo
	for _, s := range h.sessionList() {
		name, _ := jsonrpc.StringMember(s.clientInfo, "name")
		version, _ := jsonrpc.StringMember(s.clientInfo, "version")
		info := SessionInfo{ID: s.id, Endpoint: endpointName(s.endpoint), Client: name, ClientVersion: version, Protocol: s.version,
			AgeSeconds:  now.Sub(s.created).Round(time.Second).Seconds(),
			IdleSeconds: now.Sub(time.Unix(0, s.lastSeen.Load())).Round(time.Second).Seconds()}
		s.mu.Lock()
		for _, st := range s.streams {
			if st.isAttached() {
				info.OpenStreams++
			}
		}
		s.mu.Unlock()
		if h.opts.Store != nil {
			info.StoredEvents, info.StoredBytes, _ = h.opts.Store.Counts(s.id)
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].AgeSeconds > out[j].AgeSeconds })
	return out
}

// EndSession ends a live session, as a DELETE from its client would.
func (h *Hub) EndSession(id string) bool {
	h.mu.RLock()
	s := h.sessions[id]
	h.mu.RUnlock()
	if s == nil {
		return false
	}
	h.endSession(s)
	return true
}

// serveSessions is the control endpoint behind `mcphub sessions`: GET lists,
// DELETE ?id=ID ends one.
func (h *Hub) serveSessions(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		writeJSON(w, http.StatusOK, h.Sessions())
	case http.MethodDelete:
		id := r.URL.Query().Get("id")
		if !h.EndSession(id) {
			httpError(w, http.StatusNotFound, "no live session "+id)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, DELETE")
		httpError(w, http.StatusMethodNotAllowed, "use GET or DELETE")
	}
}
