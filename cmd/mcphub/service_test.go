package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kardianos/service"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/hubclient"
)

// fakeServiceManager stands for systemd, launchd or the Windows service
// control manager: it records the calls it gets.
type fakeServiceManager struct {
	installed, running bool
	calls              []string
	statusErr          error // returned by Status when set
	installErr         error // returned by Install when set
	startErr           error // returned by Start when set
}

func (f *fakeServiceManager) Install() error {
	f.calls = append(f.calls, "install")
	if f.installErr != nil {
		return f.installErr
	}
	f.installed = true
	return nil
}

func (f *fakeServiceManager) Uninstall() error {
	f.calls = append(f.calls, "uninstall")
	f.installed, f.running = false, false
	return nil
}

func (f *fakeServiceManager) Start() error {
	f.calls = append(f.calls, "start")
	if f.startErr != nil {
		return f.startErr
	}
	f.running = true
	return nil
}

func (f *fakeServiceManager) Stop() error {
	f.calls = append(f.calls, "stop")
	f.running = false
	return nil
}

func (f *fakeServiceManager) Status() (service.Status, error) {
	switch {
	case f.statusErr != nil:
		return service.StatusUnknown, f.statusErr
	case !f.installed:
		return service.StatusUnknown, service.ErrNotInstalled
	case f.running:
		return service.StatusRunning, nil
	}
	return service.StatusStopped, nil
}

