package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go
)

//go:embed migrations/*.sql
var migrations embed.FS

// FileName is the database file inside the data directory.
const FileName = "mcphub.db"

// Store is mcphub's SQLite database. Open → use → Close. It is safe for
// concurrent use; writes are meant to come batched through Write.
type Store struct {
	db   *sql.DB
	path string

	// wmu serialises writes: SQLite has one writer at a time, and its busy
	// handler retries on a schedule rather than in order, so pooled
	// connections racing for the lock can starve one another.
	wmu sync.Mutex
	// insEvent is the hot statement, prepared once.
	insEvent *sql.Stmt
}

// Open opens (creating if needed) the database in dir and migrates it to the
// newest schema. WAL lets readers run beside the writer; busy_timeout rides
// out short lock contention; foreign keys make deleting a session delete its
// streams, events and calls.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	path := filepath.Join(dir, FileName)
	// Created private before SQLite opens it: the -wal and -shm files it
	// makes next take the database file's mode, and they hold the same data.
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600); err == nil {
		f.Close()
	}
	q := url.Values{}
	for _, p := range []string{"busy_timeout(5000)", "journal_mode(WAL)", "foreign_keys(1)", "synchronous(NORMAL)"} {
		q.Add("_pragma", p)
	}
	// The path goes into a URI: characters that URIs give a meaning must
	// be escaped, or a data dir named "a?b" opens a database named "a".
	escaped := strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(path)
	db, err := sql.Open("sqlite", "file:"+escaped+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	s := &Store{db: db, path: path}
	if err := s.migrate(); err != nil {
		db.Close()
		return nil, err
	}
	s.insEvent, err = db.Prepare(`INSERT OR IGNORE INTO events (stream_id, seq, session_id, data) VALUES (?, ?, ?, ?)`)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store: %w", err)
	}
	return s, nil
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Close closes the database.
func (s *Store) Close() error {
	if s.insEvent != nil {
		s.insEvent.Close()
	}
	return s.db.Close()
}

// SchemaVersion reports the schema version the database is at.
func (s *Store) SchemaVersion() (int, error) {
	var v int
	err := s.db.QueryRow("PRAGMA user_version").Scan(&v)
	return v, err
}

// migrate applies, in order and each in its own transaction, every embedded
// migration newer than the database's user_version.
func (s *Store) migrate() error {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	current, err := s.SchemaVersion()
	if err != nil {
		return fmt.Errorf("store: read schema version: %w", err)
	}
	if current > len(names) {
		return fmt.Errorf("store: %s has schema version %d, newer than this mcphub knows (%d); use a newer mcphub or another --data-dir", s.path, current, len(names))
	}
	for i := current; i < len(names); i++ {
		body, err := migrations.ReadFile(names[i])
		if err != nil {
			return err
		}
		tx, err := s.db.Begin()
		if err != nil {
			return err
		}
		if _, err := tx.Exec(string(body)); err != nil {
			tx.Rollback()
			return fmt.Errorf("store: migration %s: %w", names[i], err)
		}
		if _, err := tx.Exec("PRAGMA user_version = " + strconv.Itoa(i+1)); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("store: migration %s: %w", names[i], err)
		}
	}
	return nil
}

// Session is one downstream session.
type Session struct {
	ID, Endpoint, Version    string
	ClientInfo, Capabilities []byte
	LogLevel                 string
	Subscriptions            []string
	Created, LastSeen        time.Time
}

// Stream is one SSE stream; NextSeq is one past its last stored event.
// RequestID is the client's raw JSON-RPC id of a POST stream's request.
type Stream struct {
	ID, Session    string
	Post, Finished bool
	RequestID      string
	NextSeq        int
}

// Event is one SSE event of a stream.
type Event struct {
	Session, Stream string
	Seq             int
	Data            []byte
}

// Call records where a POST stream's request went upstream: the server, the
// upstream request id, and the progress token mapping.
type Call struct {
	Stream, Server, UpstreamID, HubToken, ProgressToken string
}

// Op is one write; exactly one field is set.
type Op struct {
	Session       *Session
	DeleteSession string
	Stream        *Stream
	Event         *Event
	Call          *Call
	DeleteCall    string // a stream id
}

