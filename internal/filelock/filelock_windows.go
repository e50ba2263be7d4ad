//go:build windows

package filelock

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// errInterrupted never happens on Windows: a lock call is not cut short by
// a signal.
var errInterrupted = errors.New("filelock: interrupted")

// lockOffset is where the locked byte lies: far past any data a lock file
// holds. A Windows lock is mandatory, so a lock over the data would keep
// other programs from reading it (serve.lock records where the hub
// listens); a lock past the end of the file excludes other lockers just as
// well.
const lockOffset = 1 << 30

// tryLock takes an exclusive lock on f's byte at lockOffset without
// waiting. Windows locks belong to the handle, so another open of the same
// file, even in this process, is refused.
func tryLock(f *os.File) error {
	ol := windows.Overlapped{Offset: lockOffset}
	err := windows.LockFileEx(windows.Handle(f.Fd()),
		windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) || errors.Is(err, windows.ERROR_IO_PENDING) {
		return ErrLocked
	}
	return err
}

// unlock drops the lock tryLock took.
func unlock(f *os.File) error {
	ol := windows.Overlapped{Offset: lockOffset}
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}
