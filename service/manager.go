package service

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"runtime"
	"strings"

	kservice "github.com/kardianos/service"
)

// Name names the unit, the launchd agent and the Windows service.
const Name = "mcphub"

// Manager is what mcphub asks of the OS's service manager for the one
// service it installs. kardianos/service implements it; tests give a fake
// through Host.Open.
type Manager interface {
	Install() error
	Uninstall() error
	Start() error
	Stop() error
	Status() (kservice.Status, error)
}

// Host is this machine as the service commands see it: its OS, its service
// manager and the user's account. NewHost returns the real one; tests fill
// one in with fakes, which is why every part is a field.
type Host struct {
	GOOS      string                                      // runtime.GOOS
	Platform  string                                      // kservice.Platform(): linux-systemd, darwin-launchd, windows-service, ...
	Environ   func() []string                             // os.Environ: the installing shell's environment
	HomeDir   func() (string, error)                      // the home directory the service manager uses
	Account   func() (string, error)                      // the current user's account name (DOMAIN\user on Windows)
	Probe     func() error                                // nil when the user's service manager answers
	UnitState func() (active, sub string, err error)      // systemd's ActiveState and SubState of the unit (Linux)
	Open      func(cfg *kservice.Config) (Manager, error) // the service of cfg
}

// NewHost returns this machine: the OS mcphub runs on, its service manager
// as kardianos/service finds it, and the current user.
func NewHost() Host {
	return Host{
		GOOS:     runtime.GOOS,
		Platform: kservice.Platform(),
		Environ:  os.Environ,
		HomeDir:  homeDir,
		Account: func() (string, error) {
			u, err := user.Current()
			if err != nil {
				return "", err
			}
			return u.Username, nil
		},
		Probe:     probeManager,
		UnitState: systemdUnitState,
		Open: func(cfg *kservice.Config) (Manager, error) {
			return kservice.New(noProgram{}, cfg)
		},
	}
}

// noProgram is the kservice.Interface of the commands that only control the
// service: they never run it.
type noProgram struct{}

func (noProgram) Start(kservice.Service) error { return nil }
func (noProgram) Stop(kservice.Service) error  { return nil }

// homeDir is the home directory kardianos/service puts a user unit under:
// $HOME on Linux, the account's on macOS.
func homeDir() (string, error) {
	if runtime.GOOS == "darwin" {
		if u, err := user.Current(); err == nil && u.HomeDir != "" {
			return u.HomeDir, nil
		}
	}
	return os.UserHomeDir()
}

// ErrNoUserManager means the user's service manager cannot be reached from
// here: on Linux, no systemd user instance answers on a session bus. A
// Host.Probe returns it wrapped.
var ErrNoUserManager = errors.New("the user's service manager does not answer")

// probeManager checks, on Linux, that systemctl --user reaches a systemd
// user instance: without a session bus (su, ssh without a login session,
// containers) every systemctl --user command fails, and kardianos/service
// would write the unit and then fail to enable it.
func probeManager() error {
	if runtime.GOOS != "linux" {
		return nil
	}
	cmd := exec.Command("systemctl", "--user", "show", "--property=Version")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exitErr):
		line, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
		return fmt.Errorf("%w: systemctl --user: %s", ErrNoUserManager, line)
	default:
		return fmt.Errorf("systemctl --user: %w", err)
	}
}

// systemdUnitState asks systemd for the unit's ActiveState and SubState:
// kardianos/service reports a unit that fails and waits to be restarted
// (activating, auto-restart) as running.
func systemdUnitState() (active, sub string, err error) {
	out, err := exec.Command("systemctl", "--user", "show", "-p", "ActiveState,SubState", Name+".service").Output()
	if err != nil {
		return "", "", fmt.Errorf("systemctl --user show: %w", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
		switch k {
		case "ActiveState":
			active = v
		case "SubState":
			sub = v
		}
	}
	return active, sub, nil
}

// controlConfig is the kservice.Config of the commands that only look at
// or control the installed service.
func controlConfig() *kservice.Config {
	return &kservice.Config{Name: Name, Option: kservice.KeyValue{"UserService": true}}
}

// regularFile reports whether path is a regular file.
func regularFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}
