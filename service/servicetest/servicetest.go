// Package servicetest is test support, imported only by _test.go files: a
// fake service manager standing in for systemd, launchd or the Windows
// service control manager, and the installing shell's environment with
// the secrets no unit, output or error may hold. The service room's own
// tests and the CLI's `mcphub service` tests share it, so both test
// against the same fake.
//
// It imports only github.com/kardianos/service and the standard library.
// It never imports the service room itself, because that room's in-package
// tests import it and the import would be a cycle; the fake meets
// service.Manager by its method set.
package servicetest

import (
	"slices"

	kservice "github.com/kardianos/service"
)

// Manager stands for systemd, launchd or the Windows service control
// manager: it keeps whether the service is installed and running, and
// records the calls it gets so that a test can check their order.
type Manager struct {
	Installed, Running bool
	// Calls are the names of the calls made, in order: "install",
	// "uninstall", "start", "stop".
	Calls []string
	// StatusErr, when set, is what Status returns.
	StatusErr error
	// InstallErr, when set, is what Install returns; the service stays
	// uninstalled.
	InstallErr error
	// StartErr, when set, is what Start returns; the service stays
	// stopped.
	StartErr error
}

// Install records the call and installs the service unless InstallErr is
// set.
func (f *Manager) Install() error {
	f.Calls = append(f.Calls, "install")
	if f.InstallErr != nil {
		return f.InstallErr
	}
	f.Installed = true
	return nil
}

// Uninstall records the call and removes the service, stopping it.
func (f *Manager) Uninstall() error {
	f.Calls = append(f.Calls, "uninstall")
	f.Installed, f.Running = false, false
	return nil
}

// Start records the call and starts the service unless StartErr is set.
func (f *Manager) Start() error {
	f.Calls = append(f.Calls, "start")
	if f.StartErr != nil {
		return f.StartErr
	}
	f.Running = true
	return nil
}

// Stop records the call and stops the service.
func (f *Manager) Stop() error {
	f.Calls = append(f.Calls, "stop")
	f.Running = false
	return nil
}

// Status answers as the real managers do: StatusErr when set, then
// kservice.ErrNotInstalled for a service that is not installed, then
// running or stopped.
func (f *Manager) Status() (kservice.Status, error) {
	switch {
	case f.StatusErr != nil:
		return kservice.StatusUnknown, f.StatusErr
	case !f.Installed:
		return kservice.StatusUnknown, kservice.ErrNotInstalled
	case f.Running:
		return kservice.StatusRunning, nil
	}
	return kservice.StatusStopped, nil
}

// environ is the installing shell's environment in the tests: what the
// unit may get, and secrets it must not.
var environ = []string{
	"PATH=/home/u/.nvm/versions/node/v22/bin:/usr/bin",
	"HOME=/home/u",
	"HTTPS_PROXY=http://proxy.corp:3128",
	"no_proxy=localhost,127.0.0.1",
	"NODE_EXTRA_CA_CERTS=/etc/corp-ca.pem",
	"MCPHUB_TOKEN=svc-test-hub-token",
	"GITHUB_TOKEN=svc-test-github-token",
	"AWS_SECRET_ACCESS_KEY=svc-test-aws-secret",
	"HTTP_PROXY=http://me:svc-test-proxy-password@proxy.corp:3128",
	"ALL_PROXY=http://svc-test-proxy-token@proxy.corp:8080",
	"XDG_RUNTIME_DIR=/run/user/1000",
	"EMPTY_PROXY=",
}

// Environ returns a fresh copy of the installing shell's environment on
// goos (Windows spells its search path Path, with Windows folders): what
// the unit may get, and the Secrets it must not.
func Environ(goos string) []string {
	env := slices.Clone(environ)
	if goos == "windows" {
		env[0] = `Path=C:\Users\u\AppData\Roaming\npm;C:\Windows\system32`
	}
	return env
}

// Secrets are the values of Environ, and the Password, that no unit,
// output or error may hold.
var Secrets = []string{"svc-test-hub-token", "svc-test-github-token", "svc-test-aws-secret", "svc-test-proxy-password",
	"svc-test-proxy-token", Password}

// Password is the Windows password the tests' fake terminal gives.
const Password = "svc-test-windows-password"

// Platform is what kardianos/service calls the service manager of goos, as
// service.Host.Platform holds it.
func Platform(goos string) string {
	return map[string]string{"linux": "linux-systemd", "darwin": "darwin-launchd", "windows": "windows-service"}[goos]
}
