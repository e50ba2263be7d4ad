package clientconf

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/mcphub/mcphub/registry"
)

// InstalledExecutable is the absolute path of the running mcphub, to write
// where another program (a client, a service manager) will start it, and
// whether go run or go test built it in a temporary directory
// ($GOTMPDIR/go-build..., either separator), which is gone once it exits.
// os.Executable resolves symlinks on Linux (it reads /proc/self/exe), and
// may elsewhere, while a package manager's symlink (Homebrew's
// /opt/homebrew/bin/mcphub, a Nix profile's) outlives an upgrade and the
// versioned file it points to does not: so the path the user ran, args0
// as lookPath finds it, is taken when it is absolute and the same file.
func InstalledExecutable(executable func() (string, error), lookPath func(string) (string, error), args0 string) (exe string, goRun bool, err error) {
	if exe, err = executable(); err != nil {
		return "", false, err
	}
	if strings.Contains(strings.ReplaceAll(exe, `\`, "/"), "/go-build") {
		return exe, true, nil
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return "", false, err
	}
	if ran, err := lookPath(args0); err == nil && filepath.IsAbs(ran) && ran != exe && registry.SamePath(ran, exe) {
		return filepath.Clean(ran), false, nil
	}
	return exe, false, nil
}

// Hub is the hub a client's entry points at, as a stdio entry runs it:
// the registry and data directory of this mcphub, spelled out because a
// client does not see the shell's environment.
type Hub struct {
	// Config is the path of the hub's registry (--config).
	Config string
	// DataDir is the hub's data directory (--data-dir).
	DataDir string
	// Warn receives warnings about an entry that may not work, such as a
	// stdio entry that runs a binary go run built; nil discards them.
	Warn io.Writer
}

// Command returns the absolute path of the running mcphub and the
// arguments that run `mcphub stdio` against this registry: GUI clients do
// not see the shell's PATH or $MCPHUB_CONFIG, so both are spelled out.
// With profile, the stdio relays to the profile's endpoint (--profile).
func (h Hub) Command(profile string) (string, []string, error) {
	exe, goRun, err := InstalledExecutable(os.Executable, exec.LookPath, os.Args[0])
	if err != nil {
		return "", nil, fmt.Errorf("cannot find the mcphub binary for a stdio entry: %w", err)
	}
	if goRun && h.Warn != nil {
		fmt.Fprintf(h.Warn, "warning: this mcphub runs from go run's temporary build directory, which is gone once it exits; install it (go install ./cmd/mcphub) and run connect with the installed binary, or the client will not find %s\n", exe)
	}
	args := []string{"stdio"}
	cfg, err := filepath.Abs(h.Config)
	if err != nil {
		return "", nil, err
	}
	if def, err := builtinRegistryPath(); err != nil || !registry.SamePath(cfg, def) {
		args = append(args, "--config", cfg)
	}
	data, err := filepath.Abs(h.DataDir)
	if err != nil {
		return "", nil, err
	}
	// A client does not see $MCPHUB_DATA either.
	if os.Getenv("MCPHUB_DATA") != "" || !registry.SamePath(data, registry.DefaultDataDir()) {
		args = append(args, "--data-dir", data)
	}
	if profile != "" {
		args = append(args, "--profile", profile)
	}
	return exe, args, nil
}

// builtinRegistryPath is the registry mcphub uses with neither --config
// nor $MCPHUB_CONFIG, which is what a client that starts mcphub gets.
func builtinRegistryPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "mcphub", "hub.toml"), nil
}

// Entry builds the entry that points client c at the hub: the stdio
// entry when asked or when the client takes no other (relaying to
// profile's endpoint when profile is set), else the HTTP one, at url with
// headers.
func (h Hub) Entry(c Client, stdio bool, url string, headers map[string]string, profile string) (Entry, error) {
	if stdio || c.remote == nil {
		cmd, args, err := h.Command(profile)
		if err != nil {
			return nil, err
		}
		return c.stdio(cmd, args), nil
	}
	if url == "" {
		return nil, errors.New("no hub URL")
	}
	return c.remote(url, headers), nil
}
