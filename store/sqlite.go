package store

import (
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go
)

// maxConns bounds the pooled connections to a SQLite database.
const maxConns = 4

// openSQLite creates (if needed), opens and migrates the SQLite database at
// path.
func openSQLite(path string) (handle, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return handle{}, fmt.Errorf("store: %w", err)
	}
	// Created private before SQLite opens it: the -wal and -shm files it
	// makes next take the database file's mode, and they hold the same data.
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600); err == nil {
		f.Close()
	}
	db, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		return handle{}, fmt.Errorf("store: open %s: %w", path, err)
	}
	h := handle{db: db}
	// Connections are kept, not closed and reopened as load varies: each
	// open runs the pragmas, and once the file is deleted a new one fails
	// where a kept one goes on until Check replaces the database.
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	if err := h.prepare(sqliteDialect, path); err != nil {
		h.close()
		return handle{}, err
	}
	if h.file, err = os.Stat(path); err != nil {
		h.close()
		return handle{}, fmt.Errorf("store: %w", err)
	}
	// On Windows the file's identity is read on first comparison, from
	// whatever is at the path then: read it now, while it is this file.
	os.SameFile(h.file, h.file)
	return h, nil
}

// dsn is the driver's name for the database at path. WAL lets readers run
// beside the writer; busy_timeout rides out short lock contention; foreign
// keys make deleting a session delete its streams, events and calls.
func dsn(path string) string {
	q := url.Values{}
	for _, p := range []string{"busy_timeout(5000)", "journal_mode(WAL)", "foreign_keys(1)", "synchronous(NORMAL)"} {
		q.Add("_pragma", p)
	}
	// mode=rw: SQLite never creates the file itself. A connection the pool
	// opens after the file was deleted then fails, rather than starting an
	// empty database beside the old one's -wal, until Check recreates it.
	q.Set("mode", "rw")
	return fileURI(path, q)
}

// fileURI is the SQLite URI of the file at path with the query q. The path
// goes into a URI: characters that URIs give a meaning must be escaped, or a
// data dir named "a?b" opens a database named "a".
func fileURI(path string, q url.Values) string {
	escaped := strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(path)
	return "file:" + escaped + "?" + q.Encode()
}
