//go:build windows

package main

// Ending and probing processes by PID on Windows; proc_unix_test.go has the
// Unix versions. The tests start these processes themselves and stop them by
// their own PIDs.

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// killPID ends pid at once (TerminateProcess), as SIGKILL does on Unix.
func killPID(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	defer p.Release()
	return p.Kill()
}

// termPID stops pid. Windows has no SIGTERM to send to a console process
// (a console control event reaches a whole console, not one PID), so this
// terminates it as killPID does: the process gets no chance to shut down
// cleanly.
func termPID(pid int) error { return killPID(pid) }

// pidAlive reports whether a process with this PID exists and has not
// exited.
func pidAlive(pid int) bool {
	alive, _ := pidState(pid)
	return alive
}

// pidGone reports whether no running process has this PID. Windows has no
// zombies: a process that exited counts as gone even while a handle to it
// (its parent's, say) keeps its PID reserved.
func pidGone(pid int) bool {
	alive, known := pidState(pid)
	return known && !alive
}

// pidState opens pid and reports whether it still runs. known is false when
// that cannot be told (the process exists but may not be opened), as kill 0
// failing with EPERM leaves it open on Unix. A process handle is signalled
// once the process has exited, which, unlike GetExitCodeProcess returning
// STILL_ACTIVE, cannot be confused with a process that exited with code 259.
func pidState(pid int) (alive, known bool) {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		// ERROR_INVALID_PARAMETER: no process has this PID.
		return false, errors.Is(err, windows.ERROR_INVALID_PARAMETER)
	}
	defer windows.CloseHandle(h)
	ev, err := windows.WaitForSingleObject(h, 0)
	if err != nil {
		return false, false
	}
	return ev != windows.WAIT_OBJECT_0, true
}
