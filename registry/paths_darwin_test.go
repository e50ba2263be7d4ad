package registry

import (
	"os"
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

// TestDataDirOnMacOSKeepsAnEarlierOne: a Mac where an earlier mcphub kept
// its data in ~/.local/share/mcphub goes on using it, until the new place
// exists.
func TestDataDirOnMacOSKeepsAnEarlierOne(t *testing.T) {
	home := t.TempDir()
	t.Setenv("MCPHUB_DATA", "")
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", home)
	old := filepath.Join(home, ".local", "share", "mcphub")
	if err := os.MkdirAll(old, 0o700); err != nil {
		t.Fatal(err)
	}
	if got := DefaultDataDir(); got != old {
		t.Errorf("DefaultDataDir = %q, want the earlier %q", got, old)
	}
	now := filepath.Join(home, "Library", "Application Support", "mcphub")
	if err := os.MkdirAll(now, 0o700); err != nil {
		t.Fatal(err)
	}
	if got := DefaultDataDir(); got != now {
		t.Errorf("DefaultDataDir = %q, want %q once it exists", got, now)
	}
}
