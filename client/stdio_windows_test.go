//go:build windows

package client

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// killProcess stops the process pid (a test's own child or grandchild) at
// once.
func killProcess(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
		p.Release()
	}
}

// processGone reports whether pid has exited.
func processGone(pid int) bool {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return errors.Is(err, windows.ERROR_INVALID_PARAMETER) // no such process
	}
	defer windows.CloseHandle(h)
	ev, err := windows.WaitForSingleObject(h, 0)
	return err == nil && ev == windows.WAIT_OBJECT_0
}

// A server that ignores stdin EOF is stopped by terminating its job once
// stdinGrace has passed.
func TestStdioCloseTerminatesJob(t *testing.T) {
	oldIn := stdinGrace
	stdinGrace = 200 * time.Millisecond
	t.Cleanup(func() { stdinGrace = oldIn })

	c, _ := startFake(t, "stubborn", nil)
	pid := c.PID()
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if !processGone(pid) {
		t.Fatalf("the stubborn server (pid %d) survived Close", pid)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("Close took %v: it should have waited for stdin EOF first", d)
	}
	if _, err := callTool(context.Background(), c, "echo", `{}`); !errors.Is(err, ErrClosed) {
		t.Errorf("a call after Close got %v, want ErrClosed", err)
	}
}

// A bare command name is found as a .cmd shim (as npx is npx.cmd) in the
// PATH the registry gives the server, not in mcphub's own.
func TestStdioRunsCmdShimFromChildPath(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	shim := "@echo off\r\n\"" + exe + "\"\r\n"
	if err := os.WriteFile(filepath.Join(dir, "fakeshim.cmd"), []byte(shim), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fakeStdioConfig(t, "normal")
	cfg.Command, cfg.Args = "fakeshim", nil
	cfg.Env["PATH"] = dir
	c := New(cfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("Start through fakeshim.cmd: %v", err)
	}
	defer c.Close()
	if _, err := callTool(ctx, c, "echo", `{}`); err != nil {
		t.Fatal(err)
	}
}
