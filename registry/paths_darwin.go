package registry

import (
	"os"
	"path/filepath"
)

// dataHome is where macOS applications keep their own data:
// ~/Library/Application Support (the same folder os.UserConfigDir names,
// so the registry and the data sit side by side); "" without a home
// directory.
func dataHome() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, "Library", "Application Support")
}

// LegacyDataDir is where mcphub kept its data on macOS before it followed
// the platform's convention: the Linux place, ~/.local/share/mcphub (or
// $XDG_DATA_HOME/mcphub).
func LegacyDataDir() string {
	if d := xdgDataHome(); d != "" {
		return filepath.Join(d, "mcphub")
	}
	return ""
}
