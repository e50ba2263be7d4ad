package hub

// Server states, as /readyz, `mcphub status` and `mcphub list` show them.
const (
	StateStarting   = "starting"
	StateConnected  = "connected"
	StateRestarting = "restarting"
	StateCrashLoop  = "crash-loop"
	StateFailed     = "failed"
	StateDisabled   = "disabled"
)

// Status is the hub's state as /readyz serves it.
type Status struct {
	Version string `json:"version"`
	// URL is the endpoint clients are given.
	URL     string         `json:"url"`
	Servers []ServerStatus `json:"servers"`
	// RegistryError is the last registry load error, with file:line, when
	// the running set is an older good registry.
	RegistryError string `json:"registry_error,omitempty"`
	// Sessions counts live client sessions.
	Sessions int `json:"sessions"`
}

// ServerStatus is one upstream server's state.
type ServerStatus struct {
	Name      string `json:"name"`
	State     string `json:"state"`
	Transport string `json:"transport,omitempty"`
	PID       int    `json:"pid,omitempty"`
	// UptimeSeconds counts since the current connection was established.
	UptimeSeconds float64 `json:"uptime_seconds,omitempty"`
	Tools         int     `json:"tools"`
	Prompts       int     `json:"prompts"`
	Resources     int     `json:"resources"`
	LastError     string  `json:"last_error,omitempty"`
	Restarts      int     `json:"restarts"`
	// Conflicts lists names this server offers that the merged catalog
	// could not expose as they are (collisions, invalid or long names).
	Conflicts []string `json:"conflicts,omitempty"`
}
