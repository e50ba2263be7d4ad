//go:build !windows

package mcpterm

import (
	"io"
	"os"
	"syscall"
)

// signals are the signals that interrupt a tools, resources or prompts
// command as Ctrl-C does, cancelling its request on the hub: a terminal
// closing (SIGHUP) and a polite kill (SIGTERM) as well.
var signals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// EnableVirtualTerminal reports whether the terminal w acts on the escape
// sequences of the progress line: every Unix terminal does, so that a
// caller shows the line on any terminal.
func EnableVirtualTerminal(io.Writer) bool { return true }