// Write applies a batch of writes in one transaction, in order. Batching is
// what keeps persistence cheap: one commit covers every event that arrived
// while the previous one was being written.
func (s *Store) Write(ops []Op) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.BeginTx(context.Background(), nil)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer tx.Rollback()
	var insEvent *sql.Stmt
	for _, op := range ops {
		if op.Event != nil {
			if insEvent == nil {
				insEvent = tx.Stmt(s.insEvent)
			}
			if _, err := insEvent.Exec(op.Event.Stream, op.Event.Seq, op.Event.Session, op.Event.Data); err != nil {
				return fmt.Errorf("store: %w", err)
			}
			continue
		}
		if err := apply(tx, op); err != nil {
			return fmt.Errorf("store: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

func apply(tx *sql.Tx, op Op) error {
	switch {
	case op.Session != nil:
		se := op.Session
		if _, err := tx.Exec(`INSERT INTO sessions (id, endpoint, version, client_info, capabilities, log_level, created, last_seen)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET log_level = excluded.log_level, last_seen = excluded.last_seen`,
			se.ID, se.Endpoint, se.Version, se.ClientInfo, se.Capabilities, se.LogLevel, se.Created.UnixNano(), se.LastSeen.UnixNano()); err != nil {
			return err
		}
		if se.Subscriptions == nil {
			return nil
		}
		if _, err := tx.Exec(`DELETE FROM subscriptions WHERE session_id = ?`, se.ID); err != nil {
			return err
		}
		for _, uri := range se.Subscriptions {
			if _, err := tx.Exec(`INSERT INTO subscriptions (session_id, uri) VALUES (?, ?)`, se.ID, uri); err != nil {
				return err
			}
		}
	case op.DeleteSession != "":
		_, err := tx.Exec(`DELETE FROM sessions WHERE id = ?`, op.DeleteSession)
		return err
	case op.Stream != nil:
		_, err := tx.Exec(`INSERT INTO streams (id, session_id, post, request_id, finished) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET finished = excluded.finished`,
			op.Stream.ID, op.Stream.Session, op.Stream.Post, op.Stream.RequestID, op.Stream.Finished)
		return err
	case op.Call != nil:
		c := op.Call
		_, err := tx.Exec(`INSERT OR REPLACE INTO calls (stream_id, server, upstream_id, hub_token, progress_token) VALUES (?, ?, ?, ?, ?)`,
			c.Stream, c.Server, c.UpstreamID, c.HubToken, c.ProgressToken)
		return err
	case op.DeleteCall != "":
		_, err := tx.Exec(`DELETE FROM calls WHERE stream_id = ?`, op.DeleteCall)
		return err
	}
	return nil
}

// Sessions loads every stored session with its subscriptions.
func (s *Store) Sessions() ([]Session, error) {
	rows, err := s.db.Query(`SELECT id, endpoint, version, client_info, capabilities, log_level, created, last_seen FROM sessions ORDER BY created`)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		var se Session
		var created, seen int64
		if err := rows.Scan(&se.ID, &se.Endpoint, &se.Version, &se.ClientInfo, &se.Capabilities, &se.LogLevel, &created, &seen); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		se.Created, se.LastSeen = time.Unix(0, created), time.Unix(0, seen)
		out = append(out, se)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	for i := range out {
		subs, err := s.strings(`SELECT uri FROM subscriptions WHERE session_id = ? ORDER BY uri`, out[i].ID)
		if err != nil {
			return nil, err
		}
		out[i].Subscriptions = subs
	}
	return out, nil
}

func (s *Store) strings(query string, args ...any) ([]string, error) {
	rows, err := s.db.Query(query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// Streams loads a session's streams with the seq after their last event.
func (s *Store) Streams(session string) ([]Stream, error) {
	rows, err := s.db.Query(`SELECT s.id, s.post, s.request_id, s.finished,
		MAX(s.floor_seq, COALESCE((SELECT MAX(seq) + 1 FROM events e WHERE e.stream_id = s.id), 0))
		FROM streams s WHERE s.session_id = ?`, session)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	var out []Stream
	for rows.Next() {
		st := Stream{Session: session}
		if err := rows.Scan(&st.ID, &st.Post, &st.RequestID, &st.Finished, &st.NextSeq); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// EventsAfter returns a stream's stored events with seq > after, in order.
func (s *Store) EventsAfter(stream string, after int) ([]Event, error) {
	rows, err := s.db.Query(`SELECT session_id, seq, data FROM events WHERE stream_id = ? AND seq > ? ORDER BY seq`, stream, after)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		ev := Event{Stream: stream}
		if err := rows.Scan(&ev.Session, &ev.Seq, &ev.Data); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		out = append(out, ev)
	}
	return out, rows.Err()
}

// Calls loads where every request in flight on a POST stream went.
func (s *Store) Calls() ([]Call, error) {
	rows, err := s.db.Query(`SELECT stream_id, server, upstream_id, hub_token, progress_token FROM calls`)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	var out []Call
	for rows.Next() {
		var c Call
		if err := rows.Scan(&c.Stream, &c.Server, &c.UpstreamID, &c.HubToken, &c.ProgressToken); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// Counts reports a session's stored events and their bytes.
func (s *Store) Counts(session string) (events int, bytes int64, err error) {
	err = s.db.QueryRow(`SELECT COUNT(*), COALESCE(SUM(COALESCE(LENGTH(data), 0)), 0) FROM events WHERE session_id = ?`, session).Scan(&events, &bytes)
	return events, bytes, err
}

// Sweep deletes sessions last seen before idleBefore (with everything they
// own), then trims every session to its newest maxEvents events and maxBytes
// bytes. It returns the ids of the sessions it deleted.
//
// It takes the write lock for one step at a time (the expiry, then each
// session's trim), so the hub's batched writes, which hold events back
// from the wire until committed, never wait for a whole sweep.
func (s *Store) Sweep(idleBefore time.Time, maxEvents int, maxBytes int64) ([]string, error) {
	expired, err := s.strings(`SELECT id FROM sessions WHERE last_seen < ?`, idleBefore.UnixNano())
	if err != nil {
		return nil, err
	}
	if len(expired) > 0 {
		ph := strings.TrimSuffix(strings.Repeat("?,", len(expired)), ",")
		args := make([]any, len(expired))
		for i, id := range expired {
			args[i] = id
		}
		s.wmu.Lock()
		_, err := s.db.Exec(`DELETE FROM sessions WHERE id IN (`+ph+`)`, args...)
		s.wmu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
	}
	ids, err := s.strings(`SELECT id FROM sessions`)
	if err != nil {
		return expired, err
	}
	for _, id := range ids {
		if err := s.trim(id, maxEvents, maxBytes); err != nil {
			return expired, err
		}
	}
	return expired, nil
}

// trim deletes a session's oldest events beyond the budget.
func (s *Store) trim(session string, maxEvents int, maxBytes int64) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	n, size, err := s.Counts(session)
	if err != nil || (n <= maxEvents && size <= maxBytes) {
		return err
	}
	rows, err := s.db.Query(`SELECT id, COALESCE(LENGTH(data), 0) FROM events WHERE session_id = ? ORDER BY id DESC`, session)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	var keep int
	var total int64
	cutoff := int64(-1)
	for rows.Next() {
		var id, l int64
		if err := rows.Scan(&id, &l); err != nil {
			rows.Close()
			return fmt.Errorf("store: %w", err)
		}
		if keep+1 > maxEvents || total+l > maxBytes {
			cutoff = id
			break
		}
		keep++
		total += l
	}
	rows.Close()
	if cutoff < 0 {
		return nil
	}
	tx, err := s.db.Begin()
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer tx.Rollback()
	// Remember how far each stream was purged, so its next seq stays past
	// every event it ever had even when none is left.
	if _, err := tx.Exec(`UPDATE streams SET floor_seq = MAX(floor_seq,
		COALESCE((SELECT MAX(seq) + 1 FROM events e WHERE e.stream_id = streams.id AND e.id <= ?), 0))
		WHERE session_id = ?`, cutoff, session); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if _, err := tx.Exec(`DELETE FROM events WHERE session_id = ? AND id <= ?`, session, cutoff); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return tx.Commit()
}

// ErrNotFound is returned for state that was never saved.
var ErrNotFound = errors.New("not found")

// SaveUpstream records an upstream's connection state (JSON).
func (s *Store) SaveUpstream(server string, state []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := s.db.Exec(`INSERT INTO upstreams (server, state, updated) VALUES (?, ?, ?)
		ON CONFLICT (server) DO UPDATE SET state = excluded.state, updated = excluded.updated`, server, state, time.Now().UnixNano())
	return err
}

// Upstream loads an upstream's connection state.
func (s *Store) Upstream(server string) ([]byte, error) {
	var state []byte
	err := s.db.QueryRow(`SELECT state FROM upstreams WHERE server = ?`, server).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	return state, err
}

// SaveCatalog records a server's initialize result and lists (method →
// JSON array), replacing what was there.
func (s *Store) SaveCatalog(server string, items map[string][]byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`DELETE FROM catalog WHERE server = ?`, server); err != nil {
		return err
	}
	for method, data := range items {
		if _, err := tx.Exec(`INSERT INTO catalog (server, method, items) VALUES (?, ?, ?)`, server, method, data); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Catalog loads what SaveCatalog recorded for a server.
func (s *Store) Catalog(server string) (map[string][]byte, error) {
	rows, err := s.db.Query(`SELECT method, items FROM catalog WHERE server = ?`, server)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]byte{}
	for rows.Next() {
		var m string
		var data []byte
		if err := rows.Scan(&m, &data); err != nil {
			return nil, err
		}
		out[m] = data
	}
	return out, rows.Err()
}
