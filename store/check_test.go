package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// sessionIDs lists the stored sessions' ids, sorted.
func sessionIDs(t testing.TB, s *Store) []string {
	t.Helper()
	return slices.Sorted(maps.Keys(sessionsByID(t, s)))
}

// writeSession stores a session with a stream and two events.
func writeSession(t testing.TB, s *Store, id string) {
	t.Helper()
	write(t, s,
		Op{Session: session(id, t0)},
		Op{Stream: &Stream{ID: id + "/get", Session: id}},
		event(id, id+"/get", 0, ""),
		event(id, id+"/get", 1, "event of "+id),
	)
}

// integrity runs SQLite's own consistency check.
func integrity(t testing.TB, s *Store) {
	t.Helper()
	var res string
	if err := s.db.QueryRow(`PRAGMA integrity_check`).Scan(&res); err != nil || res != "ok" {
		t.Errorf("integrity_check = %q, %v", res, err)
	}
}

func TestCheckKeepsAnUntouchedDatabase(t *testing.T) {
	s := openT(t, t.TempDir())
	for i := range 3 {
		writeSession(t, s, fmt.Sprint("s", i))
		if recreated, err := s.Check(); recreated || err != nil {
			t.Fatalf("Check on an untouched database = %v, %v; want false, nil", recreated, err)
		}
	}
	if got := sessionIDs(t, s); len(got) != 3 {
		t.Errorf("sessions = %v, want 3", got)
	}
}

func TestCheckRecreatesDeletedDatabase(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remove func(t *testing.T, path string)
	}{
		{"database file only", func(t *testing.T, path string) {
			// The -wal holds the last writes; it stays behind.
			if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
				t.Fatalf("setup: want a non-empty -wal beside the database: %v", err)
			}
			mustRemove(t, path)
		}},
		{"database, -wal and -shm", func(t *testing.T, path string) {
			for _, p := range []string{path, path + "-wal", path + "-shm"} {
				mustRemove(t, p)
			}
		}},
		{"the whole data directory", func(t *testing.T, path string) {
			if err := os.RemoveAll(filepath.Dir(path)); err != nil {
				skipOpenFileBusy(t, err)
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			writeSession(t, s, "before")
			tc.remove(t, s.Path())

			recreated, err := s.Check()
			if err != nil || !recreated {
				t.Fatalf("Check after the database was deleted = %v, %v; want true, nil", recreated, err)
			}
			if recreated, err := s.Check(); recreated || err != nil {
				t.Errorf("second Check = %v, %v; want false, nil", recreated, err)
			}
			if v, err := s.SchemaVersion(); err != nil || v != numMigrations(t) {
				t.Errorf("SchemaVersion of the new database = %d, %v; want %d", v, err, numMigrations(t))
			}
			if got := sessionIDs(t, s); len(got) != 0 {
				t.Errorf("sessions of the new database = %v, want none", got)
			}
			if fi, err := os.Stat(s.Path()); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("new database file: %v, %v; want mode 600", fi, err)
			}
			// A late event of the old session is skipped; the session saved
			// again is kept.
			write(t, s, event("before", "before/get", 2, "late"))
			writeSession(t, s, "before")
			writeSession(t, s, "after")
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			s2 := openT(t, dir)
			if got := sessionIDs(t, s2); !slices.Equal(got, []string{"after", "before"}) {
				t.Errorf("sessions after reopening = %v, want [after before]", got)
			}
			if got := seqs(eventsAfter(t, s2, "after/get", -1)); !slices.Equal(got, []int{0, 1}) {
				t.Errorf("after/get events after reopening = %v, want [0 1]", got)
			}
			integrity(t, s2)
		})
	}
}

func mustRemove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		skipOpenFileBusy(t, err)
		t.Fatal(err)
	}
}

// skipOpenFileBusy skips a test on Windows, which refuses to delete or
// replace a file SQLite has open: there the case cannot happen.
func skipOpenFileBusy(t *testing.T, err error) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skipf("Windows keeps an open database file in place: %v", err)
	}
}

