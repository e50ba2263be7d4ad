package registry

import (
	"os"
	"path/filepath"
)

// dataHome is %LocalAppData%, where Windows applications keep data that
// belongs to this machine (a database, not settings that roam with the
// user); "" when neither it nor a home directory is known.
func dataHome() string {
	if p := os.Getenv("LocalAppData"); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, "AppData", "Local")
}

// legacyDataDir is an earlier default data directory still in use: none
// here, the default has not moved.
func legacyDataDir() string { return "" }
