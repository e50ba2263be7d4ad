// Package filelock has the system calls that let processes share a file
// they edit: an exclusive lock on an open file that every process of the
// machine respects (flock(2) on Unix, LockFileEx on Windows), and Exchange,
// which swaps two files atomically where the system can. The
// locks are advisory between cooperating programs (on Windows the locked
// range lies far past any data, so readers are never blocked), belong to
// the open file rather than to the process, so two opens of one path in the
// same process exclude each other, and the system drops a lock when its
// file is closed or its process dies, even by SIGKILL, so a lock is never
// left stale.
package filelock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"
)

// ErrLocked reports that another open file, in this process or another,
// holds the lock.
var ErrLocked = errors.New("filelock: the file is locked by another process")

// Polling bounds for Lock: it retries at once after the first failure and
// then backs off to at most maxPoll between attempts, with jitter so that
// many waiters do not poll in step.
const (
	firstPoll = time.Millisecond
	maxPoll   = 10 * time.Millisecond
)

// TryLock takes the exclusive lock on f without waiting. It returns
// ErrLocked when another open file holds it, and another error when f cannot
// be locked at all.
func TryLock(f *os.File) error {
	for {
		err := tryLock(f)
		if errors.Is(err, errInterrupted) {
			continue
		}
		if err != nil && !errors.Is(err, ErrLocked) {
			return fmt.Errorf("filelock: lock %s: %w", f.Name(), err)
		}
		return err
	}
}

// Lock takes the exclusive lock on f, waiting while another open file holds
// it, until ctx is done; then it fails with an error that wraps ErrLocked
// and ctx's cause and names the file. Waiting polls (a blocking lock call
// could not be abandoned when ctx ends), at most every few milliseconds.
func Lock(ctx context.Context, f *os.File) error {
	wait := firstPoll
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		err := TryLock(f)
		if !errors.Is(err, ErrLocked) {
			return err
		}
		d := wait/2 + rand.N(wait/2+1)
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("filelock: waiting for %s: %w (%w)", f.Name(), ErrLocked, context.Cause(ctx))
		case <-timer.C:
		}
		wait = min(2*wait, maxPoll)
	}
}

// Unlock drops the lock f holds. Closing f drops it too.
func Unlock(f *os.File) error {
	if err := unlock(f); err != nil {
		return fmt.Errorf("filelock: unlock %s: %w", f.Name(), err)
	}
	return nil
}
