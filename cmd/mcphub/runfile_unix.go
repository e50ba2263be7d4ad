//go:build unix

package main

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on f without waiting; it fails at once
// when another process holds one.
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// unlockFile drops the lock lockFile took.
func unlockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
