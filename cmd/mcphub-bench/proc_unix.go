//go:build unix

package main

import (
	"os/exec"
	"syscall"
	"time"
)

// ownGroup starts cmd in a process group of its own, so that stopping it
// also stops what it started (a hub's stdio upstreams).
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// stop ends the process and its group: SIGTERM, then SIGKILL if it has not
// exited within five seconds.
func (p *proc) stop() {
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}
