//go:build linux

package filelock

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Exchange swaps the files at a and b in one atomic step: afterwards a
// names the file b named and b the file a named, and no moment exists at
// which either name is missing or names something else. Both must exist, in
// the same filesystem. It is renameat2(RENAME_EXCHANGE) on Linux (3.15 and
// later, on filesystems that support it: ext4, xfs, btrfs, tmpfs and most
// others) and renamex_np(RENAME_SWAP) on macOS; elsewhere it fails with
// ErrExchangeUnsupported, and so it does where the kernel or filesystem
// lacks support. A missing file fails with an error that matches
// fs.ErrNotExist.
//
// An edit that writes its result to a temporary file and exchanges it with
// the original sees afterwards, under the temporary name, exactly what it
// replaced, including a save another program made a moment before.
func Exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP):
		return &os.LinkError{Op: "exchange", Old: a, New: b, Err: ErrExchangeUnsupported}
	}
	return &os.LinkError{Op: "exchange", Old: a, New: b, Err: err}
}
