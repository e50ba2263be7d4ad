package registry

import (
	"path/filepath"
	"testing"
)

// TestDataDirOnMacOS: macOS keeps the data beside the registry, in
// ~/Library/Application Support/mcphub, whatever XDG says.
func TestDataDirOnMacOS(t *testing.T) {
	t.Setenv("MCPHUB_DATA", "")
	t.Setenv("MCPHUB_CONFIG", "")
	t.Setenv("HOME", "/Users/u")
	t.Setenv("XDG_DATA_HOME", "/data")
	want := filepath.Join("/Users/u", "Library", "Application Support", "mcphub")
	if got := DefaultDataDir(); got != want {
		t.Errorf("DefaultDataDir = %q, want %q", got, want)
	}
	if got := filepath.Dir(DefaultPath()); got != want {
		t.Errorf("the registry's folder = %q, want %q", got, want)
	}
}

// TestLegacyDataDirOnMacOS: the earlier default, ~/.local/share/mcphub, is
// named so that serve can go on using a store it finds there.
func TestLegacyDataDirOnMacOS(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "/Users/u")
	if got, want := LegacyDataDir(), filepath.Join("/Users/u", ".local", "share", "mcphub"); got != want {
		t.Errorf("LegacyDataDir = %q, want %q", got, want)
	}
}
