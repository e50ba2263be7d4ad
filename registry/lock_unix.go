//go:build !windows

package registry

// keepReplacedOpen says whether an edit may keep the registry it replaces
// open across the rename, to see what an in-place writer put into it at the
// last moment. Unix renames over an open file.
const keepReplacedOpen = true