// serviceEnviron is the installing shell's environment in the tests: what
// the unit may get, and secrets it must not.
var serviceEnviron = []string{
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

// serviceSecrets are the values of serviceEnviron no unit, output or error
// may hold.
var serviceSecrets = []string{"svc-test-hub-token", "svc-test-github-token", "svc-test-aws-secret", "svc-test-proxy-password",
	"svc-test-proxy-token", serviceTestPassword}

// serviceTestPassword is the Windows password the fake terminal gives.
const serviceTestPassword = "svc-test-windows-password"

// fakeServiceHost is a host of goos whose service manager is f; opened
// records the config of each service opened.
func fakeServiceHost(t *testing.T, goos string, f *fakeServiceManager, opened *[]*service.Config) serviceHost {
	platform := map[string]string{"linux": "linux-systemd", "darwin": "darwin-launchd", "windows": "windows-service"}[goos]
	home := t.TempDir()
	environ := slices.Clone(serviceEnviron)
	if goos == "windows" {
		environ[0] = `Path=C:\Users\u\AppData\Roaming\npm;C:\Windows\system32`
	}
	return serviceHost{
		goos:       goos,
		platform:   platform,
		executable: func() (string, error) { return "/opt/mcphub/bin/mcphub", nil },
		args0:      "mcphub",
		lookPath:   func(string) (string, error) { return "", exec.ErrNotFound },
		environ:    func() []string { return environ },
		homeDir:    func() (string, error) { return home, nil },
		account:    func() (string, error) { return `CORP\u`, nil },
		probe:      func() error { return nil },
		unitState:  func() (string, string, error) { return "active", "running", nil },
		open: func(cfg *service.Config) (serviceManager, error) {
			*opened = append(*opened, cfg)
			return f, nil
		},
		stdin:        strings.NewReader(""),
		isTerminal:   func() bool { return true },
		readPassword: func() ([]byte, error) { return []byte(serviceTestPassword), nil },
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
	for _, s := range serviceSecrets {
		if strings.Contains(out+errOut, s) {
			t.Errorf("mcphub %v printed a secret of the environment:\n%s%s", args, out, errOut)
		}
	}
	return code, out, errOut
}

func TestServiceInstallConfig(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, goos := range []string{"linux", "darwin", "windows"} {
		t.Run(goos, func(t *testing.T) {
			var opened []*service.Config
			h := fakeServiceHost(t, goos, &fakeServiceManager{}, &opened)
			c := &serviceCtl{a: &app{configPath: "hub.toml", dataDir: "state"}, h: h}
			p, err := c.plan()
			if err != nil {
				t.Fatal(err)
			}
			cfg := p.cfg
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
			if !slices.Equal(p.held, []string{"ALL_PROXY", "HTTP_PROXY"}) {
				t.Errorf("held back %q, want the proxies with credentials", p.held)
			}
			for k, v := range cfg.EnvVars {
				for _, s := range serviceSecrets {
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
	env, _ := serviceEnv("linux", environ)
	if got, want := env["PATH"], `/mnt/c/Program\x20Files/nodejs:/usr/bin`; got != want {
		t.Errorf("PATH in the unit %q, want %q", got, want)
	}
	if got, want := env["SSL_CERT_FILE"], `/etc/100%%\\ca.pem`; got != want {
		t.Errorf("SSL_CERT_FILE in the unit %q, want %q", got, want)
	}
	env, _ = serviceEnv("darwin", environ)
	if env["PATH"] != "/mnt/c/Program Files/nodejs:/usr/bin" {
		t.Errorf("launchd escapes its own plist; PATH %q", env["PATH"])
	}
}

func TestServiceInstallRefusesGoBuild(t *testing.T) {
	for _, exe := range []string{
		"/tmp/go-build3311442/b001/exe/mcphub",
		`C:\Users\u\AppData\Local\Temp\go-build3311442\b001\exe\mcphub.exe`,
		"/tmp/go-build998/b001/mcphub.test",
	} {
		f := &fakeServiceManager{}
		var opened []*service.Config
		h := fakeServiceHost(t, "linux", f, &opened)
		h.executable = func() (string, error) { return exe, nil }
		useServiceHost(t, h)
		dir := t.TempDir()
		code, _, errOut := serviceCLI(t, dir, "service", "install")
		if code == 0 || !strings.Contains(errOut, "go install ./cmd/mcphub") || !strings.Contains(errOut, "go run") {
			t.Errorf("%s: exit %d, stderr %q", exe, code, errOut)
		}
		if len(f.calls) != 0 || fileExists(filepath.Join(dir, "hub.toml")) {
			t.Errorf("%s: refused install still did %v (or created the registry)", exe, f.calls)
		}
	}
	for _, exe := range []string{"/home/u/go/bin/mcphub", "/opt/homebrew/bin/mcphub"} {
		noLook := func(string) (string, error) { return "", errors.New("not found") }
		if _, goRun, _ := installedExecutable(func() (string, error) { return exe, nil }, noLook, "mcphub"); goRun {
			t.Errorf("%s: an installed binary taken for a go run build", exe)
		}
	}
}

func TestServiceStatusNotInstalled(t *testing.T) {
	var opened []*service.Config
	h := fakeServiceHost(t, "linux", &fakeServiceManager{}, &opened)
	useServiceHost(t, h)
	dir := t.TempDir()
	home, _ := h.homeDir()
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
	var st serviceState
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("exit %d, JSON %q", code, out)
	}
	if want := (serviceState{Installed: false, State: "not installed", Platform: "linux-systemd", UnitFile: unit}); st != want {
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
			h.probe = func() error {
				return fmt.Errorf("%w: systemctl --user: Failed to connect to bus: No medium found", errNoUserManager)
			}
		}, []string{"systemd user services are not available here (no user session bus)", "run mcphub serve from your shell", "loginctl enable-linger $USER"}},
		{"not systemd", func(h *serviceHost) { h.platform = "unix-systemv" }, []string{"systemd user services are not available here", "run mcphub serve from your shell"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeServiceManager{}
			var opened []*service.Config
			h := fakeServiceHost(t, "linux", f, &opened)
			tc.host(&h)
			useServiceHost(t, h)
			code, out, _ := serviceCLI(t, t.TempDir(), "service", "status", "--json")
			var st serviceState
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
			if len(opened) != 0 || len(f.calls) != 0 {
				t.Errorf("the service manager was used anyway: opened %d, calls %v", len(opened), f.calls)
			}
		})
	}
}

func TestServiceInstall(t *testing.T) {
	f := &fakeServiceManager{}
	var opened []*service.Config
	useServiceHost(t, fakeServiceHost(t, "linux", f, &opened))
	dir := t.TempDir()

	code, out, errOut := serviceCLI(t, dir, "service", "install")
	if code != 0 {
		t.Fatalf("install: exit %d, stderr %q", code, errOut)
	}
	if !slices.Equal(f.calls, []string{"install", "start"}) {
		t.Errorf("calls %v, want install then start", f.calls)
	}
	for _, want := range []string{"installed the mcphub service", "running", "mcphub logs -f", "mcphub service status",
		"/opt/mcphub/bin/mcphub serve --config " + filepath.Join(dir, "hub.toml"), "HTTP_PROXY holds credentials", "ALL_PROXY holds credentials", "loginctl enable-linger"} {
		if !strings.Contains(out, want) {
			t.Errorf("install output lacks %q:\n%s", want, out)
		}
	}

	f.calls = nil
	code, _, errOut = serviceCLI(t, dir, "service", "install")
	if code != 1 || !strings.Contains(errOut, "installed already") || !strings.Contains(errOut, "--force") || !strings.Contains(errOut, "mcphub service uninstall") {
		t.Errorf("second install: exit %d, stderr %q", code, errOut)
	}
	if len(f.calls) != 0 {
		t.Errorf("second install changed the service: %v", f.calls)
	}

	code, out, _ = serviceCLI(t, dir, "service", "install", "--json")
	var failed struct{ Error string }
	if code != 1 || json.Unmarshal([]byte(out), &failed) != nil || !strings.Contains(failed.Error, "--force") {
		t.Errorf("second install --json: exit %d, stdout %q", code, out)
	}

	code, _, errOut = serviceCLI(t, dir, "service", "install", "--force")
	if code != 0 || !slices.Equal(f.calls, []string{"stop", "uninstall", "install", "start"}) {
		t.Errorf("install --force: exit %d, calls %v, stderr %q", code, f.calls, errOut)
	}

	f.calls = nil
	code, out, _ = serviceCLI(t, dir, "service", "stop", "--json")
	var st serviceState
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
	if !slices.Equal(f.calls, []string{"stop", "start", "stop", "uninstall"}) {
		t.Errorf("calls %v", f.calls)
	}
	code, _, errOut = serviceCLI(t, dir, "service", "start")
	if code != 1 || !strings.Contains(errOut, "not installed") {
		t.Errorf("start when not installed: exit %d, %q", code, errOut)
	}
}

func TestServiceInstallTokenFromEnvironment(t *testing.T) {
	f := &fakeServiceManager{}
	var opened []*service.Config
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
	f := &fakeServiceManager{installErr: fmt.Errorf("OpenSCManager: %w", fs.ErrPermission)}
	var opened []*service.Config
	useServiceHost(t, fakeServiceHost(t, "windows", f, &opened))
	code, _, errOut := serviceCLI(t, t.TempDir(), "service", "install")
	if code != 1 || !strings.Contains(errOut, "Run as administrator") {
		t.Errorf("access denied: exit %d, stderr %q", code, errOut)
	}

	f = &fakeServiceManager{statusErr: errors.New("service in failed state"), installed: true}
	useServiceHost(t, fakeServiceHost(t, "linux", f, &opened))
	code, out, _ := serviceCLI(t, t.TempDir(), "service", "status")
	if code != 0 || !strings.Contains(out, "mcphub service: failed") {
		t.Errorf("failed unit: exit %d, %q", code, out)
	}
}

// fakeRunner is a service manager running the program: Run starts it, and
// stops it when told to.
type fakeRunner struct {
	p    service.Interface
	stop chan struct{} // closed to ask the service to stop
}

func (r *fakeRunner) Run() error {
	if err := r.p.Start(nil); err != nil {
		return err
	}
	<-r.stop
	return r.p.Stop(nil)
}

func TestServeUnderManager(t *testing.T) {
	open := func(r *fakeRunner) func(service.Interface) (serviceRunner, error) {
		return func(p service.Interface) (serviceRunner, error) {
			r.p = p
			return r, nil
		}
	}

	t.Run("stop request cancels the hub", func(t *testing.T) {
		r := &fakeRunner{stop: make(chan struct{})}
		running := make(chan struct{})
		go func() { <-running; close(r.stop) }()
		err := serveUnderManager(open(r), func(ctx context.Context) error {
			close(running)
			<-ctx.Done()
			return nil
		}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a hub that fails ends the service", func(t *testing.T) {
		r := &fakeRunner{stop: make(chan struct{})}
		defer close(r.stop)
		boom := errors.New("listen tcp 127.0.0.1:7733: address already in use")
		err := serveUnderManager(open(r), func(context.Context) error { return boom }, time.Minute)
		if !errors.Is(err, boom) {
			t.Fatalf("err %v, want %v", err, boom)
		}
	})

	t.Run("a hub that does not stop", func(t *testing.T) {
		r := &fakeRunner{stop: make(chan struct{})}
		release := make(chan struct{})
		defer close(release)
		running := make(chan struct{})
		go func() { <-running; close(r.stop) }()
		err := serveUnderManager(open(r), func(context.Context) error {
			close(running)
			<-release
			return nil
		}, 10*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), "did not stop") {
			t.Fatalf("err %v", err)
		}
	})

	t.Run("no service manager", func(t *testing.T) {
		ran := false
		err := serveUnderManager(func(service.Interface) (serviceRunner, error) {
			return nil, service.ErrNoServiceSystemDetected
		}, func(context.Context) error { ran = true; return nil }, time.Minute)
		if !errors.Is(err, service.ErrNoServiceSystemDetected) || ran {
			t.Fatalf("err %v, ran %v", err, ran)
		}
	})
}

// Only Windows goes through kardianos's Run: systemd and launchd stop the
// hub with SIGTERM, which serve handles itself, without a time limit of
// mcphub's.
func TestServeAsServiceOnlyOnWindows(t *testing.T) {
	run := func(context.Context) error {
		t.Error("run called through the service manager")
		return nil
	}
	for _, tc := range []struct {
		goos        string
		interactive bool
	}{{"linux", false}, {"darwin", false}, {"linux", true}, {"windows", true}} {
		handled, err := serveAsService(tc.goos, func() bool { return tc.interactive }, run)
		if handled || err != nil {
			t.Errorf("%s (interactive %v): handled %v, err %v", tc.goos, tc.interactive, handled, err)
		}
	}
	if service.Interactive() {
		if handled, err := runServeAsService(run); handled || err != nil {
			t.Errorf("from a shell: handled %v, err %v", handled, err)
		}
	}
}

// stoppingRunner is the Windows service manager's Run as it is: after the
// program's Stop returns, it still has to report the service stopped
// before Run returns. A process that exits in between has crashed, as far
// as Windows can tell, and is restarted.
type stoppingRunner struct {
	p            service.Interface
	stop         chan struct{} // closed to ask the service to stop
	stopReturned chan struct{} // closed once the program's Stop returned
	report       chan struct{} // closed to let Run report the stop and return
	mu           sync.Mutex
	events       *[]string
}

func (r *stoppingRunner) Run() error {
	if err := r.p.Start(nil); err != nil {
		return err
	}
	<-r.stop
	err := r.p.Stop(nil)
	close(r.stopReturned)
	<-r.report
	r.mu.Lock()
	*r.events = append(*r.events, "run returned")
	r.mu.Unlock()
	return err
}

func TestServeUnderManagerWaitsForTheStopReport(t *testing.T) {
	var events []string
	r := &stoppingRunner{stop: make(chan struct{}), stopReturned: make(chan struct{}), report: make(chan struct{}), events: &events}
	running := make(chan struct{})
	result := make(chan error, 1)
	go func() {
		err := serveUnderManager(func(p service.Interface) (serviceRunner, error) {
			r.p = p
			return r, nil
		}, func(ctx context.Context) error {
			close(running)
			<-ctx.Done()
			return nil
		}, time.Minute)
		r.mu.Lock()
		events = append(events, "serve returned")
		r.mu.Unlock()
		result <- err
	}()
	<-running
	close(r.stop)
	<-r.stopReturned
	close(r.report)
	if err := <-result; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(events, []string{"run returned", "serve returned"}) {
		t.Errorf("events %q: serveUnderManager returned before the manager's Run reported the stop", events)
	}
}

func TestServiceInstallWindowsAccount(t *testing.T) {
	install := func(t *testing.T, h serviceHost, f *fakeServiceManager, args ...string) (int, string, string) {
		t.Helper()
		useServiceHost(t, h)
		return serviceCLI(t, t.TempDir(), append([]string{"service", "install"}, args...)...)
	}

	t.Run("password from the terminal", func(t *testing.T) {
		f := &fakeServiceManager{}
		var opened []*service.Config
		h := fakeServiceHost(t, "windows", f, &opened)
		code, out, errOut := install(t, h, f)
		if code != 0 || !slices.Equal(f.calls, []string{"install", "start"}) {
			t.Fatalf("exit %d, calls %v, stderr %q", code, f.calls, errOut)
		}
		cfg := opened[0]
		if cfg.UserName != `CORP\u` || cfg.Option["Password"] != serviceTestPassword {
			t.Errorf("the service runs as %q with password set %v", cfg.UserName, cfg.Option["Password"] == serviceTestPassword)
		}
		if !strings.Contains(errOut, `Windows password of CORP\u`) || !strings.Contains(out, `runs as CORP\u`) || strings.Contains(out, "LocalSystem") {
			t.Errorf("stdout %q\nstderr %q", out, errOut)
		}
	})

	t.Run("password from stdin", func(t *testing.T) {
		f := &fakeServiceManager{}
		var opened []*service.Config
		h := fakeServiceHost(t, "windows", f, &opened)
		h.isTerminal = func() bool { return false }
		h.readPassword = func() ([]byte, error) { t.Error("asked the terminal with --password-stdin"); return nil, nil }
		h.stdin = strings.NewReader(serviceTestPassword + "\r\nnext line\n")
		code, _, errOut := install(t, h, f, "--password-stdin")
		if code != 0 || opened[0].Option["Password"] != serviceTestPassword {
			t.Errorf("exit %d, password set %v, stderr %q", code, opened[0].Option["Password"] == serviceTestPassword, errOut)
		}
	})

	t.Run("no terminal and no --password-stdin", func(t *testing.T) {
		f := &fakeServiceManager{}
		var opened []*service.Config
		h := fakeServiceHost(t, "windows", f, &opened)
		h.isTerminal = func() bool { return false }
		code, _, errOut := install(t, h, f)
		if code != 1 || !strings.Contains(errOut, "--password-stdin") || !strings.Contains(errOut, `runs as you (CORP\u)`) || len(f.calls) != 0 {
			t.Errorf("exit %d, calls %v, stderr %q", code, f.calls, errOut)
		}
	})

	t.Run("empty password", func(t *testing.T) {
		f := &fakeServiceManager{}
		var opened []*service.Config
		h := fakeServiceHost(t, "windows", f, &opened)
		code, _, errOut := install(t, h, f, "--password-stdin")
		if code != 1 || !strings.Contains(errOut, "no password given") || len(f.calls) != 0 {
			t.Errorf("exit %d, calls %v, stderr %q", code, f.calls, errOut)
		}
	})

	t.Run("a reinstall refused for want of a password keeps the service", func(t *testing.T) {
		f := &fakeServiceManager{installed: true, running: true}
		var opened []*service.Config
		h := fakeServiceHost(t, "windows", f, &opened)
		h.readPassword = func() ([]byte, error) { return nil, errors.New("the terminal went away") }
		code, _, errOut := install(t, h, f, "--force")
		if code != 1 || !strings.Contains(errOut, "reading the password") || len(f.calls) != 0 {
			t.Errorf("exit %d, calls %v, stderr %q", code, f.calls, errOut)
		}
	})

	t.Run("logon failure", func(t *testing.T) {
		f := &fakeServiceManager{startErr: errServiceLogonFailed}
		var opened []*service.Config
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
		f := &fakeServiceManager{}
		var opened []*service.Config
		h := fakeServiceHost(t, "linux", f, &opened)
		code, _, errOut := install(t, h, f, "--password-stdin")
		if code != 1 || !strings.Contains(errOut, "only a Windows service needs your password") || len(f.calls) != 0 {
			t.Errorf("exit %d, calls %v, stderr %q", code, f.calls, errOut)
		}
	})
}

// A unit that keeps failing is activating (auto-restart) most of the time,
// which kardianos/service calls running.
func TestServiceStatusRestarting(t *testing.T) {
	f := &fakeServiceManager{installed: true, running: true}
	var opened []*service.Config
	h := fakeServiceHost(t, "linux", f, &opened)
	h.unitState = func() (string, string, error) { return "activating", "auto-restart", nil }
	useServiceHost(t, h)
	dir := t.TempDir()
	code, out, _ := serviceCLI(t, dir, "service", "status")
	if code != 0 || !strings.Contains(out, "mcphub service: restarting (failing): see mcphub logs\n") {
		t.Errorf("status: exit %d\n%s", code, out)
	}
	code, out, _ = serviceCLI(t, dir, "service", "status", "--json")
	var st serviceState
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.State != "restarting" || !st.Installed {
		t.Errorf("status --json: exit %d, %q", code, out)
	}
	code, _, _ = serviceCLI(t, dir, "service", "stop")
	if code != 0 || !slices.Equal(f.calls, []string{"stop"}) {
		t.Errorf("stop of a restarting unit: exit %d, calls %v", code, f.calls)
	}

	h.unitState = func() (string, string, error) { return "", "", errors.New("systemctl: no bus") }
	f.running = true
	useServiceHost(t, h)
	if code, out, _ := serviceCLI(t, dir, "service", "status"); code != 0 || !strings.Contains(out, "mcphub service: running\n") {
		t.Errorf("status when systemctl show fails: exit %d\n%s", code, out)
	}
}

// The unit gives up after 5 starts within a minute; ExecStart's words keep
// a $ from systemd's expansion, while Environment= values take it as is.
func TestServiceSystemdUnit(t *testing.T) {
	var opened []*service.Config
	h := fakeServiceHost(t, "linux", &fakeServiceManager{}, &opened)
	h.executable = func() (string, error) { return "/opt/a$b/mcphub", nil }
	c := &serviceCtl{a: &app{configPath: "/etc/x${HOME}/hub.toml", dataDir: "/var/100%"}, h: h}
	p, err := c.plan()
	if err != nil {
		t.Fatal(err)
	}
	script, _ := p.cfg.Option["SystemdScript"].(string)
	unit, rest, _ := strings.Cut(script, "[Service]")
	if !strings.Contains(unit, "StartLimitIntervalSec=60\n") || !strings.Contains(unit, "StartLimitBurst=5\n") || strings.Contains(rest, "StartLimit") {
		t.Errorf("[Unit] lacks the start limit:\n%s", script)
	}
	if p.cfg.Executable != "/opt/a$$b/mcphub" {
		t.Errorf("executable %q", p.cfg.Executable)
	}
	if want := []string{"serve", "--config", "/etc/x$${HOME}/hub.toml", "--data-dir", "/var/100%%"}; !slices.Equal(p.cfg.Arguments, want) {
		t.Errorf("arguments %q, want %q", p.cfg.Arguments, want)
	}
	if env, _ := serviceEnv("linux", []string{"PATH=/opt/$dir:/usr/bin"}); env["PATH"] != "/opt/$dir:/usr/bin" {
		t.Errorf("Environment= value %q: systemd does not expand $ there", env["PATH"])
	}
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
		var opened []*service.Config
		h := fakeServiceHost(t, "darwin", &fakeServiceManager{}, &opened)
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
	f := &fakeServiceManager{}
	var opened []*service.Config
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
