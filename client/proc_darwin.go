package client

import (
	"errors"
	"fmt"
	"io/fs"

	"golang.org/x/sys/unix"
)

// readLeader reads a process's group and start time with the kern.proc.pid
// sysctl. The start time is in microseconds since the epoch. A process that
// does not exist gives an error matching fs.ErrNotExist.
func readLeader(pid int) (procStat, error) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		// For a PID no process has, the sysctl answers with nothing, which
		// SysctlKinfoProc reports as EIO; kill(pid, 0) tells that case
		// apart from a real failure.
		if errors.Is(err, unix.EIO) && errors.Is(unix.Kill(pid, 0), unix.ESRCH) {
			return procStat{}, fmt.Errorf("process %d: %w", pid, fs.ErrNotExist)
		}
		return procStat{}, fmt.Errorf("sysctl kern.proc.pid %d: %w", pid, err)
	}
	tv := k.Proc.P_starttime
	return procStat{
		pgrp:  int(k.Eproc.Pgid),
		start: uint64(tv.Sec)*1_000_000 + uint64(tv.Usec),
	}, nil
}
