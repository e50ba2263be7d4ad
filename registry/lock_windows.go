//go:build windows

package registry

// keepReplacedOpen says whether an edit may keep the registry it replaces
// open across the rename, to see what an in-place writer put into it at the
// last moment. Windows refuses to rename over a file that is open without
// FILE_SHARE_DELETE, which os.Open does not ask for.
const keepReplacedOpen = false
