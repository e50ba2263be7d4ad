//go:build !windows

package main

import (
	"io"
	"os"
	"syscall"
)

// cliSignals are the signals that interrupt a tools, resources or prompts
// command as Ctrl-C does, cancelling its request on the hub: a terminal
// closing (SIGHUP) and a polite kill (SIGTERM) as well.
var cliSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// enableVirtualTerminal reports whether the terminal w acts on the escape
// sequences of the progress line: every Unix terminal does.
func enableVirtualTerminal(io.Writer) bool { return true }
