package clientconf

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// clientFile is a client's config file as read from disk.
type clientFile struct {
	// path is the file edited: the given path, or the file a symlink
	// there points to (also when that file does not exist yet), so that
	// the link stays a link.
	path   string
	data   []byte
	exists bool
	mode   fs.FileMode
	// bom is set when the file starts with a UTF-8 byte order mark, which
	// is kept out of parsing and written back.
	bom bool
}

// maxLinks bounds a chain of symlinks followed by hand.
const maxLinks = 40

func readClientFile(path string) (*clientFile, error) {
	f := &clientFile{path: path, mode: 0o600}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		f.path = real
	} else if target, ok := danglingTarget(path); ok {
		f.path = target
	}
	info, err := os.Stat(f.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return f, nil
	case err != nil:
		return nil, err
	case !info.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	f.data, err = os.ReadFile(f.path)
	if err != nil {
		return nil, err
	}
	f.exists, f.mode, f.bom = true, info.Mode().Perm(), bytes.HasPrefix(f.data, utf8BOM)
	return f, nil
}

// danglingTarget follows a symlink (or a chain of them) whose final target
// does not exist yet, such as ~/.cursor/mcp.json pointing into a dotfiles
// directory, and returns that target, so that writing creates it instead
// of replacing the link.
func danglingTarget(path string) (string, bool) {
	p, linked := path, false
	for range maxLinks {
		info, err := os.Lstat(p)
		if err != nil || info.Mode()&fs.ModeSymlink == 0 {
			return p, linked && errors.Is(err, fs.ErrNotExist)
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", false
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		p, linked = target, true
	}
	return "", false
}

// content is the file's text without its byte order mark.
func (f *clientFile) content() []byte { return bytes.TrimPrefix(f.data, utf8BOM) }

// withBOM puts the file's byte order mark, if it had one, back on out.
func (f *clientFile) withBOM(out []byte) []byte {
	if !f.bom {
		return out
	}
	return append(bytes.Clone(utf8BOM), out...)
}

// errChanged means the file changed while mcphub was editing it.
var errChanged = errors.New("the file changed while mcphub was editing it")

// replace writes data over the file atomically (a temporary file in the
// same directory, renamed over it), keeping the file's mode, after keeping
// a timestamped copy of the old file beside it. It returns the copy's path,
// "" for a new file. If the file changed since it was read it returns
// errChanged and changes nothing.
func (f *clientFile) replace(data []byte, now time.Time) (string, error) {
	dir := filepath.Dir(f.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(f.path)+".mcphub-*.tmp")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(f.mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("write %s: %w", f.path, err)
	}
	now2, err := readClientFile(f.path)
	if err != nil {
		return "", err
	}
	if now2.exists != f.exists || !bytes.Equal(now2.data, f.data) {
		return "", errChanged
	}
	backup := ""
	if f.exists {
		if backup, err = f.backup(now); err != nil {
			return "", err
		}
	}
	if err := os.Rename(tmp.Name(), f.path); err != nil {
		return "", fmt.Errorf("replace %s: %w", f.path, err)
	}
	return backup, nil
}

// backup copies the file as read to <file>.mcphub-backup-<UTC time>, with
// a counter when that name is taken, and the file's mode.
func (f *clientFile) backup(now time.Time) (string, error) {
	base := f.path + ".mcphub-backup-" + now.UTC().Format("20060102T150405Z")
	for i := 1; i < 1000; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		out, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("back up %s: %w", f.path, err)
		}
		_, err = out.Write(f.data)
		if err == nil {
			err = out.Sync()
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(name)
			return "", fmt.Errorf("back up %s: %w", f.path, err)
		}
		return name, nil
	}
	return "", fmt.Errorf("back up %s: too many backups named %s*", f.path, base)
}
