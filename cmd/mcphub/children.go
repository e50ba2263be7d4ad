package main

import (
	"log/slog"
	"path/filepath"

	"github.com/mcphub/mcphub/client"
)

// childrenFile is where a hub records the process groups of its stdio
// servers (see client.ProcessRecord).
func childrenFile(dataDir string) string { return filepath.Join(dataDir, "children.json") }

// children is the record of this hub's stdio servers; track is their
// client.Config.OnProcess.
type children struct{ rec *client.ProcessRecord }

func newChildren(dataDir string) children {
	return children{client.NewProcessRecord(childrenFile(dataDir))}
}

func (c children) track(pid int, started bool) { c.rec.Track(pid, started) }

// reapLeftovers stops what a previous hub on this data dir left running.
func reapLeftovers(dataDir string, log *slog.Logger) {
	client.ReapLeftovers(childrenFile(dataDir), log)
}
