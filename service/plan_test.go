package service

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	kservice "github.com/kardianos/service"

	"github.com/mcphub/mcphub/service/servicetest"
)

func TestServiceInstallConfig(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, goos := range []string{"linux", "darwin", "windows"} {
		t.Run(goos, func(t *testing.T) {
			var opened []*kservice.Config
			h := fakeHost(t, goos, &servicetest.Manager{}, &opened)
			p, err := h.PlanInstall(testRequest("hub.toml", "state"))
			if err != nil {
				t.Fatal(err)
			}
			cfg := p.Config
			if cfg.Name != "mcphub" || cfg.DisplayName == "" || cfg.Description == "" {
				t.Errorf("name %q, display name %q, description %q", cfg.Name, cfg.DisplayName, cfg.Description)
			}
			if cfg.Executable != "/opt/mcphub/bin/mcphub" {
				t.Errorf("executable %q", cfg.Executable)
			}
			want := []string{"serve", "--config", filepath.Join(dir, "hub.toml"), "--data-dir", filepath.Join(dir, "state")}
			if !slices.Equal(cfg.Arguments, want) {
				t.Errorf("arguments %q, want %q", cfg.Arguments, want)
			}
			if v, ok := cfg.Option["UserService"].(bool); !ok || !v {
				t.Errorf("UserService option %v, want true", cfg.Option["UserService"])
			}
			pathName := "PATH"
			if goos == "windows" {
				pathName = "Path"
			}
			wantEnv := []string{"HTTPS_PROXY", "NODE_EXTRA_CA_CERTS", pathName, "no_proxy"}
			if got := slices.Sorted(maps.Keys(cfg.EnvVars)); !slices.Equal(got, wantEnv) {
				t.Errorf("env vars %q, want exactly %q", got, wantEnv)
			}
			if cfg.EnvVars["HTTPS_PROXY"] != "http://proxy.corp:3128" || cfg.EnvVars["NODE_EXTRA_CA_CERTS"] != "/etc/corp-ca.pem" {
				t.Errorf("env values %q", cfg.EnvVars)
			}
			if !slices.Equal(p.Held, []string{"ALL_PROXY", "HTTP_PROXY"}) {
				t.Errorf("held back %q, want the proxies with credentials", p.Held)
			}
			for k, v := range cfg.EnvVars {
				for _, s := range servicetest.Secrets {
					if strings.Contains(k+"="+v, s) {
						t.Errorf("unit gets secret %s=%s", k, v)
					}
				}
			}
			switch goos {
			case "linux":
				script, _ := cfg.Option["SystemdScript"].(string)
				if !strings.Contains(script, "WantedBy=default.target") || cfg.Option["Restart"] != "on-failure" {
					t.Errorf("systemd unit: Restart %v, script:\n%s", cfg.Option["Restart"], script)
				}
			case "darwin":
				if cfg.Option["KeepAlive"] != true || cfg.Option["RunAtLoad"] != true {
					t.Errorf("launchd options %v", cfg.Option)
				}
			case "windows":
				if cfg.Option["OnFailure"] != "restart" {
					t.Errorf("windows options %v", cfg.Option)
				}
				if cfg.UserName != `CORP\u` {
					t.Errorf("the service runs as %q, want the current user (not LocalSystem)", cfg.UserName)
				}
			}
			if goos != "windows" && cfg.UserName != "" {
				t.Errorf("user name %q: a user unit runs as its user", cfg.UserName)
			}
		})
	}
}

func TestServiceEnvEscapesForSystemd(t *testing.T) {
	environ := []string{"PATH=/mnt/c/Program Files/nodejs:/usr/bin", `SSL_CERT_FILE=/etc/100%\ca.pem`}
	env, _ := unitEnv("linux", environ, testCredential)
	if got, want := env["PATH"], `/mnt/c/Program\x20Files/nodejs:/usr/bin`; got != want {
		t.Errorf("PATH in the unit %q, want %q", got, want)
	}
	if got, want := env["SSL_CERT_FILE"], `/etc/100%%\\ca.pem`; got != want {
		t.Errorf("SSL_CERT_FILE in the unit %q, want %q", got, want)
	}
	env, _ = unitEnv("darwin", environ, testCredential)
	if env["PATH"] != "/mnt/c/Program Files/nodejs:/usr/bin" {
		t.Errorf("launchd escapes its own plist; PATH %q", env["PATH"])
	}
}

// The unit gives up after 5 starts within a minute; ExecStart's words keep
// a $ from systemd's expansion, while Environment= values take it as is.
func TestServiceSystemdUnit(t *testing.T) {
	var opened []*kservice.Config
	h := fakeHost(t, "linux", &servicetest.Manager{}, &opened)
	r := testRequest("/etc/x${HOME}/hub.toml", "/var/100%")
	r.Executable = func() (string, error) { return "/opt/a$b/mcphub", nil }
	p, err := h.PlanInstall(r)
	if err != nil {
		t.Fatal(err)
	}
	script, _ := p.Config.Option["SystemdScript"].(string)
	unit, rest, _ := strings.Cut(script, "[Service]")
	if !strings.Contains(unit, "StartLimitIntervalSec=60\n") || !strings.Contains(unit, "StartLimitBurst=5\n") || strings.Contains(rest, "StartLimit") {
		t.Errorf("[Unit] lacks the start limit:\n%s", script)
	}
	if p.Config.Executable != "/opt/a$$b/mcphub" {
		t.Errorf("executable %q", p.Config.Executable)
	}
	if want := []string{"serve", "--config", "/etc/x$${HOME}/hub.toml", "--data-dir", "/var/100%%"}; !slices.Equal(p.Config.Arguments, want) {
		t.Errorf("arguments %q, want %q", p.Config.Arguments, want)
	}
	if env, _ := unitEnv("linux", []string{"PATH=/opt/$dir:/usr/bin"}, testCredential); env["PATH"] != "/opt/$dir:/usr/bin" {
		t.Errorf("Environment= value %q: systemd does not expand $ there", env["PATH"])
	}
}
