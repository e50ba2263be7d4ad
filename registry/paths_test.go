package registry

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestDefaultPaths(t *testing.T) {
	t.Setenv("MCPHUB_CONFIG", "/x/hub.toml")
	t.Setenv("MCPHUB_DATA", "/y")
	if DefaultPath() != "/x/hub.toml" || DefaultDataDir() != "/y" {
		t.Fatalf("overrides: %q %q", DefaultPath(), DefaultDataDir())
	}
	t.Setenv("MCPHUB_CONFIG", "")
	t.Setenv("MCPHUB_DATA", "")
	t.Setenv("XDG_CONFIG_HOME", "/cfg")
	t.Setenv("HOME", "/home/u")
	if got := DefaultPath(); filepath.Base(got) != "hub.toml" || filepath.Base(filepath.Dir(got)) != "mcphub" {
		t.Errorf("DefaultPath = %q", got)
	}
	if got := DefaultDataDir(); filepath.Base(got) != "mcphub" || !filepath.IsAbs(got) {
		t.Errorf("DefaultDataDir = %q", got)
	}
}

func TestEnsureExists(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conf", "mcphub", "hub.toml")
	created, err := EnsureExists(path)
	if err != nil || !created {
		t.Fatalf("EnsureExists = %v, %v", created, err)
	}
	assertMode(t, path, 0o600)
	st, err := os.Stat(filepath.Dir(path))
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode: %v %v", st.Mode(), err)
	}
	if got := readFile(t, path); !bytes.Equal([]byte(got), DefaultRegistry()) {
		t.Fatal("content differs from the default registry")
	}
	if _, err := Load(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("# mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	created, err = EnsureExists(path)
	if err != nil || created || readFile(t, path) != "# mine\n" {
		t.Fatalf("existing file: created=%v err=%v", created, err)
	}
}
