package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// One hub per data directory: a second lock is refused and names the
// holder, what the holder recorded stays readable, and a released directory
// can be taken again.
func TestLockDataDirIsExclusive(t *testing.T) {
	dir := t.TempDir()
	info := runInfo{PID: 4242, Listen: "127.0.0.1:7777", Config: "hub.toml", Started: time.Now()}
	release, err := lockDataDir(dir, info)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readRunInfo(dir); err != nil || got.PID != info.PID || got.Listen != info.Listen {
		t.Fatalf("readRunInfo while locked = %+v, %v; want the holder's record", got, err)
	}
	if _, err := lockDataDir(dir, runInfo{PID: 1, Listen: "x"}); !errors.Is(err, errDataDirBusy) || !strings.Contains(err.Error(), "pid 4242 listening on 127.0.0.1:7777") {
		t.Fatalf("a second lock: %v, want errDataDirBusy naming the holder", err)
	}
	release()
	if _, err := readRunInfo(dir); err == nil {
		t.Error("readRunInfo after release found a hub")
	}
	release2, err := lockDataDir(dir, info)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	release2()
}
