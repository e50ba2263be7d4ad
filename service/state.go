package service

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	kservice "github.com/kardianos/service"
)

// State is what mcphub service status reports, and what the other service
// commands report with --json: its fields are the JSON scripts read.
type State struct {
	Installed bool `json:"installed"`
	// State is running, restarting (Linux: it failed and systemd starts
	// it again), stopped, failed (Linux: systemd gave up), not installed
	// or unavailable.
	State    string `json:"state"`
	Platform string `json:"platform"`
	// UnitFile is the systemd unit or launchd plist; on Windows, the
	// service's registry key.
	UnitFile string `json:"unit_file"`
	// Error says why the service manager cannot be used here, with the
	// fix; State is then "unavailable".
	Error string `json:"error,omitempty"`
}

// active reports whether the service manager runs the service, or is about
// to run it again.
func (st State) active() bool { return st.State == "running" || st.State == "restarting" }

// errNoSystemdUser starts the sentence that says systemd user services
// cannot be used here.
var errNoSystemdUser = errors.New("systemd user services are not available here")

// ErrLogonFailed is Windows's ERROR_SERVICE_LOGON_FAILED: the service
// manager could not log on as the service's account. Errors that wrap it
// are explained with the two causes and their fixes.
const ErrLogonFailed = syscall.Errno(1069)

// Ready checks that this OS has a service manager mcphub can use, so that
// every command fails with the fix before it touches anything.
func (h Host) Ready() error {
	switch h.GOOS {
	case "linux":
		if h.Platform != "linux-systemd" {
			return fmt.Errorf("%w (systemd is not this system's service manager): run mcphub serve from your shell, or start it from your init system", errNoSystemdUser)
		}
		if err := h.Probe(); err != nil {
			return explain(h.GOOS, "reach", err)
		}
	case "darwin", "windows":
	default:
		return fmt.Errorf("mcphub service supports Linux (systemd), macOS (launchd) and Windows, not %s: run mcphub serve from your init system", h.GOOS)
	}
	return nil
}

// explain turns what the service manager said into a sentence with the
// fix, for the action (install, start, ...) that failed.
func explain(goos, action string, err error) error {
	switch {
	case errors.Is(err, ErrNoUserManager):
		return fmt.Errorf("%w (no user session bus): run mcphub serve from your shell, or enable lingering with loginctl enable-linger $USER and log in again", errNoSystemdUser)
	case goos == "windows" && (errors.Is(err, fs.ErrPermission) || strings.Contains(err.Error(), "Access is denied")):
		return fmt.Errorf("cannot %s the mcphub service: Windows lets only administrators do that; open a terminal with Run as administrator and run the command again: %w", action, err)
	case goos == "windows" && (errors.Is(err, ErrLogonFailed) || strings.Contains(err.Error(), "logon failure")):
		return fmt.Errorf("cannot %s the mcphub service: Windows could not log on as your account: either the password was wrong (run mcphub service install --force and type it again), or the account lacks the right to log on as a service (grant it in secpol.msc, Local Policies, User Rights Assignment, Log on as a service, then mcphub service start): %w", action, err)
	case goos == "linux":
		return fmt.Errorf("cannot %s the mcphub service (see systemctl --user status %s.service): %w", action, Name, err)
	}
	return fmt.Errorf("cannot %s the mcphub service: %w", action, err)
}

