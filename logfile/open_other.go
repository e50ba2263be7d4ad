//go:build !windows

package logfile

import "os"

// openLogForRead opens a file of the log for reading. On Unix an open file
// never stands in the way of renaming or removing it.
func openLogForRead(path string) (*os.File, error) {
	return os.Open(path)
}
