package hubclient

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// One hub per data directory: a second lock is refused and names the
// holder, what the holder recorded stays readable, and a released directory
// can be taken again.
func TestLockDataDirIsExclusive(t *testing.T) {
	dir := t.TempDir()
	info := RunInfo{PID: 4242, Listen: "127.0.0.1:7777", Config: "hub.toml", Started: time.Now()}
	release, err := LockDataDir(dir, info)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ReadRunInfo(dir); err != nil || got.PID != info.PID || got.Listen != info.Listen {
		t.Fatalf("ReadRunInfo while locked = %+v, %v; want the holder's record", got, err)
	}
	if _, err := LockDataDir(dir, RunInfo{PID: 1, Listen: "x"}); !errors.Is(err, ErrDataDirBusy) || !strings.Contains(err.Error(), "pid 4242 listening on 127.0.0.1:7777") {
		t.Fatalf("a second lock: %v, want ErrDataDirBusy naming the holder", err)
	}
	release()
	if _, err := ReadRunInfo(dir); err == nil {
		t.Error("ReadRunInfo after release found a hub")
	}
	release2, err := LockDataDir(dir, info)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	release2()
}

// TestRunFileLiveHub: the run file records the hub's version and its
// registry as an absolute path, and LiveRunInfo finds a hub only while one
// holds the lock: not after it let go, nor from a file a dead hub left.
func TestRunFileLiveHub(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(t.TempDir())
	release, err := LockDataDir(dir, RunInfo{PID: 4242, Listen: "127.0.0.1:7777", Config: "hub.toml", Version: "v1.2.3", Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	got := LiveRunInfo(dir)
	if got == nil {
		t.Fatal("LiveRunInfo found no hub while the directory is locked")
	}
	wd, _ := os.Getwd()
	if got.Version != "v1.2.3" || got.Config != filepath.Join(wd, "hub.toml") || got.Listen != "127.0.0.1:7777" {
		t.Errorf("run file = %+v; want version %q and config %q", got, "v1.2.3", filepath.Join(wd, "hub.toml"))
	}
	// The check takes the lock for no longer than an instant: the holder
	// keeps it, and a second hub is still refused.
	if _, err := LockDataDir(dir, RunInfo{PID: 1, Listen: "x"}); !errors.Is(err, ErrDataDirBusy) {
		t.Fatalf("after LiveRunInfo, a second lock: %v, want ErrDataDirBusy", err)
	}
	release()
	if got := LiveRunInfo(dir); got != nil {
		t.Errorf("LiveRunInfo after release = %+v, want none", got)
	}
	// A hub killed with SIGKILL leaves its record, but not its lock.
	stale, _ := json.Marshal(RunInfo{PID: 4242, Listen: "127.0.0.1:7777", Config: "/x/hub.toml"})
	if err := os.WriteFile(filepath.Join(dir, RunFileName), stale, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := LiveRunInfo(dir); got != nil {
		t.Errorf("LiveRunInfo of a dead hub's file = %+v, want none", got)
	}
	if got := LiveRunInfo(filepath.Join(dir, "missing")); got != nil {
		t.Errorf("LiveRunInfo without a run file = %+v", got)
	}
	release, err = LockDataDir(dir, RunInfo{PID: 1, Listen: "127.0.0.1:1"})
	if err != nil {
		t.Fatalf("lock after a dead hub: %v", err)
	}
	release()
}
