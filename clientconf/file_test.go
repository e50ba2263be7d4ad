package clientconf

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestClientFileBackupsAndReplace: backups keep the old bytes and mode and
// never overwrite each other; a file that changed since it was read is not
// replaced.
func TestClientFileBackupsAndReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "c.json")
	now := time.Date(2026, 5, 1, 12, 30, 45, 0, time.FixedZone("x", 3600))

	f, _ := readClientFile(path)
	if b, err := f.replace([]byte("one"), now); err != nil || b != "" {
		t.Fatalf("new file: backup %q, %v", b, err)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("a new file must have mode 0600: %v", err)
	}
	os.Chmod(path, 0o640)
	var backups []string
	for _, next := range []string{"two", "three"} {
		f, _ := readClientFile(path)
		b, err := f.replace([]byte(next), now)
		if err != nil {
			t.Fatal(err)
		}
		backups = append(backups, b)
	}
	base := path + ".mcphub-backup-20260501T113045Z"
	if !slices.Equal(backups, []string{base, base + "-2"}) {
		t.Errorf("backups %q", backups)
	}
	for i, want := range []string{"one", "two"} {
		data, _ := os.ReadFile(backups[i])
		info, _ := os.Stat(backups[i])
		if string(data) != want || info.Mode().Perm() != 0o640 {
			t.Errorf("backup %d: %q mode %v", i, data, info.Mode().Perm())
		}
	}

	f, _ = readClientFile(path)
	os.WriteFile(path, []byte("changed by the client"), 0o640)
	if _, err := f.replace([]byte("four"), now.Add(time.Second)); !errors.Is(err, errChanged) {
		t.Errorf("replace over a changed file: %v", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "changed by the client" {
		t.Errorf("the client's change was lost: %q", data)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 3 {
		t.Errorf("left behind: %v", entries)
	}

	// A symlink stays a link; the file it points to is edited.
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(path, link); err == nil {
		f, _ := readClientFile(link)
		if _, err := f.replace([]byte("via link"), now); err != nil {
			t.Fatal(err)
		}
		if info, _ := os.Lstat(link); info.Mode()&os.ModeSymlink == 0 {
			t.Error("the symlink was replaced by a file")
		}
		if data, _ := os.ReadFile(path); string(data) != "via link" {
			t.Errorf("target: %q", data)
		}
	}
}
