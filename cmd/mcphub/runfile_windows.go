//go:build windows

package main

import (
	"os"

	"golang.org/x/sys/windows"
)

// lockOffset is where the locked byte lies: far past the JSON the file
// holds. A Windows lock is mandatory, so a lock over the data would keep
// other commands from reading where the hub listens; a lock past the end of
// the file excludes a second hub just as well.
const lockOffset = 1 << 30

// lockFile takes an exclusive lock on f without waiting; it fails at once
// when another process holds one.
func lockFile(f *os.File) error {
	ol := windows.Overlapped{Offset: lockOffset}
	return windows.LockFileEx(windows.Handle(f.Fd()),
		windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
}

// unlockFile drops the lock lockFile took.
func unlockFile(f *os.File) error {
	ol := windows.Overlapped{Offset: lockOffset}
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}
