//go:build !linux && !darwin

package filelock

import "os"

// Exchange would swap the files at a and b in one atomic step (see the
// Linux version); this system has no such call, so it always fails with
// ErrExchangeUnsupported and the caller falls back to a rename.
func Exchange(a, b string) error {
	return &os.LinkError{Op: "exchange", Old: a, New: b, Err: ErrExchangeUnsupported}
}
