package api

// SessionInfo describes one live client session of the hub, as GET
// /control/sessions lists them (oldest first) for `mcphub sessions`.
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
