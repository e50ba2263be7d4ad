//go:build !darwin && !windows

package registry

import (
	"os"
	"path/filepath"
)

// dataHome is the XDG data directory: $XDG_DATA_HOME when it is an
// absolute path, else ~/.local/share; "" without a home directory.
func dataHome() string {
	if p := os.Getenv("XDG_DATA_HOME"); p != "" && filepath.IsAbs(p) {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".local", "share")
}

// LegacyDataDir is where an earlier mcphub kept its data by default, when
// that was elsewhere: "" here, the default has not moved.
func LegacyDataDir() string { return "" }
