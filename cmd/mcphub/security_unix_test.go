//go:build unix

package main

// The orphan test of security_test.go: it ends `mcphub serve` with Unix
// signals and checks the process groups of its stdio children, so it is
// built on Unix only.

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcphub/mcphub/api"
)

// TestSecurityNoOrphans ends `mcphub serve` with SIGKILL, SIGTERM and SIGINT
// and requires both stdio children to exit within seconds: on SIGTERM and
// SIGINT having seen EOF on stdin (their NAME.exit file); on SIGKILL the
// system kills them with the hub (Linux's parent-death signal), as Windows'
// job object does, so that a child that ignores EOF and SIGTERM cannot
// outlive it. Before that it checks that each child
// leads its own process group and sees only the safe set of the hub's
// environment (README) and its registry env. Child "two" also spawns a grandchild that ignores stdin and SIGTERM:
// a clean shutdown kills it with the group; after SIGKILL of the hub nothing
// can, and the next serve on the same data dir stops it.
func TestSecurityNoOrphans(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads each process's group, parent and environment from /proc, which only Linux has")
	}
	t.Parallel()
	for _, tc := range []struct {
		sig syscall.Signal
		// clean: the hub shuts down, says so, and kills its children's
		// process groups; otherwise it dies at once and the next serve
		// cleans up what it left.
		clean bool
	}{{syscall.SIGKILL, false}, {syscall.SIGTERM, true}, {syscall.SIGINT, true}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			children := map[string]childOpts{"one": {dir: dir}, "two": {dir: dir, spawn: true}}
			h := newProcHub(t)
			h.write(t, h.registry("", childServer(t, "one", children["one"]), childServer(t, "two", children["two"])))
			r := h.start([]string{"SEC_CANARY=must-not-reach-children", "MCPHUB_TOKEN=must-not-reach-children-either"}, "--log-level", "debug")
			st := h.waitStatus(t, r, 30*time.Second, "both children connect",
				secSettled(map[string]func(api.ServerStatus) bool{"one": secConnected, "two": secConnected}))
			pids := map[string]int{}
			for _, s := range st.Servers {
				pids[s.Name] = s.PID
			}
			grandchild := orphanReadPID(t, filepath.Join(dir, "two.grandchild"))
			t.Cleanup(func() {
				if gone, _ := procGone(grandchild); !gone {
					killPID(grandchild)
				}
			})
			orphanIsolation(t, h, r, children, pids, grandchild)

			start := time.Now()
			if err := signalPID(r.pid(), tc.sig); err != nil {
				t.Fatalf("kill -%s %d: %v", tc.sig, r.pid(), err)
			}
			if !r.waitExit(15 * time.Second) {
				t.Fatalf("mcphub serve survived %s for 15 s", tc.sig)
			}
			if tc.clean && (r.werr != nil || !strings.Contains(r.out.String(), "mcphub stopped")) {
				t.Errorf("after %s: exit %v, output without \"mcphub stopped\"", tc.sig, r.werr)
			}
			orphanChildrenStopped(t, tc.sig, tc.clean, dir, pids, start)
			orphanGrandchild(t, h, tc.sig, tc.clean, grandchild, pids["two"])
		})
	}
}

