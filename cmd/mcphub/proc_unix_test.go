//go:build unix

package main

// Signalling and probing processes by PID on Unix; proc_windows_test.go has
// the Windows versions. The tests start these processes themselves and stop
// them by their own PIDs.

import (
	"errors"
	"syscall"
)

// killPID ends pid at once with SIGKILL.
func killPID(pid int) error { return signalPID(pid, syscall.SIGKILL) }

// termPID asks pid to stop with SIGTERM, which mcphub serve answers with a
// clean shutdown.
func termPID(pid int) error { return signalPID(pid, syscall.SIGTERM) }

// signalPID sends sig to pid, for the tests of what each signal does.
func signalPID(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }

// killGroup ends the whole process group that pid leads at once.
func killGroup(pid int) error { return syscall.Kill(-pid, syscall.SIGKILL) }

// pidAlive reports whether pid still answers kill 0: it exists (possibly as a
// zombie) and this process may signal it.
func pidAlive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// pidGone reports whether no process has this PID: the process exited and its
// parent reaped it (a zombie still answers kill 0).
func pidGone(pid int) bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }
