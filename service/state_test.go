package service

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	kservice "github.com/kardianos/service"

	"github.com/mcphub/mcphub/service/servicetest"
)

func TestReady(t *testing.T) {
	var opened []*kservice.Config
	h := fakeHost(t, "linux", &servicetest.Manager{}, &opened)
	if err := h.Ready(); err != nil {
		t.Fatal(err)
	}
	h.Probe = func() error { return fmt.Errorf("%w: systemctl --user: Failed to connect to bus", ErrNoUserManager) }
	if err := h.Ready(); err == nil || !strings.Contains(err.Error(), "loginctl enable-linger $USER") {
		t.Errorf("no session bus: %v", err)
	}
	h.Platform = "unix-systemv"
	if err := h.Ready(); err == nil || !strings.Contains(err.Error(), "systemd is not this system's service manager") {
		t.Errorf("not systemd: %v", err)
	}
	h.GOOS = "plan9"
	if err := h.Ready(); err == nil || !strings.Contains(err.Error(), "not plan9") {
		t.Errorf("plan9: %v", err)
	}
}

func TestUnitFile(t *testing.T) {
	for goos, want := range map[string]string{
		"linux":   filepath.Join(".config", "systemd", "user", "mcphub.service"),
		"darwin":  filepath.Join("Library", "LaunchAgents", "mcphub.plist"),
		"windows": `HKLM\SYSTEM\CurrentControlSet\Services\mcphub`,
	} {
		var opened []*kservice.Config
		h := fakeHost(t, goos, &servicetest.Manager{}, &opened)
		got, err := h.UnitFile()
		if err != nil || !strings.HasSuffix(got, want) {
			t.Errorf("%s: unit file %q (%v), want …%s", goos, got, err, want)
		}
	}
}

// Install, Stop, Start and Uninstall drive the manager in turn, and each
// reports the state after.
func TestInstallAndControl(t *testing.T) {
	f := &servicetest.Manager{}
	var opened []*kservice.Config
	h := fakeHost(t, "linux", f, &opened)
	st, err := h.Status()
	if err != nil || st.Installed || st.State != "not installed" {
		t.Fatalf("status before install: %+v, %v", st, err)
	}

	p, err := h.PlanInstall(testRequest("hub.toml", "data"))
	if err != nil {
		t.Fatal(err)
	}
	p.req.Holder = func() int { return 4242 }
	done, err := h.Install(p)
	if err != nil || done.State.State != "running" || done.Holder != 4242 || !slices.Equal(f.Calls, []string{"install", "start"}) {
		t.Fatalf("install: %+v, %v, calls %v", done, err, f.Calls)
	}
	if _, err := h.Install(p); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("second install: %v", err)
	}
	p.req.Force = true
	f.Calls = nil
	if _, err := h.Install(p); err != nil || !slices.Equal(f.Calls, []string{"stop", "uninstall", "install", "start"}) {
		t.Errorf("install --force: %v, calls %v", err, f.Calls)
	}

	f.Calls = nil
	if st, err := h.Stop(); err != nil || st.State != "stopped" || !st.Installed {
		t.Errorf("stop: %+v, %v", st, err)
	}
	if st, err := h.Start(); err != nil || st.State != "running" {
		t.Errorf("start: %+v, %v", st, err)
	}
	if st, err := h.Start(); err != nil || st.State != "running" {
		t.Errorf("start when running: %+v, %v", st, err)
	}
	if st, removed, err := h.Uninstall(); err != nil || !removed || st.Installed {
		t.Errorf("uninstall: %+v, removed %v, %v", st, removed, err)
	}
	if !slices.Equal(f.Calls, []string{"stop", "start", "stop", "uninstall"}) {
		t.Errorf("calls %v", f.Calls)
	}
	if _, removed, err := h.Uninstall(); err != nil || removed {
		t.Errorf("second uninstall: removed %v, %v", removed, err)
	}
	if _, err := h.Start(); err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Errorf("start when not installed: %v", err)
	}
	if _, err := h.Stop(); err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Errorf("stop when not installed: %v", err)
	}
}

// A unit file that the manager never loaded counts as installed, and
// uninstall removes it by hand.
func TestUnitFileWithoutManager(t *testing.T) {
	f := &servicetest.Manager{}
	var opened []*kservice.Config
	h := fakeHost(t, "linux", f, &opened)
	unit, _ := h.UnitFile()
	if err := os.MkdirAll(filepath.Dir(unit), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(unit, []byte("[Unit]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := h.Status()
	if err != nil || !st.Installed || st.State != "stopped" {
		t.Fatalf("status: %+v, %v", st, err)
	}
	f.Installed = true // Uninstall of the fake succeeds; the real one would fail
	if _, removed, err := h.Uninstall(); err != nil || !removed {
		t.Errorf("uninstall: removed %v, %v", removed, err)
	}
}

func TestStatusSaysWhatFails(t *testing.T) {
	var opened []*kservice.Config
	h := fakeHost(t, "linux", &servicetest.Manager{}, &opened)
	h.Probe = func() error { return fmt.Errorf("%w: systemctl --user: no bus", ErrNoUserManager) }
	st, err := h.Status()
	if err == nil || st.State != "unavailable" || st.Error != err.Error() || st.UnitFile == "" || len(opened) != 0 {
		t.Errorf("status: %+v, %v, opened %d", st, err, len(opened))
	}

	h = fakeHost(t, "linux", &servicetest.Manager{StatusErr: errors.New("service in failed state"), Installed: true}, &opened)
	if st, err := h.Status(); err != nil || st.State != "failed" || !st.Installed {
		t.Errorf("failed unit: %+v, %v", st, err)
	}

	f := &servicetest.Manager{Installed: true, Running: true}
	h = fakeHost(t, "linux", f, &opened)
	h.UnitState = func() (string, string, error) { return "activating", "auto-restart", nil }
	if st, err := h.Status(); err != nil || st.State != "restarting" {
		t.Errorf("restarting unit: %+v, %v", st, err)
	}
	if _, err := h.Stop(); err != nil || !slices.Equal(f.Calls, []string{"stop"}) {
		t.Errorf("stop of a restarting unit: %v, calls %v", err, f.Calls)
	}
}

func TestErrorsSayTheFix(t *testing.T) {
	for _, tc := range []struct {
		goos string
		err  error
		want string
	}{
		{"windows", fmt.Errorf("OpenSCManager: %w", fs.ErrPermission), "Run as administrator"},
		{"windows", ErrLogonFailed, "Log on as a service"},
		{"linux", errors.New("exit status 1"), "systemctl --user status mcphub.service"},
		{"darwin", errors.New("exit status 5"), "cannot start the mcphub service: exit status 5"},
	} {
		if err := explain(tc.goos, "start", tc.err); !strings.Contains(err.Error(), tc.want) || !errors.Is(err, tc.err) {
			t.Errorf("%s %v: %v, want %q", tc.goos, tc.err, err, tc.want)
		}
	}
}
