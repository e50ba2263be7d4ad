package store

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
)

// RefusedError wraps a write error that waiting will not cure: the data
// itself is refused (PostgreSQL's data exceptions and integrity violations,
// SQLSTATE classes 22 and 23, such as a NUL in text; SQLite's constraint,
// too-big and type-mismatch errors), or SQLite's file cannot take writes
// at all (full disk, I/O error, read-only, corrupt, gone): a hub on a
// laptop then goes on without persistence, as it always did, rather than
// hold its clients' events. A lost connection to PostgreSQL, its full
// disk, a lock timeout or a read-only standby are not refusals: another
// replica, or the same one a little later, may take the write. Refused
// says so to the hub, which gives up such a write alone instead of holding
// every later one.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// Refused reports that the write will never pass.
func (e *RefusedError) Refused() bool { return true }

// SQLite's primary result codes of a refused write.
const (
	sqliteReadOnly   = 8
	sqliteIOErr      = 10
	sqliteCorrupt    = 11
	sqliteFull       = 13
	sqliteCantOpen   = 14
	sqliteTooBig     = 18
	sqliteConstraint = 19
	sqliteMismatch   = 20
	sqliteNotADB     = 26
)

// classify wraps err in RefusedError when it says the data is refused.
func classify(err error) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) && (strings.HasPrefix(pg.Code, "22") || strings.HasPrefix(pg.Code, "23")) {
		return &RefusedError{err}
	}
	var lite *sqlite.Error
	if errors.As(err, &lite) {
		switch lite.Code() & 0xff {
		case sqliteTooBig, sqliteConstraint, sqliteMismatch,
			sqliteReadOnly, sqliteIOErr, sqliteCorrupt, sqliteFull, sqliteCantOpen, sqliteNotADB:
			return &RefusedError{err}
		}
	}
	return err
}

// isUniqueViolation reports a write refused because a unique key is taken
// (PostgreSQL's unique_violation, SQLite's SQLITE_CONSTRAINT_UNIQUE or
// _PRIMARYKEY).
func isUniqueViolation(err error) bool {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code == "23505"
	}
	var lite *sqlite.Error
	if errors.As(err, &lite) {
		return lite.Code() == 2067 || lite.Code() == 1555
	}
	return false
}
