//go:build unix

package main

// The orphan test of security_test.go: it ends `mcphub serve` with Unix
// signals and checks the process groups of its stdio children, so it is
// built on Unix only, with the helpers that it alone uses.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcphub/mcphub/hub"
)

// secProcInfo reads a process's group and parent from /proc.
func secProcInfo(pid int) (pgrp, ppid int, err error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	i := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[i+2:])) // state ppid pgrp ...
	ppid, _ = strconv.Atoi(f[1])
	pgrp, _ = strconv.Atoi(f[2])
	return pgrp, ppid, nil
}

// secWaitGone polls until pid has exited (gone or a zombie).
func secWaitGone(pid int, within time.Duration) (bool, string) {
	var how string
	gone := poll(within, func() bool {
		var g bool
		g, how = durProcGone(pid)
		return g
	})
	return gone, how
}

// secReadPID polls for a PID file.
func secReadPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	if !poll(10*time.Second, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	}) {
		t.Fatalf("no PID in %s within 10 s", path)
	}
	return pid
}

// TestSecurityNoOrphans ends `mcphub serve` with SIGKILL, SIGTERM and SIGINT
// and requires both stdio children to exit within seconds, having seen EOF
// on stdin (their NAME.exit file). Before that it checks that each child
// leads its own process group and sees only PATH, HOME and its registry
// env. Child "two" also spawns a grandchild that ignores stdin and SIGTERM:
// a clean shutdown kills it with the group; after SIGKILL of the hub nothing
// can, and the test documents that (see secOrphans).
func TestSecurityNoOrphans(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads each process's group, parent and environment from /proc, which only Linux has")
	}
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			secOrphans(t, sig)
		})
	}
}

func secOrphans(t *testing.T, sig syscall.Signal) {
	dir := t.TempDir()
	d := durNewHubDirWith(t, "", secStdio(t, "one", "fake", dir)+secStdio(t, "two", "fake", dir, "MCPHUB_SEC_SPAWN", "1"))
	r := secServe(t, d, []string{"SEC_CANARY=must-not-reach-children", "MCPHUB_TOKEN=must-not-reach-children-either"}, "--log-level", "debug")
	st := secWaitSettled(t, r, d.addr, "", map[string]func(hub.ServerStatus) bool{"one": secConnected, "two": secConnected})
	pids := map[string]int{}
	for _, s := range st.Servers {
		pids[s.Name] = s.PID
	}
	grandchild := secReadPID(t, filepath.Join(dir, "two.grandchild"))
	t.Cleanup(func() {
		if gone, _ := durProcGone(grandchild); !gone {
			killPID(grandchild)
		}
	})

	hubPgrp, _, _ := secProcInfo(r.pid())
	for name, pid := range pids {
		pgrp, ppid, err := secProcInfo(pid)
		if err != nil {
			t.Fatalf("%s (pid %d): %v", name, pid, err)
		}
		if ppid != r.pid() || pgrp != pid || pgrp == hubPgrp {
			t.Errorf("%s (pid %d): parent %d, group %d; want parent %d (the hub) and a group of its own (%d), not the hub's (%d)",
				name, pid, ppid, pgrp, r.pid(), pid, hubPgrp)
		}
		env := secEnviron(t, pid)
		want := map[string]bool{"PATH": true, "HOME": true, secChildEnv: true, "MCPHUB_SEC_NAME": true, "MCPHUB_SEC_DIR": true, "GORACE": true}
		if name == "two" {
			want["MCPHUB_SEC_SPAWN"] = true
		}
		for k := range env {
			if !want[k] {
				t.Errorf("%s (pid %d) got %s from mcphub's environment; a child gets only PATH, HOME and its registry env", name, pid, k)
			}
		}
		if env["HOME"] != d.home {
			t.Errorf("%s: HOME = %q, want the hub's %q", name, env["HOME"], d.home)
		}
	}
	if pgrp, _, err := secProcInfo(grandchild); err != nil || pgrp != pids["two"] {
		t.Errorf("grandchild %d: group %d (%v), want its parent's group %d", grandchild, pgrp, err, pids["two"])
	}

	start := time.Now()
	if err := syscall.Kill(r.pid(), sig); err != nil {
		t.Fatalf("kill -%s %d: %v", sig, r.pid(), err)
	}
	select {
	case <-r.exited:
	case <-time.After(15 * time.Second):
		t.Fatalf("mcphub serve survived %s for 15 s", sig)
	}
	if sig != syscall.SIGKILL {
		if r.werr != nil || !strings.Contains(r.out.String(), "mcphub stopped") {
			t.Errorf("after %s: exit %v, output without \"mcphub stopped\"", sig, r.werr)
		}
	}
	for name, pid := range pids {
		gone, how := secWaitGone(pid, 5*time.Second)
		if !gone {
			t.Errorf("%s (pid %d) still runs 5 s after the hub got %s: an orphan", name, pid, sig)
			syscall.Kill(-pid, syscall.SIGKILL)
			continue
		}
		exit, err := os.ReadFile(filepath.Join(dir, name+".exit"))
		if err != nil {
			t.Errorf("%s (pid %d) exited (%s) after %s without seeing EOF on stdin (no %s.exit): it was killed, not shut down", name, pid, how, sig, name)
		} else {
			t.Logf("%s (pid %d) exited %s after the hub got %s: %s (%s)", name, pid, time.Since(start).Round(time.Millisecond), sig, exit, how)
		}
	}

	gone, how := secWaitGone(grandchild, 3*time.Second)
	switch {
	case sig != syscall.SIGKILL && !gone:
		t.Errorf("grandchild %d (ignores stdin and SIGTERM) still runs after a clean %s shutdown; the hub kills the whole process group", grandchild, sig)
	case sig != syscall.SIGKILL:
		t.Logf("grandchild %d killed with its process group on %s (%s)", grandchild, sig, how)
	case gone:
		t.Logf("grandchild %d is gone after SIGKILL of the hub (%s)", grandchild, how)
	default:
		// SIGKILL gives the hub no chance to signal the group, and a
		// grandchild that does not read the stdin pipe never sees EOF: it
		// is reparented and keeps running. The next serve on the same data
		// dir finds the recorded group and stops what is left of it.
		_, ppid, _ := secProcInfo(grandchild)
		t.Logf("after SIGKILL of the hub, grandchild %d (ignores stdin and SIGTERM, group %d) runs on, reparented to %d, until the next serve", grandchild, pids["two"], ppid)
		secServe(t, d, nil, "--log-level", "debug")
		if gone, how := secWaitGone(grandchild, 10*time.Second); !gone {
			t.Errorf("grandchild %d left by the killed hub still runs after the next serve started on the same data dir (%s)", grandchild, how)
		} else {
			t.Logf("the next serve stopped grandchild %d (%s)", grandchild, how)
		}
	}
}
