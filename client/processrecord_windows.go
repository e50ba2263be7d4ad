//go:build windows

package client

import "log/slog"

// Track does nothing on Windows. Every stdio server runs in a job object
// created with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE whose only handle the hub
// holds; when the hub ends, however it ends, the system closes that handle
// and terminates everything in the job. No process outlives the hub, so
// there is nothing to record.
func (r *ProcessRecord) Track(pid int, started bool) {}

// ReapLeftovers does nothing on Windows: a hub's job objects die with it and
// take its servers and all they spawned along (see Track).
func ReapLeftovers(path string, log *slog.Logger) {}
