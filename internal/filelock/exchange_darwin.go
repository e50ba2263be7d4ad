//go:build darwin

package filelock

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Exchange swaps the files at a and b in one atomic step; see the Linux
// version for the contract. On macOS it is renamex_np(RENAME_SWAP), which
// APFS and HFS+ support.
func Exchange(a, b string) error {
	err := unix.RenamexNp(a, b, unix.RENAME_SWAP)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.ENOSYS):
		return &os.LinkError{Op: "exchange", Old: a, New: b, Err: ErrExchangeUnsupported}
	}
	return &os.LinkError{Op: "exchange", Old: a, New: b, Err: err}
}
