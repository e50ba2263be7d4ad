//go:build windows

package logfile

import (
	"os"
	"syscall"
)

// openLogForRead opens a file of the log for reading, sharing it for
// reading, writing and deleting: os.Open does not share deletion, and
// while mcphub logs held hub.log open that way, the hub's rotation could
// not rename it. Shared, the rename goes through and the reader keeps the
// renamed file.
func openLogForRead(path string) (*os.File, error) {
	name, err := syscall.UTF16PtrFromString(path)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	h, err := syscall.CreateFile(name, syscall.GENERIC_READ,
		syscall.FILE_SHARE_READ|syscall.FILE_SHARE_WRITE|syscall.FILE_SHARE_DELETE,
		nil, syscall.OPEN_EXISTING, syscall.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(h), path), nil
}