// orphanReadPID polls for a PID file.
func orphanReadPID(t *testing.T, path string) int {
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

// orphanIsolation checks that each child is the hub's, leads a process
// group of its own (the grandchild is in its parent's), and got only PATH,
// HOME and its registry env from the hub's environment.
func orphanIsolation(t *testing.T, h *procHub, r *hubRun, children map[string]childOpts, pids map[string]int, grandchild int) {
	t.Helper()
	_, _, hubPgrp, _ := procStat(r.pid())
	for name, pid := range pids {
		_, ppid, pgrp, err := procStat(pid)
		if err != nil {
			t.Fatalf("%s (pid %d): %v", name, pid, err)
		}
		if ppid != r.pid() || pgrp != pid || pgrp == hubPgrp {
			t.Errorf("%s (pid %d): parent %d, group %d; want parent %d (the hub) and a group of its own (%d), not the hub's (%d)",
				name, pid, ppid, pgrp, r.pid(), pid, hubPgrp)
		}
		keys, _ := children[name].envKeys(name)
		env := procEnviron(t, pid)
		for k := range env {
			if !safeInherited(k) && !slices.Contains(keys, k) {
				t.Errorf("%s (pid %d) got %s from mcphub's environment; a child gets only the safe set (README) and its registry env", name, pid, k)
			}
		}
		for _, k := range []string{"SEC_CANARY", "MCPHUB_TOKEN"} {
			if _, ok := env[k]; ok {
				t.Errorf("%s (pid %d) got %s", name, pid, k)
			}
		}
		if env["HOME"] != h.home {
			t.Errorf("%s: HOME = %q, want the hub's %q", name, env["HOME"], h.home)
		}
	}
	if _, _, pgrp, err := procStat(grandchild); err != nil || pgrp != pids["two"] {
		t.Errorf("grandchild %d: group %d (%v), want its parent's group %d", grandchild, pgrp, err, pids["two"])
	}
}

// orphanChildrenStopped requires each child to exit within 5 s of the
// hub's signal; after a clean shutdown, on EOF of its stdin: it wrote
// NAME.exit.
func orphanChildrenStopped(t *testing.T, sig syscall.Signal, clean bool, dir string, pids map[string]int, start time.Time) {
	t.Helper()
	for name, pid := range pids {
		gone, how := waitProcGone(pid, 5*time.Second)
		if !gone {
			t.Errorf("%s (pid %d) still runs 5 s after the hub got %s: an orphan", name, pid, sig)
			killGroup(pid)
			continue
		}
		exit, err := os.ReadFile(filepath.Join(dir, name+".exit"))
		switch {
		case !clean:
			t.Logf("%s (pid %d) gone %s after the hub got %s (%s)", name, pid, time.Since(start).Round(time.Millisecond), sig, how)
		case err != nil:
			t.Errorf("%s (pid %d) exited (%s) after %s without seeing EOF on stdin (no %s.exit): it was killed, not shut down", name, pid, how, sig, name)
		default:
			t.Logf("%s (pid %d) exited %s after the hub got %s: %s (%s)", name, pid, time.Since(start).Round(time.Millisecond), sig, exit, how)
		}
	}
}

// orphanGrandchild checks what became of the grandchild, which ignores
// stdin and SIGTERM. A clean shutdown kills it with its process group.
// SIGKILL gives the hub no chance to signal the group, and a grandchild
// that does not read the stdin pipe never sees EOF: it is reparented and
// keeps running, until the next serve on the same data dir finds the
// recorded group and stops what is left of it.
func orphanGrandchild(t *testing.T, h *procHub, sig syscall.Signal, clean bool, grandchild, group int) {
	t.Helper()
	gone, how := waitProcGone(grandchild, 3*time.Second)
	switch {
	case clean && !gone:
		t.Errorf("grandchild %d (ignores stdin and SIGTERM) still runs after a clean %s shutdown; the hub kills the whole process group", grandchild, sig)
	case clean:
		t.Logf("grandchild %d killed with its process group on %s (%s)", grandchild, sig, how)
	case gone:
		t.Logf("grandchild %d is gone after SIGKILL of the hub (%s)", grandchild, how)
	default:
		_, ppid, _, _ := procStat(grandchild)
		t.Logf("after SIGKILL of the hub, grandchild %d (ignores stdin and SIGTERM, group %d) runs on, reparented to %d, until the next serve", grandchild, group, ppid)
		h.start(nil, "--log-level", "debug")
		if gone, how := waitProcGone(grandchild, 10*time.Second); !gone {
			t.Errorf("grandchild %d left by the killed hub still runs after the next serve started on the same data dir (%s)", grandchild, how)
		} else {
			t.Logf("the next serve stopped grandchild %d (%s)", grandchild, how)
		}
	}
}

// safeInherited reports whether a Unix child may inherit name from the hub
// without asking: the safe set the README documents.
func safeInherited(name string) bool {
	switch strings.ToUpper(name) {
	case "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TZ", "TMPDIR", "TEMP", "TMP",
		"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
		"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE":
		return true
	}
	return strings.HasPrefix(name, "LC_") || strings.HasPrefix(name, "XDG_")
}
