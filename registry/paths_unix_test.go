//go:build !darwin && !windows

package registry

import (
	"path/filepath"
	"testing"
)

// TestDataDirFollowsXDG: on Linux and the BSDs the data directory is
// $XDG_DATA_HOME/mcphub, else ~/.local/share/mcphub.
func TestDataDirFollowsXDG(t *testing.T) {
	t.Setenv("MCPHUB_DATA", "")
	t.Setenv("HOME", "/home/u")
	t.Setenv("XDG_DATA_HOME", "/data")
	if got := DefaultDataDir(); got != filepath.Join("/data", "mcphub") {
		t.Errorf("DefaultDataDir with XDG_DATA_HOME = %q", got)
	}
	t.Setenv("XDG_DATA_HOME", "relative")
	if got := DefaultDataDir(); got != filepath.Join("/home/u", ".local", "share", "mcphub") {
		t.Errorf("DefaultDataDir with a relative XDG_DATA_HOME = %q", got)
	}
	t.Setenv("XDG_DATA_HOME", "")
	if got := DefaultDataDir(); got != filepath.Join("/home/u", ".local", "share", "mcphub") {
		t.Errorf("DefaultDataDir = %q", got)
	}
}
