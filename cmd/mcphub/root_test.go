package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcphub/mcphub/store"
)

// runCLI runs mcphub in-process and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestHelpExplainsMcphub(t *testing.T) {
	for _, args := range [][]string{nil, {"--help"}} {
		code, out, _ := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("mcphub %v exited %d", args, code)
		}
		for _, want := range []string{"Model Context Protocol", "hub.toml", "--config", "--data-dir", "MCPHUB_CONFIG", "MCPHUB_DATA", "version"} {
			if !strings.Contains(out, want) {
				t.Errorf("mcphub %v: help lacks %q:\n%s", args, want, out)
			}
		}
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(out, "mcphub ") || !strings.Contains(out, "2025-11-25") {
		t.Fatalf("version: exit %d, output %q", code, out)
	}
}

func TestUnknownCommandFails(t *testing.T) {
	code, _, errOut := runCLI(t, "frobnicate")
	if code == 0 || !strings.Contains(errOut, "unknown command") {
		t.Fatalf("unknown command: exit %d, stderr %q", code, errOut)
	}
}

func TestConfigAndDataDirFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("MCPHUB_CONFIG", filepath.Join(dir, "custom.toml"))
	t.Setenv("MCPHUB_DATA", filepath.Join(dir, "state"))
	a := &app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	root := newRootCmd(a)
	root.SetArgs([]string{"version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if a.configPath != filepath.Join(dir, "custom.toml") || a.dataDir != filepath.Join(dir, "state") {
		t.Errorf("env not honoured: config %q data %q", a.configPath, a.dataDir)
	}

	a = &app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	root = newRootCmd(a)
	root.SetArgs([]string{"--config", "/x/hub.toml", "--data-dir", "/y", "version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if a.configPath != "/x/hub.toml" || a.dataDir != "/y" {
		t.Errorf("flags must win over env: config %q data %q", a.configPath, a.dataDir)
	}
}

func TestDefaultPathsUnderUserDirs(t *testing.T) {
	home := t.TempDir()
	t.Setenv("MCPHUB_CONFIG", "")
	t.Setenv("MCPHUB_DATA", "")
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("XDG_DATA_HOME", "")
	a := &app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	root := newRootCmd(a)
	root.SetArgs([]string{"version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, ".config", "mcphub", "hub.toml"); a.configPath != want {
		t.Errorf("default config %q; want %q", a.configPath, want)
	}
	if want := filepath.Join(home, ".local", "share", "mcphub"); a.dataDir != want {
		t.Errorf("default data dir %q; want %q", a.dataDir, want)
	}
}

// TestDefaultDataDirKeepsAnEarlierStore: where an earlier mcphub kept its
// store elsewhere by default (macOS: ~/.local/share/mcphub), that store goes
// on being used until the new place has one; MCPHUB_DATA always wins.
func TestDefaultDataDirKeepsAnEarlierStore(t *testing.T) {
	t.Setenv("MCPHUB_DATA", "")
	now, old := t.TempDir(), t.TempDir()
	if got := defaultDataDir(now, old); got != now {
		t.Errorf("with no store anywhere: %q, want %q", got, now)
	}
	if got := defaultDataDir(now, ""); got != now {
		t.Errorf("with no earlier place: %q, want %q", got, now)
	}
	os.WriteFile(filepath.Join(old, store.FileName), nil, 0o600)
	if got := defaultDataDir(now, old); got != old {
		t.Errorf("with a store only in the earlier place: %q, want %q", got, old)
	}
	t.Setenv("MCPHUB_DATA", "/elsewhere")
	if got := defaultDataDir(now, old); got != now {
		t.Errorf("with MCPHUB_DATA set: %q, want %q (the flag default is not used then)", got, now)
	}
	t.Setenv("MCPHUB_DATA", "")
	os.WriteFile(filepath.Join(now, store.FileName), nil, 0o600)
	if got := defaultDataDir(now, old); got != now {
		t.Errorf("with a store in both: %q, want the new %q", got, now)
	}
}

// Cobra's own errors say how the command is used and where its help is.
func TestUsageErrorsExplain(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"restart"}, "usage: mcphub restart NAME [flags] (see mcphub restart --help)"},
		{[]string{"tools", "ls", "a", "b"}, "(see mcphub tools ls --help)"},
		{[]string{"list", "--bogus"}, "unknown flag: --bogus (see mcphub list --help)"},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("mcphub %q: exit %d, stderr %q; want %q", tc.args, code, errOut, tc.want)
		}
	}
}
