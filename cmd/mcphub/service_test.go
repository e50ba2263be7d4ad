package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	kservice "github.com/kardianos/service"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/clientconf"
	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/service"
	"github.com/mcphub/mcphub/service/servicetest"
)

// fakeServiceHost is a host of goos whose service manager is f; opened
// records the config of each service opened.
func fakeServiceHost(t *testing.T, goos string, f *servicetest.Manager, opened *[]*kservice.Config) serviceHost {
	home := t.TempDir()
	environ := servicetest.Environ(goos)
	return serviceHost{
		Host: service.Host{
			GOOS:      goos,
			Platform:  servicetest.Platform(goos),
			Environ:   func() []string { return environ },
			HomeDir:   func() (string, error) { return home, nil },
			Account:   func() (string, error) { return `CORP\u`, nil },
			Probe:     func() error { return nil },
			UnitState: func() (string, string, error) { return "active", "running", nil },
			Open: func(cfg *kservice.Config) (service.Manager, error) {
				*opened = append(*opened, cfg)
				return f, nil
			},
		},
		executable:   func() (string, error) { return "/opt/mcphub/bin/mcphub", nil },
		args0:        "mcphub",
		lookPath:     func(string) (string, error) { return "", exec.ErrNotFound },
		stdin:        strings.NewReader(""),
		isTerminal:   func() bool { return true },
		readPassword: func() ([]byte, error) { return []byte(servicetest.Password), nil },
	}
}

// useServiceHost makes mcphub service use h for the rest of the test.
func useServiceHost(t *testing.T, h serviceHost) {
	t.Helper()
	old := newServiceHost
	newServiceHost = func() serviceHost { return h }
	t.Cleanup(func() { newServiceHost = old })
}

// serviceCLI runs mcphub with the test's registry and data directory.
func serviceCLI(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	all := append([]string{"--config", filepath.Join(dir, "hub.toml"), "--data-dir", filepath.Join(dir, "data")}, args...)
	code, out, errOut := runCLI(t, all...)
	for _, s := range servicetest.Secrets {
		if strings.Contains(out+errOut, s) {
			t.Errorf("mcphub %v printed a secret of the environment:\n%s%s", args, out, errOut)
		}
	}
	return code, out, errOut
}

func TestServiceInstallRefusesGoBuild(t *testing.T) {
	for _, exe := range []string{
		"/tmp/go-build3311442/b001/exe/mcphub",
		`C:\Users\u\AppData\Local\Temp\go-build3311442\b001\exe\mcphub.exe`,
		"/tmp/go-build998/b001/mcphub.test",
	} {
		f := &servicetest.Manager{}
		var opened []*kservice.Config
		h := fakeServiceHost(t, "linux", f, &opened)
		h.executable = func() (string, error) { return exe, nil }
		useServiceHost(t, h)
		dir := t.TempDir()
		code, _, errOut := serviceCLI(t, dir, "service", "install")
		if code == 0 || !strings.Contains(errOut, "go install ./cmd/mcphub") || !strings.Contains(errOut, "go run") {
			t.Errorf("%s: exit %d, stderr %q", exe, code, errOut)
		}
		if len(f.Calls) != 0 || fileExists(filepath.Join(dir, "hub.toml")) {
			t.Errorf("%s: refused install still did %v (or created the registry)", exe, f.Calls)
		}
	}
	for _, exe := range []string{"/home/u/go/bin/mcphub", "/opt/homebrew/bin/mcphub"} {
		noLook := func(string) (string, error) { return "", errors.New("not found") }
		if _, goRun, _ := clientconf.InstalledExecutable(func() (string, error) { return exe, nil }, noLook, "mcphub"); goRun {
			t.Errorf("%s: an installed binary taken for a go run build", exe)
		}
	}
}

func TestServiceStatusNotInstalled(t *testing.T) {
	var opened []*kservice.Config
	h := fakeServiceHost(t, "linux", &servicetest.Manager{}, &opened)
	useServiceHost(t, h)
	dir := t.TempDir()
	home, _ := h.HomeDir()
	unit := filepath.Join(home, ".config", "systemd", "user", "mcphub.service")

	code, out, errOut := serviceCLI(t, dir, "service", "status")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"mcphub service: not installed", "unit file: " + unit, "mcphub service install"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if fileExists(filepath.Join(dir, "hub.toml")) {
		t.Error("service status created the registry")
	}

	code, out, _ = serviceCLI(t, dir, "service", "status", "--json")
	var st service.State
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("exit %d, JSON %q", code, out)
	}
	if want := (service.State{Installed: false, State: "not installed", Platform: "linux-systemd", UnitFile: unit}); st != want {
		t.Errorf("status %+v, want %+v", st, want)
	}
}

