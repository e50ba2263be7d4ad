package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mcphub/mcphub/internal/filelock"
)

// runInfo is what a running `mcphub serve` records in its data directory:
// other commands find the hub through it when the registry does not load.
type runInfo struct {
	PID     int       `json:"pid"`
	Listen  string    `json:"listen"`
	TLSCert string    `json:"tls_cert,omitempty"` // set when the hub serves HTTPS
	Config  string    `json:"config"`
	Started time.Time `json:"started"`
}

const runFileName = "serve.lock"

// errDataDirBusy means another hub holds the data directory.
var errDataDirBusy = errors.New("the data directory is in use")

// lockDataDir takes the data directory for this hub: an exclusive lock on
// serve.lock, which also records where the hub listens. A second hub on the
// same directory is refused; the system drops the lock when a hub dies, even
// by SIGKILL, so a stale file never blocks a new start. The lock is
// filelock's, the one registry edits take too.
func lockDataDir(dir string, info runInfo) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	path := filepath.Join(dir, runFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	if err := filelock.TryLock(f); err != nil {
		f.Close()
		if !errors.Is(err, filelock.ErrLocked) {
			return nil, fmt.Errorf("data directory: %w", err)
		}
		other := ""
		if prev, rerr := readRunInfo(dir); rerr == nil {
			other = fmt.Sprintf(" by mcphub pid %d listening on %s", prev.PID, prev.Listen)
		}
		return nil, fmt.Errorf("%w%s: %s (use another --data-dir to run a second hub)", errDataDirBusy, other, dir)
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

// readRunInfo reads what the hub holding dir recorded; it fails when no hub
// holds it.
func readRunInfo(dir string) (*runInfo, error) {
	data, err := os.ReadFile(filepath.Join(dir, runFileName))
	if err != nil {
		return nil, err
	}
	var info runInfo
	if err := json.Unmarshal(data, &info); err != nil || info.Listen == "" {
		return nil, errors.New("no hub recorded")
	}
	return &info, nil
}
