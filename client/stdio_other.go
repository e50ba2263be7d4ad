//go:build !linux

package client

import "os/exec"

// startProcess starts cmd, prepared by procGroup.prepare.
//
// A hub killed outright (SIGKILL) cannot stop its servers. On Windows the
// job object does it (see procGroup): the system kills the job when the
// hub's handle to it closes. macOS and the BSDs have no way to tie a child
// to its parent's life: a server that ignores the end of its stdin, and
// what any server spawned, live on until the next hub starts and stops them
// through the process record (ReapLeftovers).
func startProcess(cmd *exec.Cmd) error { return cmd.Start() }