func TestServiceStatusWithoutUserSystemd(t *testing.T) {
	cases := []struct {
		name  string
		host  func(h *serviceHost)
		wants []string
	}{
		{"no session bus", func(h *serviceHost) {
			h.Probe = func() error {
				return fmt.Errorf("%w: systemctl --user: Failed to connect to bus: No medium found", service.ErrNoUserManager)
			}
		}, []string{"systemd user services are not available here (no user session bus)", "run mcphub serve from your shell", "loginctl enable-linger $USER"}},
		{"not systemd", func(h *serviceHost) { h.Platform = "unix-systemv" }, []string{"systemd user services are not available here", "run mcphub serve from your shell"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &servicetest.Manager{}
			var opened []*kservice.Config
			h := fakeServiceHost(t, "linux", f, &opened)
			tc.host(&h)
			useServiceHost(t, h)
			code, out, _ := serviceCLI(t, t.TempDir(), "service", "status", "--json")
			var st service.State
			if code != 1 || json.Unmarshal([]byte(out), &st) != nil || st.State != "unavailable" || !strings.Contains(st.Error, tc.wants[0]) {
				t.Errorf("status --json: exit %d, stdout %q", code, out)
			}
			for _, cmd := range []string{"status", "install", "start"} {
				code, _, errOut := serviceCLI(t, t.TempDir(), "service", cmd)
				if code != 1 {
					t.Errorf("%s: exit %d", cmd, code)
				}
				for _, want := range tc.wants {
					if !strings.Contains(errOut, want) {
						t.Errorf("%s: stderr lacks %q: %q", cmd, want, errOut)
					}
				}
			}
			if len(opened) != 0 || len(f.Calls) != 0 {
				t.Errorf("the service manager was used anyway: opened %d, calls %v", len(opened), f.Calls)
			}
		})
	}
}

func TestServiceInstall(t *testing.T) {
	f := &servicetest.Manager{}
	var opened []*kservice.Config
	useServiceHost(t, fakeServiceHost(t, "linux", f, &opened))
	dir := t.TempDir()

	code, out, errOut := serviceCLI(t, dir, "service", "install")
	if code != 0 {
		t.Fatalf("install: exit %d, stderr %q", code, errOut)
	}
	if !slices.Equal(f.Calls, []string{"install", "start"}) {
		t.Errorf("calls %v, want install then start", f.Calls)
	}
	for _, want := range []string{"installed the mcphub service", "running", "mcphub logs -f", "mcphub service status",
		"/opt/mcphub/bin/mcphub serve --config " + filepath.Join(dir, "hub.toml"), "HTTP_PROXY holds credentials", "ALL_PROXY holds credentials", "loginctl enable-linger"} {
		if !strings.Contains(out, want) {
			t.Errorf("install output lacks %q:\n%s", want, out)
		}
	}

	f.Calls = nil
	code, _, errOut = serviceCLI(t, dir, "service", "install")
	if code != 1 || !strings.Contains(errOut, "installed already") || !strings.Contains(errOut, "--force") || !strings.Contains(errOut, "mcphub service uninstall") {
		t.Errorf("second install: exit %d, stderr %q", code, errOut)
	}
	if len(f.Calls) != 0 {
		t.Errorf("second install changed the service: %v", f.Calls)
	}

	code, out, _ = serviceCLI(t, dir, "service", "install", "--json")
	var failed struct{ Error string }
	if code != 1 || json.Unmarshal([]byte(out), &failed) != nil || !strings.Contains(failed.Error, "--force") {
		t.Errorf("second install --json: exit %d, stdout %q", code, out)
	}

	code, _, errOut = serviceCLI(t, dir, "service", "install", "--force")
	if code != 0 || !slices.Equal(f.Calls, []string{"stop", "uninstall", "install", "start"}) {
		t.Errorf("install --force: exit %d, calls %v, stderr %q", code, f.Calls, errOut)
	}

	f.Calls = nil
	code, out, _ = serviceCLI(t, dir, "service", "stop", "--json")
	var st service.State
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.State != "stopped" || !st.Installed {
		t.Errorf("stop --json: exit %d, %q", code, out)
	}
	code, out, _ = serviceCLI(t, dir, "service", "start")
	if code != 0 || !strings.Contains(out, "running") {
		t.Errorf("start: exit %d, %q", code, out)
	}
	code, out, _ = serviceCLI(t, dir, "service", "uninstall")
	if code != 0 || !strings.Contains(out, "removed the mcphub service") {
		t.Errorf("uninstall: exit %d, %q", code, out)
	}
	if !slices.Equal(f.Calls, []string{"stop", "start", "stop", "uninstall"}) {
		t.Errorf("calls %v", f.Calls)
	}
	code, _, errOut = serviceCLI(t, dir, "service", "start")
	if code != 1 || !strings.Contains(errOut, "not installed") {
		t.Errorf("start when not installed: exit %d, %q", code, errOut)
	}
}

