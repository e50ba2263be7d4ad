package store

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
)

// RefusedError wraps a write error the database will never take however
// often the write is tried: the data itself is refused (PostgreSQL's data
// exceptions and integrity violations, SQLSTATE classes 22 and 23, such as
// a NUL in text; SQLite's constraint, too-big and type-mismatch errors).
// A connection lost, a full disk, a lock timeout or a read-only standby
// are not: the write may pass later. Refused says so to the hub, which
// gives up such a write alone instead of holding every later one.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// Refused reports that the write will never pass.
func (e *RefusedError) Refused() bool { return true }

// SQLite's primary result codes of a refused write.
const (
	sqliteTooBig     = 18
	sqliteConstraint = 19
	sqliteMismatch   = 20
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
		case sqliteTooBig, sqliteConstraint, sqliteMismatch:
			return &RefusedError{err}
		}
	}
	return err
}
