//go:build unix

package stdioface

import (
	"os/exec"
	"syscall"
)

// detach makes a background hub its own session leader: it has no
// controlling terminal, and a Ctrl-C or hangup meant for the client that
// started it does not reach it.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}
