package main

import "os/exec"

// ownGroup does nothing on Windows: there are no process groups to signal.
func ownGroup(cmd *exec.Cmd) {}

// stop kills the process and waits for it. Windows has no SIGTERM that a
// console process can catch, so the process gets no chance to shut down
// cleanly; a killed hub's stdio upstreams see their stdin close and exit on
// their own.
func (p *proc) stop() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
}