func TestServiceInstallTokenFromEnvironment(t *testing.T) {
	f := &servicetest.Manager{}
	var opened []*kservice.Config
	useServiceHost(t, fakeServiceHost(t, "linux", f, &opened))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hub.toml"), []byte("[hub]\nauth = \"token\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MCPHUB_TOKEN", "svc-test-hub-token")

	code, out, errOut := serviceCLI(t, dir, "service", "install")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	tokenFile := filepath.Join(dir, "token")
	for _, want := range []string{"MCPHUB_TOKEN", "not written into the unit", tokenFile, "mcphub token", "systemctl --user edit mcphub"} {
		if !strings.Contains(out, want) {
			t.Errorf("install output lacks %q:\n%s", want, out)
		}
	}
	if _, ok := opened[0].EnvVars["MCPHUB_TOKEN"]; ok {
		t.Error("the unit gets MCPHUB_TOKEN")
	}
}

func TestServiceErrorsSayTheFix(t *testing.T) {
	f := &servicetest.Manager{InstallErr: fmt.Errorf("OpenSCManager: %w", fs.ErrPermission)}
	var opened []*kservice.Config
	useServiceHost(t, fakeServiceHost(t, "windows", f, &opened))
	code, _, errOut := serviceCLI(t, t.TempDir(), "service", "install")
	if code != 1 || !strings.Contains(errOut, "Run as administrator") {
		t.Errorf("access denied: exit %d, stderr %q", code, errOut)
	}

	f = &servicetest.Manager{StatusErr: errors.New("service in failed state"), Installed: true}
	useServiceHost(t, fakeServiceHost(t, "linux", f, &opened))
	code, out, _ := serviceCLI(t, t.TempDir(), "service", "status")
	if code != 0 || !strings.Contains(out, "mcphub service: failed") {
		t.Errorf("failed unit: exit %d, %q", code, out)
	}
}

