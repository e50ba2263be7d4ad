package filelock

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestExchange(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for path, text := range map[string]string{a: "A", b: "B"} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	err := Exchange(a, b)
	if errors.Is(err, ErrExchangeUnsupported) {
		t.Skip("no atomic exchange on this system or filesystem")
	}
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{a: "B", b: "A"} {
		if got, err := os.ReadFile(path); err != nil || string(got) != want {
			t.Errorf("%s after Exchange = %q, %v; want %q", filepath.Base(path), got, err, want)
		}
	}
	if err := Exchange(a, filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Exchange with a missing file = %v, want fs.ErrNotExist", err)
	}
	if got, err := os.ReadFile(a); err != nil || string(got) != "B" {
		t.Errorf("a failed Exchange changed a: %q, %v", got, err)
	}
}
