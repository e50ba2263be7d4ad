//go:build unix

package main

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The record lives at <data-dir>/children.json, where the next serve on the
// same data dir finds it and stops what it names. (The record itself is
// tested in client.)
func TestChildrenRecordInDataDirIsReaped(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { killGroup(pid) })

	newChildren(dir).track(pid, true)
	if _, err := os.Stat(filepath.Join(dir, "children.json")); err != nil {
		t.Fatalf("no record in the data dir: %v", err)
	}
	reapLeftovers(dir, slog.New(slog.DiscardHandler))
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "killed") {
			t.Fatalf("recorded group leader after reap: %v, want killed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the recorded group still runs 5 s after reapLeftovers")
	}
	if _, err := os.Stat(filepath.Join(dir, "children.json")); !os.IsNotExist(err) {
		t.Errorf("record after reap: %v, want removed", err)
	}
}
