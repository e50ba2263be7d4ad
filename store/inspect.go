package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Report is what Inspect found of a database, without changing it.
type Report struct {
	// Dialect is "sqlite" or "postgres".
	Dialect string
	// Where is the SQLite file, or the URL with its password masked.
	Where string
	// Server is PostgreSQL's version, "" for SQLite.
	Server string
	// Exists is false for a database mcphub has not made yet (no file,
	// no schema): the first serve creates it.
	Exists bool
	// Version is the database's schema version; Known is the newest this
	// mcphub migrates to.
	Version, Known int
	// Took is how long reaching the database and reading it took.
	Took time.Duration
}

// State names what a report (and Inspect's error, err) says of the
// database: "unreachable", "new" (no database yet: serve creates it),
// "ahead" (made by a newer mcphub: serve refuses it), "behind" (serve
// migrates it) or "current".
func (r Report) State(err error) string {
	switch {
	case err != nil:
		return "unreachable"
	case !r.Exists:
		return "new"
	case r.Version > r.Known:
		return "ahead"
	case r.Version < r.Known:
		return "behind"
	}
	return "current"
}

// Inspect reports on the database at target (a postgres:// URL, or a data
// directory for SQLite) without migrating or writing it: whether it can be
// reached, whether mcphub made it, and its schema version against this
// mcphub's. Errors name the database, with any password masked.
func Inspect(ctx context.Context, target string) (Report, error) {
	start := time.Now()
	var r Report
	var err error
	if IsURL(target) {
		r, err = inspectURL(ctx, target)
	} else {
		r, err = inspectFile(ctx, filepath.Join(target, FileName))
	}
	r.Known, r.Took = Migrations(), time.Since(start)
	return r, err
}

func inspectURL(ctx context.Context, raw string) (Report, error) {
	r := Report{Dialect: "postgres", Where: RedactURL(raw)}
	cfg, err := pgx.ParseConfig(raw)
	if err != nil {
		return r, fmt.Errorf("store: %s: %w", r.Where, scrub(err, raw))
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = connectTimeout
	}
	db := sql.OpenDB(stdlib.GetConnector(*cfg))
	defer db.Close()
	if err := db.QueryRowContext(ctx, `SHOW server_version`).Scan(&r.Server); err != nil {
		return r, fmt.Errorf("store: cannot reach %s: %w", r.Where, scrub(err, raw))
	}
	if err := db.QueryRowContext(ctx, `SELECT to_regclass('mcphub_schema') IS NOT NULL`).Scan(&r.Exists); err != nil {
		return r, fmt.Errorf("store: %s: %w", r.Where, err)
	}
	if r.Exists {
		if r.Version, err = postgresDialect.version(db); err != nil {
			return r, fmt.Errorf("store: read schema version of %s: %w", r.Where, err)
		}
	}
	return r, nil
}

func inspectFile(ctx context.Context, path string) (Report, error) {
	r := Report{Dialect: "sqlite", Where: path}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return r, nil
	} else if err != nil {
		return r, fmt.Errorf("store: %w", err)
	}
	r.Exists = true
	db, err := sql.Open("sqlite", fileURI(path, url.Values{"mode": {"ro"}, "_pragma": {"busy_timeout(5000)"}}))
	if err != nil {
		return r, fmt.Errorf("store: open %s: %w", path, err)
	}
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return r, fmt.Errorf("store: open %s: %w", path, err)
	}
	if r.Version, err = sqliteDialect.version(db); err != nil {
		return r, fmt.Errorf("store: read schema version of %s: %w", path, err)
	}
	return r, nil
}