// UnitFile is where the service manager keeps the service's definition:
// the systemd unit, the launchd plist or, on Windows, the registry key.
// Status shows it so that the user can read what runs.
func (h Host) UnitFile() (string, error) {
	if h.GOOS == "windows" {
		return `HKLM\SYSTEM\CurrentControlSet\Services\` + Name, nil
	}
	home, err := h.HomeDir()
	if err != nil {
		return "", fmt.Errorf("home directory: %w", err)
	}
	if h.GOOS == "darwin" {
		return filepath.Join(home, "Library", "LaunchAgents", Name+".plist"), nil
	}
	return filepath.Join(home, ".config", "systemd", "user", Name+".service"), nil
}

// state asks the service manager about the service. A unit file the
// manager does not know (written, never loaded) counts as installed.
func (h Host) state(m Manager) (State, error) {
	unit, err := h.UnitFile()
	if err != nil {
		return State{}, err
	}
	st := State{Platform: h.Platform, UnitFile: unit}
	s, err := m.Status()
	switch {
	case errors.Is(err, kservice.ErrNotInstalled):
		st.State = "not installed"
		if h.GOOS != "windows" && regularFile(unit) {
			st.Installed, st.State = true, "stopped"
		}
		return st, nil
	case err != nil && h.GOOS == "linux" && err.Error() == "service in failed state":
		// kardianos/service's word for systemd's failed: stopped after
		// failing (Restart= gave up, or the unit was stopped while failing).
		st.Installed, st.State = true, "failed"
		return st, nil
	case err != nil:
		return st, explain(h.GOOS, "ask about", err)
	}
	st.Installed = true
	st.State = "stopped"
	if s == kservice.StatusRunning {
		st.State = "running"
		if h.GOOS == "linux" {
			// kardianos/service's running includes systemd's activating,
			// which a unit that keeps failing spends its time in.
			if active, sub, err := h.UnitState(); err == nil && active == "activating" && strings.HasPrefix(sub, "auto-restart") {
				st.State = "restarting"
			}
		}
	}
	return st, nil
}

// control opens the installed service and reads its state.
func (h Host) control() (Manager, State, error) {
	if err := h.Ready(); err != nil {
		return nil, State{}, err
	}
	m, err := h.Open(controlConfig())
	if err != nil {
		return nil, State{}, fmt.Errorf("service manager: %w", err)
	}
	st, err := h.state(m)
	return m, st, err
}

// Status reports whether the service is installed and running. When the
// service manager cannot be asked, the error says why with the fix, and the
// state is "unavailable" with that error in it, so that a script reading
// --json gets an object in every case.
func (h Host) Status() (State, error) {
	_, st, err := h.control()
	if err != nil {
		unit, _ := h.UnitFile()
		return State{State: "unavailable", Platform: h.Platform, UnitFile: unit, Error: err.Error()}, err
	}
	return st, nil
}

// Start starts the installed service unless it runs already, and reports
// its state after.
func (h Host) Start() (State, error) {
	m, st, err := h.control()
	if err != nil {
		return st, err
	}
	if !st.Installed {
		return st, errors.New("the mcphub service is not installed: install it with mcphub service install")
	}
	if st.State != "running" {
		if err := m.Start(); err != nil {
			return st, explain(h.GOOS, "start", err)
		}
		return h.state(m)
	}
	return st, nil
}

// Stop stops the service when it runs (or is about to run again), and
// reports its state after. The service manager starts it again at the next
// login or boot.
func (h Host) Stop() (State, error) {
	m, st, err := h.control()
	if err != nil {
		return st, err
	}
	if !st.Installed {
		return st, errors.New("the mcphub service is not installed")
	}
	if st.active() {
		if err := m.Stop(); err != nil {
			return st, explain(h.GOOS, "stop", err)
		}
		return h.state(m)
	}
	return st, nil
}

// Uninstall stops the service and removes it, and reports its state after;
// removed is false when there was none to remove.
func (h Host) Uninstall() (st State, removed bool, err error) {
	m, st, err := h.control()
	if err != nil || !st.Installed {
		return st, false, err
	}
	if err := h.remove(m, st); err != nil {
		return st, false, err
	}
	st, err = h.state(m)
	return st, err == nil, err
}

// remove stops the service and removes it. A unit file the manager never
// loaded is removed by hand.
func (h Host) remove(m Manager, st State) error {
	if st.active() {
		if err := m.Stop(); err != nil {
			return explain(h.GOOS, "stop", err)
		}
	}
	err := m.Uninstall()
	if err == nil {
		return nil
	}
	if h.GOOS != "windows" && regularFile(st.UnitFile) {
		if rmErr := os.Remove(st.UnitFile); rmErr != nil {
			return explain(h.GOOS, "uninstall", errors.Join(err, rmErr))
		}
		return nil
	}
	return explain(h.GOOS, "uninstall", err)
}
