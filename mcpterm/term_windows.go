//go:build windows

package mcpterm

import (
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

// signals are the signals that interrupt a tools, resources or prompts
// command as Ctrl-C does, cancelling its request on the hub: a console
// closing or a shutdown (SIGTERM) as well.
var signals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// EnableVirtualTerminal turns on the console's processing of escape
// sequences for w, which the progress line rewrites itself with; a legacy
// console would show them as they are. It reports whether the console
// processes them, so that a caller shows no progress line where it would
// be garbage.
func EnableVirtualTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	h := windows.Handle(f.Fd())
	var mode uint32
	if err := windows.GetConsoleMode(h, &mode); err != nil {
		return false
	}
	if mode&windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING != 0 {
		return true
	}
	return windows.SetConsoleMode(h, mode|windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING) == nil
}
