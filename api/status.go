package api

// Server states, as /readyz, `mcphub status` and `mcphub list` show them:
// ServerStatus.State is one of these.
const (
	StateStarting   = "starting"
	StateConnected  = "connected"
	StateRestarting = "restarting"
	StateCrashLoop  = "crash-loop"
	StateFailed     = "failed"
	StateDisabled   = "disabled"
	// StateNeedsLogin is a remote server that asks for sign-in (HTTP 401
	// with a Bearer challenge); it is not retried until it is restarted.
	StateNeedsLogin = "needs-login"
)

// Status is the hub's state as /readyz serves it (HTTP 200 once every
// server has settled, 503 with the same body while one is starting). The
// hub builds it; `mcphub status --json` prints it as it came.
type Status struct {
	Version string `json:"version"`
	// URL is the endpoint clients are given.
	URL     string         `json:"url"`
	Servers []ServerStatus `json:"servers"`
	// RegistryError is the last registry load error, with file:line, when
	// the running set is an older good registry.
	RegistryError string `json:"registry_error,omitempty"`
	// NeedsRestart names the [hub] settings of the registry that the
	// running hub could not apply (listen, tls_cert, tls_key): it keeps the
	// ones it started with until it is restarted.
	NeedsRestart []string `json:"needs_restart,omitempty"`
	// Sessions counts live client sessions.
	Sessions int `json:"sessions"`
	// Profiles are the registry's profiles as the hub serves them.
	Profiles []ProfileStatus `json:"profiles,omitempty"`
	// StoreError says why the store takes nothing now (unreachable, or
	// refusing writes): new sessions are refused and /readyz answers 503
	// until it recovers; events wait in memory meanwhile.
	StoreError string `json:"store_error,omitempty"`
	// Cluster is the team hub this replica belongs to: nil for a hub of
	// its own.
	Cluster *ClusterStatus `json:"cluster,omitempty"`
}

// ClusterStatus is a team hub's replicas, as the replica asked sees them
// in the shared store.
type ClusterStatus struct {
	// Self is the replica that answered.
	Self     string          `json:"self"`
	Replicas []ReplicaStatus `json:"replicas"`
	// RegistriesDiffer says the live replicas serve different registries
	// (each reads its own hub.toml).
	RegistriesDiffer bool `json:"registries_differ,omitempty"`
	// Servers maps each replicas = "one" server to the replica running
	// its process.
	Servers map[string]string `json:"servers,omitempty"`
	// Error says why the replicas could not be read.
	Error string `json:"error,omitempty"`
}

// ReplicaStatus is one replica of a team hub.
type ReplicaStatus struct {
	Name    string `json:"name"`
	Address string `json:"address"`
	// Alive says it beats; UpSeconds is how long it has run, and
	// HeartbeatAgeMS how long ago it last beat, by the store's clock.
	Alive          bool    `json:"alive"`
	UpSeconds      float64 `json:"up_seconds"`
	HeartbeatAgeMS int64   `json:"heartbeat_age_ms"`
	Generation     int64   `json:"generation"`
	// Sessions counts the client sessions it holds.
	Sessions int    `json:"sessions"`
	Registry string `json:"registry"`
	Version  string `json:"version"`
	Self     bool   `json:"self,omitempty"`
}

// ProfileStatus is one profile's view, as Status.Profiles lists it.
type ProfileStatus struct {
	Name string `json:"name"`
	// URL is the profile's endpoint.
	URL  string `json:"url"`
	Mode string `json:"mode"`
	// Servers are the enabled servers the profile selects.
	Servers []string `json:"servers"`
	// Tools counts the tools the profile serves; Listed those its
	// tools/list holds (the search tools in search mode).
	Tools    int `json:"tools"`
	Listed   int `json:"listed"`
	Sessions int `json:"sessions"`
	// Problem says what is wrong with the profile's table, with
	// file:line:col; the hub does not serve the profile until it is fixed.
	Problem string `json:"problem,omitempty"`
	// Conflicts lists names the profile could not expose as they are.
	Conflicts []string `json:"conflicts,omitempty"`
}

// ServerStatus is one upstream server's state, as Status.Servers lists it.
type ServerStatus struct {
	Name      string `json:"name"`
	State     string `json:"state"`
	Transport string `json:"transport,omitempty"`
	PID       int    `json:"pid,omitempty"`
	// Protocol is the revision spoken upstream: 2026-07-28 (stateless)
	// or a session's negotiated one.
	Protocol string `json:"protocol,omitempty"`
	// Protocols lists every revision the server is spoken to in, the
	// session era's first: two for a server that speaks both eras, whose
	// session-era clients are relayed in a session and 2026-07-28
	// requests statelessly (Protocol is then 2026-07-28), one otherwise.
	Protocols []string `json:"protocols,omitempty"`
	// UptimeSeconds counts since the current connection was established.
	UptimeSeconds float64 `json:"uptime_seconds,omitempty"`
	// Tools counts the tools clients see: those the server's allow and
	// deny globs let through. ToolsTotal counts every tool it offers.
	Tools      int    `json:"tools"`
	ToolsTotal int    `json:"tools_total"`
	Prompts    int    `json:"prompts"`
	Resources  int    `json:"resources"`
	LastError  string `json:"last_error,omitempty"`
	Restarts   int    `json:"restarts"`
	// Conflicts lists names this server offers that the merged catalog
	// could not expose as they are (collisions, invalid or long names).
	Conflicts []string `json:"conflicts,omitempty"`
}
