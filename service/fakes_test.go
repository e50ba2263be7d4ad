package service

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	kservice "github.com/kardianos/service"
)

// fakeManager stands for systemd, launchd or the Windows service control
// manager: it records the calls it gets.
type fakeManager struct {
	installed, running bool
	calls              []string
	statusErr          error // returned by Status when set
	installErr         error // returned by Install when set
	startErr           error // returned by Start when set
}

func (f *fakeManager) Install() error {
	f.calls = append(f.calls, "install")
	if f.installErr != nil {
		return f.installErr
	}
	f.installed = true
	return nil
}

func (f *fakeManager) Uninstall() error {
	f.calls = append(f.calls, "uninstall")
	f.installed, f.running = false, false
	return nil
}

func (f *fakeManager) Start() error {
	f.calls = append(f.calls, "start")
	if f.startErr != nil {
		return f.startErr
	}
	f.running = true
	return nil
}

func (f *fakeManager) Stop() error {
	f.calls = append(f.calls, "stop")
	f.running = false
	return nil
}

func (f *fakeManager) Status() (kservice.Status, error) {
	switch {
	case f.statusErr != nil:
		return kservice.StatusUnknown, f.statusErr
	case !f.installed:
		return kservice.StatusUnknown, kservice.ErrNotInstalled
	case f.running:
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

// secrets are the values of environ no unit or error may hold.
var secrets = []string{"svc-test-hub-token", "svc-test-github-token", "svc-test-aws-secret", "svc-test-proxy-password",
	"svc-test-proxy-token", testPassword}

// testPassword is the Windows password the fake terminal gives.
const testPassword = "svc-test-windows-password"

// fakeHost is a host of goos whose service manager is f; opened records
// the config of each service opened.
func fakeHost(t *testing.T, goos string, f *fakeManager, opened *[]*kservice.Config) Host {
	platform := map[string]string{"linux": "linux-systemd", "darwin": "darwin-launchd", "windows": "windows-service"}[goos]
	home := t.TempDir()
	env := slices.Clone(environ)
	if goos == "windows" {
		env[0] = `Path=C:\Users\u\AppData\Roaming\npm;C:\Windows\system32`
	}
	return Host{
		GOOS:      goos,
		Platform:  platform,
		Environ:   func() []string { return env },
		HomeDir:   func() (string, error) { return home, nil },
		Account:   func() (string, error) { return `CORP\u`, nil },
		Probe:     func() error { return nil },
		UnitState: func() (string, string, error) { return "active", "running", nil },
		Open: func(cfg *kservice.Config) (Manager, error) {
			*opened = append(*opened, cfg)
			return f, nil
		},
	}
}

// testRequest asks for the service of the binary /opt/mcphub/bin/mcphub
// with configPath and dataDir, from a terminal that gives testPassword.
func testRequest(configPath, dataDir string) Request {
	return Request{
		Executable: func() (string, error) { return "/opt/mcphub/bin/mcphub", nil },
		ConfigPath: configPath,
		DataDir:    dataDir,
		Credential: testCredential,
		Terminal: Terminal{
			Stdin:        strings.NewReader(""),
			IsTerminal:   func() bool { return true },
			ReadPassword: func() ([]byte, error) { return []byte(testPassword), nil },
			Prompt:       &strings.Builder{},
		},
	}
}

// testCredential stands for client.URLCredential: the user information of
// a URL that has one.
func testCredential(value string) string {
	if u, err := url.Parse(value); err == nil && u.User != nil {
		return u.User.String()
	}
	return ""
}
