package service

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	kservice "github.com/kardianos/service"

	"github.com/mcphub/mcphub/service/servicetest"
)

func TestInstallWindowsPassword(t *testing.T) {
	plan := func(t *testing.T, f *servicetest.Manager, r Request) (Host, *Plan) {
		t.Helper()
		var opened []*kservice.Config
		h := fakeHost(t, "windows", f, &opened)
		p, err := h.PlanInstall(r)
		if err != nil {
			t.Fatal(err)
		}
		return h, p
	}

	t.Run("from the terminal", func(t *testing.T) {
		r := testRequest("hub.toml", "data")
		prompt := &strings.Builder{}
		r.Terminal.Prompt = prompt
		h, p := plan(t, &servicetest.Manager{}, r)
		if _, err := h.Install(p); err != nil {
			t.Fatal(err)
		}
		if p.Config.UserName != `CORP\u` || p.Config.Option["Password"] != servicetest.Password {
			t.Errorf("runs as %q, password set %v", p.Config.UserName, p.Config.Option["Password"] == servicetest.Password)
		}
		if !strings.Contains(prompt.String(), `Windows password of CORP\u`) || strings.Contains(prompt.String(), servicetest.Password) {
			t.Errorf("prompt %q", prompt.String())
		}
	})

	t.Run("from stdin", func(t *testing.T) {
		r := testRequest("hub.toml", "data")
		r.PasswordStdin = true
		r.Terminal.Stdin = strings.NewReader(servicetest.Password + "\r\nnext line\n")
		r.Terminal.ReadPassword = func() ([]byte, error) { t.Error("asked the terminal with --password-stdin"); return nil, nil }
		h, p := plan(t, &servicetest.Manager{}, r)
		if _, err := h.Install(p); err != nil || p.Config.Option["Password"] != servicetest.Password {
			t.Errorf("%v, password set %v", err, p.Config.Option["Password"] == servicetest.Password)
		}
	})

	t.Run("no terminal", func(t *testing.T) {
		r := testRequest("hub.toml", "data")
		r.Terminal.IsTerminal = func() bool { return false }
		f := &servicetest.Manager{}
		h, p := plan(t, f, r)
		if _, err := h.Install(p); err == nil || !strings.Contains(err.Error(), "--password-stdin") || len(f.Calls) != 0 {
			t.Errorf("%v, calls %v", err, f.Calls)
		}
	})

	t.Run("empty password", func(t *testing.T) {
		r := testRequest("hub.toml", "data")
		r.PasswordStdin = true
		f := &servicetest.Manager{}
		h, p := plan(t, f, r)
		if _, err := h.Install(p); err == nil || !strings.Contains(err.Error(), "no password given") || len(f.Calls) != 0 {
			t.Errorf("%v, calls %v", err, f.Calls)
		}
	})

	t.Run("a refused reinstall keeps the service", func(t *testing.T) {
		r := testRequest("hub.toml", "data")
		r.Force = true
		r.Terminal.ReadPassword = func() ([]byte, error) { return nil, errors.New("the terminal went away") }
		f := &servicetest.Manager{Installed: true, Running: true}
		h, p := plan(t, f, r)
		if _, err := h.Install(p); err == nil || !strings.Contains(err.Error(), "reading the password") || len(f.Calls) != 0 {
			t.Errorf("%v, calls %v", err, f.Calls)
		}
	})

	t.Run("--password-stdin elsewhere", func(t *testing.T) {
		r := testRequest("hub.toml", "data")
		r.PasswordStdin = true
		var opened []*kservice.Config
		h := fakeHost(t, "linux", &servicetest.Manager{}, &opened)
		if _, err := h.PlanInstall(r); err == nil || !strings.Contains(err.Error(), "only a Windows service needs your password") {
			t.Errorf("%v", err)
		}
	})
}

// A go run build is refused before anything is planned, but only once the
// service manager is known to be usable.
func TestPlanInstallAsksForTheExecutableLast(t *testing.T) {
	var opened []*kservice.Config
	h := fakeHost(t, "linux", &servicetest.Manager{}, &opened)
	h.Platform = "unix-systemv"
	r := testRequest("hub.toml", "data")
	r.Executable = func() (string, error) {
		t.Error("asked for the executable on an unusable host")
		return "", errors.New("no")
	}
	if _, err := h.PlanInstall(r); err == nil || !strings.Contains(err.Error(), "systemd") {
		t.Errorf("%v", err)
	}
	h.Platform = "linux-systemd"
	r.Executable = func() (string, error) { return "", errors.New("built by go run") }
	if _, err := h.PlanInstall(r); err == nil || err.Error() != "built by go run" {
		t.Errorf("%v", err)
	}
}

func TestShellOnly(t *testing.T) {
	for _, goos := range []string{"linux", "windows"} {
		var opened []*kservice.Config
		h := fakeHost(t, goos, &servicetest.Manager{}, &opened)
		p, err := h.PlanInstall(testRequest("hub.toml", "data"))
		if err != nil {
			t.Fatal(err)
		}
		got := p.ShellOnly([]string{"GITHUB_TOKEN", "PATH", "HOME", "NOT_SET", "github_token"})
		want := []string{"GITHUB_TOKEN"}
		if goos == "windows" {
			want = []string{"GITHUB_TOKEN", "HOME", "github_token"}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: shell-only %q, want %q", goos, got, want)
		}
	}
}

func TestSetInManager(t *testing.T) {
	for goos, want := range map[string]string{
		"linux":   "systemctl --user edit mcphub and add under [Service] Environment=A=... Environment=B=... (kept in " + filepath.Join("/u", "mcphub.service.d", "override.conf") + ")",
		"darwin":  "add A, B under EnvironmentVariables in /u/mcphub.service",
		"windows": "add A=... B=... to the Environment value of /u/mcphub.service",
	} {
		h := Host{GOOS: goos}
		if got := h.SetInManager("/u/mcphub.service", "A", "B"); !strings.Contains(got, want) || !strings.HasPrefix(got, "to give them") {
			t.Errorf("%s: %q lacks %q", goos, got, want)
		}
	}
}
