package logfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcphub/mcphub/logfile/logfiletest"
)

// The rest of a rotated hub.log is found even once lumberjack compressed
// it and removed the .log; a last line without its newline waits. The old
// hub.log is removed before the new one is made, so the new one may get its
// inode number: its first bytes tell them apart.
func TestFollowReadsCompressedRotatedRest(t *testing.T) {
	data := t.TempDir()
	dir := Dir(data)
	logfiletest.WriteFiles(t, dir, map[string][]string{"hub.log": {`{"msg":"one"}`}})
	_, pos, err := readCurrent(dir)
	if err != nil || pos.off == 0 {
		t.Fatalf("readCurrent: %+v %v", pos, err)
	}
	os.Remove(filepath.Join(dir, FileName))
	logfiletest.WriteFiles(t, dir, map[string][]string{
		"hub-2026-11-25T10-00-00.000.log.gz": {`{"msg":"one"}`, `{"msg":"two"}`},
	})
	os.WriteFile(filepath.Join(dir, FileName), []byte("{\"msg\":\"three\"}\n{\"msg\":\"fo"), 0o600)
	var got []string
	emit := func(l []byte) error { got = append(got, string(l)); return nil }
	pos, err = followOnce(dir, pos, emit)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != `{"msg":"two"}|{"msg":"three"}` {
		t.Errorf("after the rotation: %q", got)
	}
	f, _ := os.OpenFile(filepath.Join(dir, FileName), os.O_APPEND|os.O_WRONLY, 0o600)
	f.WriteString("ur\"}\n")
	f.Close()
	got = nil
	if _, err := followOnce(dir, pos, emit); err != nil || strings.Join(got, "|") != `{"msg":"four"}` {
		t.Errorf("the completed line: %q %v", got, err)
	}
}

// When the hub rotated twice between two looks, the follower finds the
// file it read by its first bytes (compressed by now) and emits its rest,
// then the whole of the hub.log in between, then the new one.
func TestFollowTwoRotationsBetweenLooks(t *testing.T) {
	data := t.TempDir()
	dir := Dir(data)
	logfiletest.WriteFiles(t, dir, map[string][]string{
		"hub-2026-11-25T09-00-00.000.log.gz": {`{"msg":"older"}`},
		"hub.log":                            {`{"msg":"one"}`},
	})
	_, pos, err := readCurrent(dir)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, FileName))
	logfiletest.WriteFiles(t, dir, map[string][]string{
		"hub-2026-11-25T10-00-00.000.log.gz": {`{"msg":"one"}`, `{"msg":"two"}`},
		"hub-2026-11-25T10-00-01.000.log":    {`{"msg":"three"}`, `{"msg":"four"}`},
		"hub.log":                            {`{"msg":"five"}`},
	})
	var got []string
	if _, err := followOnce(dir, pos, func(l []byte) error { got = append(got, string(l)); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := `{"msg":"two"}|{"msg":"three"}|{"msg":"four"}|{"msg":"five"}`; strings.Join(got, "|") != want {
		t.Errorf("after two rotations:\n got %s\nwant %s", strings.Join(got, "|"), want)
	}
}

// A reader of the log never stands in the way of the hub's rotation, which
// renames hub.log while logs -f may have it open (on Windows, os.Open's
// sharing does not allow that).
func TestFileRenamedWhileOpen(t *testing.T) {
	data := t.TempDir()
	logfiletest.WriteFiles(t, Dir(data), map[string][]string{"hub.log": {`{"msg":"one"}`}})
	path := filepath.Join(Dir(data), FileName)
	f, err := openLogForRead(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rotated := filepath.Join(Dir(data), "hub-2026-11-25T10-00-00.000.log")
	if err := os.Rename(path, rotated); err != nil {
		t.Fatalf("rename while open: %v", err)
	}
	buf := make([]byte, 64)
	if n, err := f.ReadAt(buf, 0); string(buf[:n]) != "{\"msg\":\"one\"}\n" {
		t.Errorf("read after the rename: %q (%v)", buf[:n], err)
	}
	if err := os.Remove(rotated); err != nil {
		t.Errorf("remove while open: %v", err)
	}
	if _, err := openLogForRead(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("open of a missing file: %v, want fs.ErrNotExist", err)
	}
}
