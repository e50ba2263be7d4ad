package registry

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// defaultRegistry is what EnsureExists writes on a machine that has no
// hub.toml yet.
//
//go:embed default.toml
var defaultRegistry []byte

// DefaultRegistry returns the text EnsureExists writes for a new hub.toml.
func DefaultRegistry() []byte { return append([]byte(nil), defaultRegistry...) }

// DefaultPath is the registry mcphub uses when no path is given:
// $MCPHUB_CONFIG if it is set, else hub.toml in the mcphub folder of the
// user's config directory: ~/.config/mcphub/hub.toml (or under
// $XDG_CONFIG_HOME) on Linux, ~/Library/Application Support/mcphub/hub.toml
// on macOS, %AppData%\mcphub\hub.toml on Windows.
func DefaultPath() string {
	if p := os.Getenv("MCPHUB_CONFIG"); p != "" {
		return p
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		home, herr := os.UserHomeDir()
		if herr != nil {
			return "hub.toml"
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "mcphub", "hub.toml")
}

// DefaultDataDir is where mcphub keeps its database and the record of its
// running hub: $MCPHUB_DATA if it is set, else the OS's place for an
// application's own data (see dataHome): ~/.local/share/mcphub (or
// $XDG_DATA_HOME/mcphub) on Linux, ~/Library/Application Support/mcphub on
// macOS, %LocalAppData%\mcphub on Windows.
func DefaultDataDir() string {
	if p := os.Getenv("MCPHUB_DATA"); p != "" {
		return p
	}
	if dir := dataHome(); dir != "" {
		return filepath.Join(dir, "mcphub")
	}
	return filepath.Join(os.TempDir(), "mcphub")
}

// EnsureExists creates the registry at path from the built-in default when
// there is no file there yet: its directory with mode 0700 and the file with
// mode 0600, since a registry may hold tokens. It never replaces an existing
// file, even one created concurrently.
func EnsureExists(path string) (created bool, err error) {
	if _, err := os.Stat(path); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("registry: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, fmt.Errorf("registry: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("registry: %w", err)
	}
	_, err = f.Write(defaultRegistry)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return false, fmt.Errorf("registry: write %s: %w", path, err)
	}
	syncDir(filepath.Dir(path))
	return true, nil
}

// xdgDataHome is the XDG data directory: $XDG_DATA_HOME when it is an
// absolute path, else ~/.local/share; "" without a home directory. It is
// the data home on Linux and the BSDs, and where mcphub kept its data on
// macOS before it followed that platform's convention.
func xdgDataHome() string {
	if p := os.Getenv("XDG_DATA_HOME"); p != "" && filepath.IsAbs(p) {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".local", "share")
}
