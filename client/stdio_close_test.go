package client

import (
	"context"
	"strings"
	"testing"
	"time"
)

// shortGraces shortens the shutdown graces for one test.
func shortGraces(t *testing.T) time.Duration {
	t.Helper()
	oldIn, oldTerm := stdinGrace, termGrace
	stdinGrace, termGrace = 200*time.Millisecond, 200*time.Millisecond
	t.Cleanup(func() { stdinGrace, termGrace = oldIn, oldTerm })
	// Close may take every grace, the readers' drain, and a little more.
	return stdinGrace + termGrace + drainGrace + 3*time.Second
}

// closeWithin runs Close and fails the test if it takes longer than d.
func closeWithin(t *testing.T, c *Conn, d time.Duration) {
	t.Helper()
	closed := make(chan error, 1)
	start := time.Now()
	go func() { closed <- c.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
		t.Logf("Close took %v", time.Since(start))
	case <-time.After(d):
		t.Fatalf("Close did not return within %v", d)
	}
}

// A server that stopped reading its stdin, with a write to it blocked on the
// full pipe, does not hold Close: stdin is closed without waiting for the
// writer, and the server is stopped step by step all the same.
func TestStdioCloseFreesBlockedWrite(t *testing.T) {
	bound := shortGraces(t)
	c, _ := startFake(t, "stubborn", nil)
	pid := c.PID()
	if _, err := callTool(context.Background(), c, "deafen", `{}`); err != nil {
		t.Fatal(err)
	}
	blocked := make(chan error, 1)
	go func() {
		_, err := callTool(context.Background(), c, "echo", `{"pad":"`+strings.Repeat("x", 1<<20)+`"}`)
		blocked <- err
	}()
	s := c.transport().(*stdioTransport)
	waitFor(t, 5*time.Second, "the write to block on the full pipe", func() bool {
		if s.wmu.TryLock() {
			s.wmu.Unlock()
			return false
		}
		return true
	})
	closeWithin(t, c, bound)
	if !processGone(pid) {
		t.Errorf("the server (pid %d) survived Close", pid)
	}
	select {
	case err := <-blocked:
		if err == nil {
			t.Error("the blocked call succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Error("the blocked call did not return after Close")
	}
}

// A hub that stops while a server is still connecting (the connect context
// ends, or Close comes during Start) stops that server whole as well, even
// one that answers nothing and ignores stdin EOF and SIGTERM.
func TestStdioStartCancelledStopsServer(t *testing.T) {
	for _, how := range []string{"context", "close"} {
		t.Run(how, func(t *testing.T) {
			bound := shortGraces(t)
			cfg := fakeStdioConfig(t, "mute")
			pids := make(chan int, 2)
			cfg.OnProcess = func(pid int, started bool) {
				if started {
					pids <- pid
				}
			}
			c := New(cfg, nil)
			t.Cleanup(func() { c.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			started := make(chan error, 1)
			go func() { started <- c.Start(ctx) }()
			var pid int
			select {
			case pid = <-pids:
			case <-time.After(10 * time.Second):
				t.Fatal("the server did not start")
			}
			start := time.Now()
			if how == "context" {
				cancel()
			} else {
				closeWithin(t, c, bound)
			}
			select {
			case err := <-started:
				if err == nil {
					t.Fatal("Start succeeded against a server that never answers")
				}
			case <-time.After(bound):
				t.Fatalf("Start did not return within %v of the stop", bound)
			}
			t.Logf("stopped after %v", time.Since(start))
			if !processGone(pid) {
				t.Errorf("the server (pid %d) outlived Start", pid)
			}
			if _, err := callTool(context.Background(), c, "echo", `{}`); err == nil {
				t.Errorf("a call after the failed Start succeeded")
			}
		})
	}
}
