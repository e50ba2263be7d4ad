package store

import (
	"database/sql"
	"errors"
	"strconv"
	"strings"
)

// dialect is what differs between SQLite and PostgreSQL. The queries are
// written once, in the SQL both accept, with ? placeholders.
type dialect struct {
	name string // "sqlite" or "postgres": also the migrations' folder
	// numbered turns ? and ?N placeholders into $N (PostgreSQL's).
	numbered bool
	// lock serialises migrations across processes sharing the database.
	lock func(tx *sql.Tx) error
	// version reads the schema version; 0 for a new database.
	version func(q querier) (int, error)
	// setVersion records the schema version in tx.
	setVersion func(tx *sql.Tx, v int) error
	// elsewhere ends "use a newer mcphub or …" when the schema is newer.
	elsewhere string
}

// querier is what reading the schema version needs: a *sql.DB or *sql.Tx.
type querier interface {
	QueryRow(query string, args ...any) *sql.Row
}

// q returns query in the dialect's placeholders.
func (d *dialect) q(query string) string {
	if !d.numbered || !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(query); i++ {
		c := query[i]
		if c != '?' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('$')
		if i+1 < len(query) && query[i+1] >= '0' && query[i+1] <= '9' {
			continue // ?N: keep its number
		}
		n++
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}

// sqliteDialect keeps the schema version in the file header's user_version.
var sqliteDialect = &dialect{
	name: "sqlite",
	// One process owns a data directory: the hub's own run lock.
	lock: func(*sql.Tx) error { return nil },
	version: func(q querier) (int, error) {
		var v int
		err := q.QueryRow("PRAGMA user_version").Scan(&v)
		return v, err
	},
	setVersion: func(tx *sql.Tx, v int) error {
		_, err := tx.Exec("PRAGMA user_version = " + strconv.Itoa(v))
		return err
	},
	elsewhere: "another --data-dir",
}

// migrationLock is the advisory lock key replicas migrate under ("mcphub"
// in ASCII).
const migrationLock = 0x6d63706875620000

// postgresDialect keeps the schema version in a one-row table, and
// migrates under an advisory lock held to the end of the transaction.
var postgresDialect = &dialect{
	name:     "postgres",
	numbered: true,
	lock: func(tx *sql.Tx) error {
		if _, err := tx.Exec(`SELECT pg_advisory_xact_lock($1)`, int64(migrationLock)); err != nil {
			return err
		}
		_, err := tx.Exec(`CREATE TABLE IF NOT EXISTS mcphub_schema (
			one     BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one),
			version INTEGER NOT NULL)`)
		return err
	},
	version: func(q querier) (int, error) {
		var v int
		err := q.QueryRow(`SELECT version FROM mcphub_schema`).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, nil
		}
		return v, err
	},
	setVersion: func(tx *sql.Tx, v int) error {
		_, err := tx.Exec(`INSERT INTO mcphub_schema (version) VALUES ($1)
			ON CONFLICT (one) DO UPDATE SET version = excluded.version`, v)
		return err
	},
	elsewhere: "another database",
}
