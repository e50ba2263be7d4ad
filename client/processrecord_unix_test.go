//go:build unix

package client

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

func TestProcessRecordReapsRecordedGroup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "children.json")
	cmd := startGroupLeader(t)
	rec := NewProcessRecord(path)
	rec.Track(cmd.pid, true)

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f recordFile
	if err := json.Unmarshal(data, &f); err != nil || len(f.Groups) != 1 || f.Groups[0].PGID != cmd.pid || f.Groups[0].Start == 0 {
		t.Fatalf("record = %s (%v), want one group %d with its start time", data, err, cmd.pid)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("record mode %v, want 0600", fi.Mode().Perm())
	}

	var logs bytes.Buffer
	ReapLeftovers(path, slog.New(slog.NewTextHandler(&logs, nil)))
	if how := waitExit(cmd, 5*time.Second); !strings.Contains(how, "killed") {
		t.Fatalf("recorded group leader after reap: %q, want killed", how)
	}
	if !strings.Contains(logs.String(), "process_group=") {
		t.Errorf("reap logged %q, want the stopped process group", logs.String())
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("record after reap: %v, want removed", err)
	}
}

func TestProcessRecordUntrackedGroupIsNotReaped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "children.json")
	a, b := startGroupLeader(t), startGroupLeader(t)
	rec := NewProcessRecord(path)
	rec.Track(a.pid, true)
	rec.Track(b.pid, true)
	rec.Track(a.pid, false)
	ReapLeftovers(path, slog.New(slog.DiscardHandler))
	if how := waitExit(b, 5*time.Second); !strings.Contains(how, "killed") {
		t.Fatalf("tracked group after reap: %q, want killed", how)
	}
	if how := waitExit(a, 200*time.Millisecond); how != "" {
		t.Fatalf("a group untracked before the hub stopped was reaped: %s", how)
	}
}

// A recorded group id whose leader started at another time belongs to an
// unrelated process now: it is left alone.
func TestProcessRecordReusedGroupIDIsLeftAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "children.json")
	cmd := startGroupLeader(t)
	st, err := readLeader(cmd.pid)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(recordFile{Groups: []recordedGroup{{PGID: cmd.pid, Start: st.start + 1}}})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ReapLeftovers(path, slog.New(slog.DiscardHandler))
	if how := waitExit(cmd, 200*time.Millisecond); how != "" {
		t.Fatalf("a process whose start time differs from the record was stopped: %s", how)
	}
}

// A stdio server's group goes into the record while it runs and out of it
// once it is stopped, through Config.OnProcess.
func TestProcessRecordTracksStdioServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "children.json")
	rec := NewProcessRecord(path)
	cfg := fakeStdioConfig(t, "normal")
	cfg.OnProcess = rec.Track
	c := New(cfg, nil)
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	groups := func() []recordedGroup {
		var f recordFile
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatalf("record %s: %v", data, err)
		}
		return f.Groups
	}
	if g := groups(); len(g) != 1 || g[0].PGID != c.PID() {
		t.Fatalf("record while the server runs: %+v, want its group %d", g, c.PID())
	}
	c.Close()
	if g := groups(); len(g) != 0 {
		t.Fatalf("record after Close: %+v, want empty", g)
	}
}
