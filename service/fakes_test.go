package service

import (
	"net/url"
	"strings"
	"testing"

	kservice "github.com/kardianos/service"

	"github.com/mcphub/mcphub/service/servicetest"
)

// fakeHost is a host of goos whose service manager is f; opened records
// the config of each service opened.
func fakeHost(t *testing.T, goos string, f *servicetest.Manager, opened *[]*kservice.Config) Host {
	home := t.TempDir()
	env := servicetest.Environ(goos)
	return Host{
		GOOS:      goos,
		Platform:  servicetest.Platform(goos),
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
// with configPath and dataDir, from a terminal that gives
// servicetest.Password.
func testRequest(configPath, dataDir string) Request {
	return Request{
		Executable: func() (string, error) { return "/opt/mcphub/bin/mcphub", nil },
		ConfigPath: configPath,
		DataDir:    dataDir,
		Credential: testCredential,
		Terminal: Terminal{
			Stdin:        strings.NewReader(""),
			IsTerminal:   func() bool { return true },
			ReadPassword: func() ([]byte, error) { return []byte(servicetest.Password), nil },
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
