package client

import "sync"

// ProcessRecord keeps, in a JSON file, the process groups of the stdio
// servers a hub runs, so that the next hub on the same data directory can
// stop what this one leaves behind if it dies without cleaning up.
//
// A hub that exits cleanly stops every server's group itself. One killed by
// SIGKILL cannot: its servers see stdin EOF and most exit, but one that
// ignores stdin, or a grandchild, lives on. On Linux the kernel kills each
// server with the hub (Pdeathsig, see startProcess), but not what the
// server spawned; on macOS nothing does. So on both Track records each
// group with its leader's start time, and ReapLeftovers, run by the next hub
// before it starts any server, stops every recorded group that is still the
// group recorded: leftovers live until the next start. On Windows every
// server runs in a job object that the system kills with the hub, so there
// is nothing to record and both do nothing.
//
// Pass Track as Config.OnProcess. A ProcessRecord is safe for concurrent use.
type ProcessRecord struct {
	path string

	mu     sync.Mutex
	groups map[int]uint64 // group id → leader start time
}

// NewProcessRecord returns an empty record kept in the file at path. The
// file is written by Track; an existing one is replaced by the first Track,
// so run ReapLeftovers on it before.
func NewProcessRecord(path string) *ProcessRecord {
	return &ProcessRecord{path: path, groups: map[int]uint64{}}
}