func TestServiceInstallWindowsAccount(t *testing.T) {
	install := func(t *testing.T, h serviceHost, f *servicetest.Manager, args ...string) (int, string, string) {
		t.Helper()
		useServiceHost(t, h)
		return serviceCLI(t, t.TempDir(), append([]string{"service", "install"}, args...)...)
	}

	t.Run("password from the terminal", func(t *testing.T) {
		f := &servicetest.Manager{}
		var opened []*kservice.Config
		h := fakeServiceHost(t, "windows", f, &opened)
		code, out, errOut := install(t, h, f)
		if code != 0 || !slices.Equal(f.Calls, []string{"install", "start"}) {
			t.Fatalf("exit %d, calls %v, stderr %q", code, f.Calls, errOut)
		}
		cfg := opened[0]
		if cfg.UserName != `CORP\u` || cfg.Option["Password"] != servicetest.Password {
			t.Errorf("the service runs as %q with password set %v", cfg.UserName, cfg.Option["Password"] == servicetest.Password)
		}
		if !strings.Contains(errOut, `Windows password of CORP\u`) || !strings.Contains(out, `runs as CORP\u`) || strings.Contains(out, "LocalSystem") {
			t.Errorf("stdout %q\nstderr %q", out, errOut)
		}
	})

	t.Run("password from stdin", func(t *testing.T) {
		f := &servicetest.Manager{}
		var opened []*kservice.Config
		h := fakeServiceHost(t, "windows", f, &opened)
		h.isTerminal = func() bool { return false }
		h.readPassword = func() ([]byte, error) { t.Error("asked the terminal with --password-stdin"); return nil, nil }
		h.stdin = strings.NewReader(servicetest.Password + "\r\nnext line\n")
		code, _, errOut := install(t, h, f, "--password-stdin")
		if code != 0 || opened[0].Option["Password"] != servicetest.Password {
			t.Errorf("exit %d, password set %v, stderr %q", code, opened[0].Option["Password"] == servicetest.Password, errOut)
		}
	})

	t.Run("no terminal and no --password-stdin", func(t *testing.T) {
		f := &servicetest.Manager{}
		var opened []*kservice.Config
		h := fakeServiceHost(t, "windows", f, &opened)
		h.isTerminal = func() bool { return false }
		code, _, errOut := install(t, h, f)
		if code != 1 || !strings.Contains(errOut, "--password-stdin") || !strings.Contains(errOut, `runs as you (CORP\u)`) || len(f.Calls) != 0 {
			t.Errorf("exit %d, calls %v, stderr %q", code, f.Calls, errOut)
		}
	})

	t.Run("empty password", func(t *testing.T) {
		f := &servicetest.Manager{}
		var opened []*kservice.Config
		h := fakeServiceHost(t, "windows", f, &opened)
		code, _, errOut := install(t, h, f, "--password-stdin")
		if code != 1 || !strings.Contains(errOut, "no password given") || len(f.Calls) != 0 {
			t.Errorf("exit %d, calls %v, stderr %q", code, f.Calls, errOut)
		}
	})

	t.Run("a reinstall refused for want of a password keeps the service", func(t *testing.T) {
		f := &servicetest.Manager{Installed: true, Running: true}
		var opened []*kservice.Config
		h := fakeServiceHost(t, "windows", f, &opened)
		h.readPassword = func() ([]byte, error) { return nil, errors.New("the terminal went away") }
		code, _, errOut := install(t, h, f, "--force")
		if code != 1 || !strings.Contains(errOut, "reading the password") || len(f.Calls) != 0 {
			t.Errorf("exit %d, calls %v, stderr %q", code, f.Calls, errOut)
		}
	})

	t.Run("logon failure", func(t *testing.T) {
		f := &servicetest.Manager{StartErr: service.ErrLogonFailed}
		var opened []*kservice.Config
		h := fakeServiceHost(t, "windows", f, &opened)
		code, _, errOut := install(t, h, f)
		if code != 1 || !strings.Contains(errOut, "Log on as a service") || !strings.Contains(errOut, "password was wrong") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})

	t.Run("help", func(t *testing.T) {
		code, out, _ := runCLI(t, "service", "install", "--help")
		for _, want := range []string{"never as LocalSystem", "--password-stdin", "without showing it", "Log on as a service"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("install --help lacks %q (exit %d):\n%s", want, code, out)
			}
		}
	})

	t.Run("--password-stdin elsewhere", func(t *testing.T) {
		f := &servicetest.Manager{}
		var opened []*kservice.Config
		h := fakeServiceHost(t, "linux", f, &opened)
		code, _, errOut := install(t, h, f, "--password-stdin")
		if code != 1 || !strings.Contains(errOut, "only a Windows service needs your password") || len(f.Calls) != 0 {
			t.Errorf("exit %d, calls %v, stderr %q", code, f.Calls, errOut)
		}
	})
}

// A unit that keeps failing is activating (auto-restart) most of the time,
// which kardianos/service calls running.
func TestServiceStatusRestarting(t *testing.T) {
	f := &servicetest.Manager{Installed: true, Running: true}
	var opened []*kservice.Config
	h := fakeServiceHost(t, "linux", f, &opened)
	h.UnitState = func() (string, string, error) { return "activating", "auto-restart", nil }
	useServiceHost(t, h)
	dir := t.TempDir()
	code, out, _ := serviceCLI(t, dir, "service", "status")
	if code != 0 || !strings.Contains(out, "mcphub service: restarting (failing): see mcphub logs\n") {
		t.Errorf("status: exit %d\n%s", code, out)
	}
	code, out, _ = serviceCLI(t, dir, "service", "status", "--json")
	var st service.State
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.State != "restarting" || !st.Installed {
		t.Errorf("status --json: exit %d, %q", code, out)
	}
	code, _, _ = serviceCLI(t, dir, "service", "stop")
	if code != 0 || !slices.Equal(f.Calls, []string{"stop"}) {
		t.Errorf("stop of a restarting unit: exit %d, calls %v", code, f.Calls)
	}

	h.UnitState = func() (string, string, error) { return "", "", errors.New("systemctl: no bus") }
	f.Running = true
	useServiceHost(t, h)
	if code, out, _ := serviceCLI(t, dir, "service", "status"); code != 0 || !strings.Contains(out, "mcphub service: running\n") {
		t.Errorf("status when systemctl show fails: exit %d\n%s", code, out)
	}
}

