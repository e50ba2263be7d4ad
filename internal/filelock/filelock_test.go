package filelock

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// holdEnv makes the test binary a helper process that locks the file the
// variable names, says "locked" on stdout and waits until it is killed.
const holdEnv = "FILELOCK_TEST_HOLD"

func TestMain(m *testing.M) {
	if path := os.Getenv(holdEnv); path != "" {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err == nil {
			err = TryLock(f)
		}
		if err != nil {
			os.Stdout.WriteString("error: " + err.Error() + "\n")
			os.Exit(2)
		}
		os.Stdout.WriteString("locked\n")
		// Hold the lock until stdin closes or the process is killed.
		bufio.NewReader(os.Stdin).ReadString('\n')
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// openTwice opens one lock file twice, as two processes would.
func openTwice(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.lock")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	return open(), open()
}

func TestTryLockExcludesOtherOpens(t *testing.T) {
	a, b := openTwice(t)
	if err := TryLock(a); err != nil {
		t.Fatal(err)
	}
	if err := TryLock(b); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock of a second open while the first holds the lock = %v, want ErrLocked", err)
	}
	if err := Unlock(a); err != nil {
		t.Fatal(err)
	}
	if err := TryLock(b); err != nil {
		t.Fatalf("TryLock after the holder unlocked: %v", err)
	}
	if err := TryLock(a); !errors.Is(err, ErrLocked) {
		t.Fatalf("the first open took the lock the second holds: %v", err)
	}
	b.Close()
	if err := TryLock(a); err != nil {
		t.Fatalf("closing the holder must drop its lock: %v", err)
	}
}

func TestLockWaitsForRelease(t *testing.T) {
	a, b := openTwice(t)
	if err := TryLock(a); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan error, 1)
	go func() { got <- Lock(ctx, b) }()
	select {
	case err := <-got:
		t.Fatalf("Lock returned %v while another open holds the lock", err)
	default:
	}
	if err := Unlock(a); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("Lock after the holder unlocked: %v", err)
	}
	if err := TryLock(a); !errors.Is(err, ErrLocked) {
		t.Fatalf("Lock returned without holding the lock: TryLock of the other open = %v", err)
	}
}

func TestLockGivesUpWhenContextEnds(t *testing.T) {
	a, b := openTwice(t)
	if err := TryLock(a); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	err := Lock(ctx, b)
	if !errors.Is(err, ErrLocked) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), b.Name()) {
		t.Fatalf("Lock past its deadline = %v; want ErrLocked and DeadlineExceeded, naming %s", err, b.Name())
	}
}

// The lock holds against other processes, and the system drops it when its
// holder dies without unlocking.
func TestLockIsDroppedWhenTheHolderDies(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdEnv+"="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Stopped by its PID however the test ends; after Wait, Kill does
	// nothing, so a reused PID is never signalled.
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("helper process: %q, %v", line, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := TryLock(f); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock while another process holds the lock = %v, want ErrLocked", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatalf("kill %d: %v", cmd.Process.Pid, err)
	}
	cmd.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := Lock(ctx, f); err != nil {
		t.Fatalf("the lock of a killed process was not dropped: %v", err)
	}
}
