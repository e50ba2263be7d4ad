package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// leader is a process in a group of its own, waited for by one goroutine.
type leader struct {
	pid  int
	done chan string // how it ended
}

func startGroupLeader(t *testing.T) *leader {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l := &leader{pid: cmd.Process.Pid, done: make(chan string, 1)}
	go func() {
		if err := cmd.Wait(); err != nil {
			l.done <- err.Error()
		} else {
			l.done <- "exit 0"
		}
	}()
	t.Cleanup(func() { syscall.Kill(-l.pid, syscall.SIGKILL) })
	return l
}

// waitExit reports how l ended, or "" if it still runs after d.
func waitExit(l *leader, d time.Duration) string {
	select {
	case how := <-l.done:
		return how
	case <-time.After(d):
		return ""
	}
}

func TestChildrenReapsRecordedGroup(t *testing.T) {
	dir := t.TempDir()
	cmd := startGroupLeader(t)
	kids := newChildren(dir)
	kids.track(cmd.pid, true)

	data, err := os.ReadFile(filepath.Join(dir, "children.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f childrenFile
	if err := json.Unmarshal(data, &f); err != nil || len(f.Groups) != 1 || f.Groups[0].PGID != cmd.pid || f.Groups[0].Start == 0 {
		t.Fatalf("children.json = %s (%v), want one group %d with its start time", data, err, cmd.pid)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "children.json")); fi.Mode().Perm() != 0o600 {
		t.Errorf("children.json mode %v, want 0600", fi.Mode().Perm())
	}

	var logs bytes.Buffer
	reapLeftovers(dir, slog.New(slog.NewTextHandler(&logs, nil)))
	if how := waitExit(cmd, 5*time.Second); !strings.Contains(how, "killed") {
		t.Fatalf("recorded group leader after reap: %q, want killed", how)
	}
	if !strings.Contains(logs.String(), "process_group=") {
		t.Errorf("reap logged %q, want the stopped process group", logs.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "children.json")); !os.IsNotExist(err) {
		t.Errorf("children.json after reap: %v, want removed", err)
	}
}

func TestChildrenUntrackedGroupIsNotReaped(t *testing.T) {
	dir := t.TempDir()
	a, b := startGroupLeader(t), startGroupLeader(t)
	kids := newChildren(dir)
	kids.track(a.pid, true)
	kids.track(b.pid, true)
	kids.track(a.pid, false)
	reapLeftovers(dir, slog.New(slog.DiscardHandler))
	if how := waitExit(b, 5*time.Second); !strings.Contains(how, "killed") {
		t.Fatalf("tracked group after reap: %q, want killed", how)
	}
	if how := waitExit(a, 200*time.Millisecond); how != "" {
		t.Fatalf("a group untracked before the hub stopped was reaped: %s", how)
	}
}

// A recorded group id whose leader started at another time belongs to an
// unrelated process now: it is left alone.
func TestChildrenReusedGroupIDIsLeftAlone(t *testing.T) {
	dir := t.TempDir()
	cmd := startGroupLeader(t)
	st, err := readProcStat(cmd.pid)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(childrenFile{Groups: []childGroup{{PGID: cmd.pid, Start: st.start + 1}}})
	if err := os.WriteFile(filepath.Join(dir, "children.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	reapLeftovers(dir, slog.New(slog.DiscardHandler))
	if how := waitExit(cmd, 200*time.Millisecond); how != "" {
		t.Fatalf("a process whose start time differs from the record was stopped: %s", how)
	}
}

func TestParseProcStat(t *testing.T) {
	line := "4242 (a) b) (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615"
	st, err := parseProcStat(line)
	if err != nil || st.pgrp != 4242 || st.start != 987654 {
		t.Fatalf("parseProcStat = %+v, %v; want group 4242, start 987654", st, err)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 1 2", "1 (x) S 1 x 3 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5", "1 (x) S 1 2 3 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 -5"} {
		if st, err := parseProcStat(bad); err == nil {
			t.Errorf("parseProcStat(%q) = %+v, want an error", bad, st)
		}
	}
}

// The command name, whatever it holds, never changes what is read from the
// fields after it.
func FuzzParseProcStat(f *testing.F) {
	f.Add("a) b) (c", "S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000")
	f.Add("x", "S")
	f.Add("", "S 1 x 3 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5")
	f.Fuzz(func(t *testing.T, name, rest string) {
		if strings.Contains(rest, ")") {
			return
		}
		got, gotErr := parseProcStat("7 (" + name + ") " + rest)
		want, wantErr := parseProcStat("7 (x) " + rest)
		if got != want || (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("name %q changed the parse of %q: %+v, %v; with name x: %+v, %v", name, rest, got, gotErr, want, wantErr)
		}
	})
}
