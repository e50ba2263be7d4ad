package keychain

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/mcphub/mcphub/internal/filelock"
)

// The file is one JSON object, key → base64 of the secret, mode 0600 in a
// directory of mode 0700. On Windows these modes mean nothing (Go sets only
// the read-only bit); there the file is private because mcphub's data
// directory lies under the user's profile, whose ACL admits only the user
// and the system.
//
// Every read and write happens under an exclusive OS lock (filelock) on
// ".oauth.json.lock" beside the file, which serializes Stores in this
// process and in others. A write replaces the file by renaming a complete
// temporary file over it, so a crash never leaves half a file. Readers take
// the lock too: on Windows a file that another process has open cannot be
// renamed over. The lock file is never removed (see registry/lock.go for
// why).

// ErrCorrupt reports that the secrets file cannot be read as what the Store
// writes.
var ErrCorrupt = errors.New("the secrets file is corrupt")

// lockTimeout is how long an operation waits for another's lock on the
// file; one takes milliseconds.
const lockTimeout = 10 * time.Second

// fileLoad returns the secret under key in the file, nil when the file or
// the key is absent.
func (s *Store) fileLoad(key string) ([]byte, error) {
	if _, err := os.Stat(s.path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	unlock, err := s.lockFile()
	if err != nil {
		return nil, err
	}
	defer unlock()
	m, err := s.readFile()
	if err != nil {
		return nil, err
	}
	value, ok := m[key]
	if !ok {
		return nil, nil
	}
	data, err := base64.StdEncoding.DecodeString(value)
	if err != nil {
		return nil, s.corrupt(fmt.Errorf("entry %q is not base64: %w", key, err))
	}
	return data, nil
}

// fileSave puts value, already base64, under key in the file.
func (s *Store) fileSave(key, value string) error {
	return s.updateFile(true, func(m map[string]string) bool {
		if old, ok := m[key]; ok && old == value {
			return false
		}
		m[key] = value
		return true
	})
}

// fileDelete removes key from the file; an absent file or key is not an
// error. The file is removed when its last key goes.
func (s *Store) fileDelete(key string) error {
	if _, err := os.Stat(s.path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return s.updateFile(false, func(m map[string]string) bool {
		if _, ok := m[key]; !ok {
			return false
		}
		delete(m, key)
		return true
	})
}

// updateFile applies change to the file's entries under the lock and writes
// them back if change reports it changed them. create makes the directory
// first when it is missing.
func (s *Store) updateFile(create bool, change func(map[string]string) bool) error {
	if create {
		if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
			return fmt.Errorf("keychain: file: %w", err)
		}
	}
	unlock, err := s.lockFile()
	if err != nil {
		return err
	}
	defer unlock()
	m, err := s.readFile()
	if err != nil {
		return err
	}
	if !change(m) {
		return nil
	}
	if len(m) == 0 {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("keychain: file: %w", err)
		}
		return nil
	}
	return s.writeFile(m)
}

// lockFile takes the cross-process lock of the file, waiting up to
// lockTimeout, and returns the function that releases it.
func (s *Store) lockFile() (unlock func(), err error) {
	lp := filepath.Join(filepath.Dir(s.path), "."+FileName+".lock")
	f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("keychain: file lock: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lockTimeout)
	defer cancel()
	if err := filelock.Lock(ctx, f); err != nil {
		f.Close()
		if errors.Is(err, filelock.ErrLocked) {
			return nil, fmt.Errorf("keychain: file %s: waited %s for another mcphub process to finish with it: %w",
				s.path, lockTimeout, err)
		}
		return nil, fmt.Errorf("keychain: file lock: %w", err)
	}
	return func() {
		_ = filelock.Unlock(f)
		_ = f.Close()
	}, nil
}

// readFile returns the file's entries, none when it does not exist. The
// lock must be held.
func (s *Store) readFile() (map[string]string, error) {
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("keychain: file: %w", err)
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		// The decoder's message can quote the file's text; say only where.
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, s.corrupt(fmt.Errorf("invalid JSON at byte %d", syn.Offset))
		}
		return nil, s.corrupt(errors.New("not a JSON object of names to strings"))
	}
	if m == nil {
		return nil, s.corrupt(errors.New("not a JSON object of names to strings"))
	}
	return m, nil
}

// corrupt is the error for a secrets file that cannot be read, with how to
// recover.
func (s *Store) corrupt(why error) error {
	return fmt.Errorf("keychain: file %s: %w (%w); delete it and log in to its servers again",
		s.path, ErrCorrupt, why)
}

// writeFile replaces the file with m: a temporary file (mode 0600) in the
// same directory, synced, then renamed over it. The lock must be held.
func (s *Store) writeFile(m map[string]string) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("keychain: file: %w", err)
	}
	b = append(b, '\n')
	dir := filepath.Dir(s.path)
	tmp, err := os.CreateTemp(dir, "."+FileName+".*.tmp") // created with mode 0600
	if err != nil {
		return fmt.Errorf("keychain: file: %w", err)
	}
	name := tmp.Name()
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, s.path)
	}
	if err != nil {
		_ = os.Remove(name)
		return fmt.Errorf("keychain: file %s: write: %w", s.path, err)
	}
	syncDir(dir)
	return nil
}

// syncDir makes a rename in dir durable where the system allows syncing a
// directory; elsewhere (Windows) it does nothing.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}