// The unit runs mcphub by the path the user ran it by, a package manager's
// symlink, when that is the running binary: os.Executable resolved it to a
// versioned file that the next upgrade removes.
func TestServiceExecutableKeepsSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "Cellar", "mcphub", "1.4.0", "bin", "mcphub")
	link := filepath.Join(dir, "bin", "mcphub")
	other := filepath.Join(dir, "other", "mcphub")
	for _, p := range []string{real, other} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("binary "+p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Dir(link), 0o755)
	if err := os.Symlink(real, link); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	for _, tc := range []struct {
		found string
		err   error
		want  string
	}{
		{link, nil, link},
		{other, nil, real},
		{"bin/mcphub", nil, real},
		{"", exec.ErrNotFound, real},
	} {
		var opened []*kservice.Config
		h := fakeServiceHost(t, "darwin", &servicetest.Manager{}, &opened)
		h.executable = func() (string, error) { return real, nil }
		h.lookPath = func(name string) (string, error) {
			if name != "mcphub" {
				t.Errorf("looked up %q, want os.Args[0]", name)
			}
			return tc.found, tc.err
		}
		c := &serviceCtl{a: &app{configPath: "hub.toml", dataDir: "data"}, h: h}
		if got, err := c.serviceExecutable(); err != nil || got != tc.want {
			t.Errorf("found %q: executable %q (%v), want %q", tc.found, got, err, tc.want)
		}
	}
}

// Install names the variables the servers' ${VAR}s need that this shell has
// and the service will not: names only, with the fix.
func TestServiceInstallNamesShellOnlyVars(t *testing.T) {
	f := &servicetest.Manager{}
	var opened []*kservice.Config
	useServiceHost(t, fakeServiceHost(t, "linux", f, &opened))
	dir := t.TempDir()
	reg := `[servers.github]
command = "npx"
env = { GITHUB_PERSONAL_ACCESS_TOKEN = "${GITHUB_TOKEN}", NODE_PATH = "${PATH}", CACHE = "${HOME}/.cache" }

[servers.aws]
command = "uvx"
enabled = false
env = { AWS_SECRET_ACCESS_KEY = "${AWS_SECRET_ACCESS_KEY}" }
`
	if err := os.WriteFile(filepath.Join(dir, "hub.toml"), []byte(reg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := serviceCLI(t, dir, "service", "install")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"server github uses ${GITHUB_TOKEN} from this shell, which the service does not get",
		"env_passthrough does not help", "systemctl --user edit mcphub", "Environment=GITHUB_TOKEN=..."} {
		if !strings.Contains(out, want) {
			t.Errorf("install output lacks %q:\n%s", want, out)
		}
	}
	for _, unwanted := range []string{"${PATH}", "${HOME}", "AWS_SECRET_ACCESS_KEY", "server aws"} {
		if strings.Contains(out, unwanted) {
			t.Errorf("install output names %q:\n%s", unwanted, out)
		}
	}
}

// A run file that a killed hub left is not a hub that serves the data
// directory.
func TestServiceDataDirHolder(t *testing.T) {
	dir := t.TempDir()
	c := &serviceCtl{a: &app{dataDir: dir}}
	if err := os.WriteFile(filepath.Join(dir, hubclient.RunFileName), []byte(`{"pid":4242,"listen":"127.0.0.1:7733"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if pid := c.dataDirHolder(); pid != 0 {
		t.Errorf("a stale run file taken for hub %d", pid)
	}
	release, err := hubclient.LockDataDir(dir, hubclient.RunInfo{PID: 4343, Listen: "127.0.0.1:7733"})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if pid := c.dataDirHolder(); pid != 4343 {
		t.Errorf("holder %d, want the live hub 4343", pid)
	}
}

// The credential check install hands the service room (client.URLCredential)
// holds back every proxy URL with a user or password in it, and no other.
func TestServiceProxyCredentials(t *testing.T) {
	for _, v := range []string{"http://tok@proxy:8080", "tok@proxy:8080", "http://u:p@proxy", "http://%zz@proxy"} {
		if client.URLCredential(v) == "" {
			t.Errorf("%s taken for a URL without credentials", v)
		}
	}
	for _, v := range []string{"http://proxy.corp:3128", "proxy.corp:3128", "localhost,127.0.0.1"} {
		if client.URLCredential(v) != "" {
			t.Errorf("%s taken for a URL with credentials", v)
		}
	}
}
