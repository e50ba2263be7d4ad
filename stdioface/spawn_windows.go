//go:build windows

package stdioface

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/windows"
)

// detach starts a background hub in its own process group and without a
// console, so that closing the client's console or a Ctrl-C meant for it
// does not stop the hub.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.DETACHED_PROCESS}
}
