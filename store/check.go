package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrClosed is returned by Check on a closed store.
var ErrClosed = errors.New("store: closed")

// Check reports whether the store still reaches its database. PostgreSQL is
// asked with a ping, whose error says the database is unreachable. For
// SQLite it reports whether the store still writes to the database file it
// opened: when that file was deleted or replaced while serving (a cleanup
// of the data directory, a restore), everything written from then on would
// go to a file nobody can open again and be lost at the next start, so
// Check closes the old handle, opens what is at the path now, creating a
// fresh database (with every migration) when nothing is, and reports
// recreated: the caller then writes what it holds again.
//
// The -wal and -shm files beside the database belong to the database file
// they were made with, and SQLite does not checkpoint or remove them when
// it closes a database whose file has moved: when only mcphub.db was
// deleted or replaced, the old ones stay behind, and a replacement would be
// read through the old WAL's pages, corrupt. So once the old handle is
// closed, whatever -wal and -shm are at the path are removed before the
// database there is opened. (A database restored by copying or
// renaming one file over mcphub.db has none of its own: a cleanly closed
// SQLite database is a single file.)
//
// Check holds the write lock throughout, so a concurrent Write waits and
// then goes to the new database, where writes for sessions it does not hold
// are skipped rather than failed. If the new database cannot be opened,
// reads and writes fail until a later Check succeeds.
func (s *Store) Check() (recreated bool, err error) {
	if s.path == "" {
		// Not under the write lock: a database that does not answer
		// must not hold up the writes that will fail on their own.
		return false, s.ping()
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closed {
		return false, ErrClosed
	}
	cur, err := os.Stat(s.path)
	if err == nil && os.SameFile(s.file, cur) {
		return false, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("store: %w", err)
	}
	s.hmu.Lock()
	defer s.hmu.Unlock()
	// The file it was writing to is gone: what closing says about it no
	// longer matters.
	_ = s.handle.close()
	s.shrunk.Add(1)
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Remove(s.path + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("store: remove the old database's %s: %w", suffix, err)
		}
	}
	h, err := openSQLite(s.path)
	if err != nil {
		return false, err
	}
	s.handle = h
	return true, nil
}
