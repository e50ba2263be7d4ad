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

// LegacyDataDir is where an earlier mcphub kept its data by default, when
// that was elsewhere: "" here, the default has not moved.
func LegacyDataDir() string { return "" }