// Something else may still have the old database open (the sqlite3 shell,
// a backup) when it is deleted: the new database must still start empty and
// sound, not be read through the old one's WAL and shared memory.
func TestCheckWithAnotherReaderOnTheOldDatabase(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	writeSession(t, s, "old")

	other, err := sql.Open("sqlite", "file:"+s.Path()+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx := context.Background()
	tx, err := other.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRow(`SELECT COUNT(*) FROM sessions`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("other reader: %d sessions, %v", n, err)
	}
	mustRemove(t, s.Path())

	if recreated, err := s.Check(); err != nil || !recreated {
		t.Fatalf("Check = %v, %v; want true, nil", recreated, err)
	}
	tx.Rollback()
	if got := sessionIDs(t, s); len(got) != 0 {
		t.Errorf("the new database shows %v: the old WAL was replayed into it", got)
	}
	writeSession(t, s, "new")
	integrity(t, s)
	s.Close()
	other.Close()

	s2 := openT(t, dir)
	if got := sessionIDs(t, s2); !slices.Equal(got, []string{"new"}) {
		t.Errorf("sessions after reopening = %v, want [new]", got)
	}
	integrity(t, s2)
}

// A database file replaced by another (a restore) is opened as it is.
func TestCheckOpensReplacedDatabase(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	writeSession(t, s, "mine")

	other := t.TempDir()
	r, err := Open(other)
	if err != nil {
		t.Fatal(err)
	}
	writeSession(t, r, "restored")
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(other, FileName), s.Path()); err != nil {
		skipOpenFileBusy(t, err)
		t.Fatal(err)
	}
	if recreated, err := s.Check(); err != nil || !recreated {
		t.Fatalf("Check after the file was replaced = %v, %v; want true, nil", recreated, err)
	}
	if got := sessionIDs(t, s); !slices.Equal(got, []string{"restored"}) {
		t.Errorf("sessions = %v, want [restored]", got)
	}
	writeSession(t, s, "mine")
	integrity(t, s)
}

func TestCheckReportsWhatItCannotOpen(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	writeSession(t, s, "s1")
	mustRemove(t, s.Path())
	// Something that is not a database takes the path.
	if err := os.Mkdir(s.Path(), 0o700); err != nil {
		t.Fatal(err)
	}
	if recreated, err := s.Check(); err == nil || recreated {
		t.Fatalf("Check with a directory at the path = %v, %v; want an error", recreated, err)
	}
	if err := s.Write([]Op{{Session: session("s2", t0)}}); err == nil {
		t.Error("Write with no database succeeded")
	}
	// Once the path is free again, the next Check creates the database.
	if err := os.Remove(s.Path()); err != nil {
		t.Fatal(err)
	}
	if recreated, err := s.Check(); err != nil || !recreated {
		t.Fatalf("Check once the path is free = %v, %v; want true, nil", recreated, err)
	}
	writeSession(t, s, "s2")
	if got := sessionIDs(t, s); !slices.Equal(got, []string{"s2"}) {
		t.Errorf("sessions = %v, want [s2]", got)
	}
}

func TestCheckClosed(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := s.Check(); !errors.Is(err, ErrClosed) {
		t.Errorf("Check on a closed store = %v, want ErrClosed", err)
	}
}

// Writes and reads racing a recreation wait for it and then go to the new
// database: none fails.
func TestCheckWhileWriting(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	// Fill the pool first: a connection opened between the deletion and
	// Check fails (mode=rw), and that window is not what this tests.
	ctx := context.Background()
	var conns []*sql.Conn
	for range maxConns {
		c, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Close()
	}
	const writers, batches = 4, 60
	start := make(chan struct{})
	checked := make(chan struct{})
	errs := make(chan error, writers*batches*2)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			<-start
			for b := range batches {
				id := fmt.Sprintf("w%d-%d", w, b)
				if err := s.Write([]Op{
					{Session: session(id, t0)},
					{Stream: &Stream{ID: id + "/get", Session: id}},
					event(id, id+"/get", 0, "x"),
				}); err != nil {
					errs <- fmt.Errorf("write %s: %w", id, err)
				}
				if _, err := s.EventsAfter(id+"/get", -1); err != nil {
					errs <- fmt.Errorf("read %s: %w", id, err)
				}
				if b == batches/2 {
					<-checked // the second half is written after the recreation
				}
			}
		})
	}
	close(start)
	mustRemove(t, s.Path())
	recreated, err := s.Check()
	close(checked)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err != nil || !recreated {
		t.Fatalf("Check = %v, %v", recreated, err)
	}
	s.Close()

	s2 := openT(t, dir)
	got := sessionsByID(t, s2)
	for w := range writers {
		for b := batches/2 + 1; b < batches; b++ {
			if _, ok := got[fmt.Sprintf("w%d-%d", w, b)]; !ok {
				t.Errorf("session w%d-%d, written after the recreation, is not on disk", w, b)
			}
		}
	}
	integrity(t, s2)
}

// After the file is deleted, a connection the pool opens fails rather than
// starting an empty database beside the old one's -wal.
func TestNewConnectionDoesNotCreateDeletedDatabase(t *testing.T) {
	s := openT(t, t.TempDir())
	writeSession(t, s, "s1")
	mustRemove(t, s.Path())
	db, err := sql.Open("sqlite", dsn(s.Path()))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err == nil {
		t.Error("a new connection to the deleted database succeeded")
	}
	if _, err := os.Stat(s.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("database file after a new connection: %v, want none created", err)
	}
}
