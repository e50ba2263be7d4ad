package client

import (
	"errors"

	"golang.org/x/sys/unix"
)

// processGone reports whether pid has exited: no such process, or a zombie
// nobody has reaped yet.
func processGone(pid int) bool {
	if errors.Is(unix.Kill(pid, 0), unix.ESRCH) {
		return true
	}
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	const zombie = 5 // SZOMB in <sys/proc.h>
	return err == nil && k.Proc.P_stat == zombie
}
