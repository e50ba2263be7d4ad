//go:build unix

package filelock

import (
	"errors"
	"os"
	"syscall"
)

// errInterrupted is a lock call cut short by a signal; TryLock retries it.
var errInterrupted = syscall.EINTR

// tryLock takes an exclusive flock on f without waiting. flock locks belong
// to the open file description, so another open of the same file, even in
// this process, is refused.
func tryLock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EAGAIN) {
		return ErrLocked
	}
	return err
}

// unlock drops the flock tryLock took.
func unlock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
