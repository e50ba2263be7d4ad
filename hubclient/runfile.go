package hubclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mcphub/mcphub/internal/filelock"
)

// RunInfo is what a running `mcphub serve` records in its data directory
// (LockDataDir): other commands find the hub through it, at the address it
// really listens on (serve --listen, or port 0, may differ from the
// registry's), and when the registry does not load.
type RunInfo struct {
	PID     int       `json:"pid"`
	Listen  string    `json:"listen"`
	TLSCert string    `json:"tls_cert,omitempty"` // set when the hub serves HTTPS
	Config  string    `json:"config"`             // the registry the hub serves, an absolute path
	Version string    `json:"version"`            // the hub's mcphub version
	Started time.Time `json:"started"`
}

// RunFileName is the run file's name in the data directory: the file the
// hub locks and records itself in.
const RunFileName = "serve.lock"

// LockWait bounds how long a starting hub waits for the data directory's
// lock before it takes it for another hub's: LiveRunInfo holds it for an
// instant.
const LockWait = 250 * time.Millisecond

// ErrDataDirBusy means another hub holds the data directory: LockDataDir
// refuses a second hub on it.
var ErrDataDirBusy = errors.New("the data directory is in use")

// LockDataDir takes the data directory for this hub: an exclusive lock on
// serve.lock, which also records where the hub listens, the registry it
// serves (made absolute, so that commands run from another directory can
// compare it) and mcphub's version (info.Version, which the caller sets).
// A second hub on the same directory is refused; the system drops the lock
// when a hub dies, even by SIGKILL, so a stale file never blocks a new
// start. A lock held for an instant, by LiveRunInfo checking for a live
// hub, is waited for, up to LockWait. The lock is filelock's, the one
// registry edits take too.
func LockDataDir(dir string, info RunInfo) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	path := filepath.Join(dir, RunFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	// LiveRunInfo, in any process, holds the lock for an instant to tell
	// a live hub from a dead one's record; a hub starting in that instant
	// waits it out instead of taking the check for another hub.
	ctx, cancel := context.WithTimeout(context.Background(), LockWait)
	err = filelock.Lock(ctx, f)
	cancel()
	if err != nil {
		f.Close()
		if !errors.Is(err, filelock.ErrLocked) {
			return nil, fmt.Errorf("data directory: %w", err)
		}
		other := ""
		if prev, rerr := ReadRunInfo(dir); rerr == nil {
			other = fmt.Sprintf(" by mcphub pid %d listening on %s", prev.PID, prev.Listen)
		}
		return nil, fmt.Errorf("%w%s: %s (use another --data-dir to run a second hub)", ErrDataDirBusy, other, dir)
	}
	if info.Config != "" {
		if abs, err := filepath.Abs(info.Config); err == nil {
			info.Config = abs
		}
	}
	data, _ := json.Marshal(info)
	if err := f.Truncate(0); err == nil {
		f.WriteAt(data, 0)
		f.Sync()
	}
	return func() {
		f.Truncate(0)
		filelock.Unlock(f)
		f.Close()
	}, nil
}

// ReadRunInfo reads what the hub holding dir recorded; it fails when no hub
// holds it, or one that died left the file.
func ReadRunInfo(dir string) (*RunInfo, error) {
	data, err := os.ReadFile(filepath.Join(dir, RunFileName))
	if err != nil {
		return nil, err
	}
	var info RunInfo
	if err := json.Unmarshal(data, &info); err != nil || info.Listen == "" {
		return nil, errors.New("no hub recorded")
	}
	return &info, nil
}

// LiveRunInfo is what the hub holding dir recorded, when a live hub holds
// it; nil when none does.
//
// A hub is live when serve.lock is locked: the check opens the file apart
// from any other open and tries the lock without waiting. filelock's locks
// belong to the open file (flock on Linux and macOS, LockFileEx on the
// handle on Windows), so this works in the hub's own process as well as in
// any other, and the system drops the lock the moment a hub dies, even by
// SIGKILL. A pid check would not do: the pid of a dead hub may be another
// process's by now, a process of another user cannot be signalled on Unix,
// and os.FindProcess tells nothing there.
//
// The lock is tried only when the file holds a record: a hub that stopped
// cleanly leaves it empty. When the lock is free (a hub killed with SIGKILL
// left its record), the check holds it for the two system calls that take
// and drop it; a hub starting in that instant waits for it (LockDataDir
// waits up to LockWait).
func LiveRunInfo(dir string) *RunInfo {
	info, err := ReadRunInfo(dir)
	if err != nil {
		return nil
	}
	f, err := os.Open(filepath.Join(dir, RunFileName))
	if err != nil {
		return nil
	}
	defer f.Close()
	switch err := filelock.TryLock(f); {
	case err == nil:
		filelock.Unlock(f)
		return nil
	case !errors.Is(err, filelock.ErrLocked):
		return nil
	}
	// Read again: the hub that holds the lock may have written its record
	// since, or be stopping and have cleared it.
	if info, err = ReadRunInfo(dir); err != nil {
		return nil
	}
	return info
}
