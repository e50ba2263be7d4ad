package filelock

import "errors"

// ErrExchangeUnsupported reports that the system, or the filesystem that
// holds the files, cannot exchange two files atomically.
var ErrExchangeUnsupported = errors.New("filelock: atomic exchange is not supported here")
