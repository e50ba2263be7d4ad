//go:build unix

package client

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"
)

// killProcess stops the process pid (a test's own child or grandchild) at
// once.
func killProcess(pid int) { syscall.Kill(pid, syscall.SIGKILL) }

func TestStdioCloseEscalatesToSIGKILL(t *testing.T) {
	oldIn, oldTerm := stdinGrace, termGrace
	stdinGrace, termGrace = 200*time.Millisecond, 200*time.Millisecond
	t.Cleanup(func() { stdinGrace, termGrace = oldIn, oldTerm })

	c, _ := startFake(t, "stubborn", nil)
	pid := c.PID()
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the stubborn server (pid %d) survived Close: %v", pid, err)
	}
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Errorf("Close took %v: it should have waited for stdin EOF and SIGTERM first", d)
	} else if max := stdinGrace + termGrace + drainGrace + 2*time.Second; d > max {
		t.Errorf("Close took %v, over the graces and a little (%v)", d, max)
	}
	if err := c.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	if _, err := callTool(context.Background(), c, "echo", `{}`); !errors.Is(err, ErrClosed) {
		t.Errorf("a call after Close got %v, want ErrClosed", err)
	}
}
