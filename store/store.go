package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

//go:embed migrations
var migrations embed.FS

// FileName is the database file inside the data directory.
const FileName = "mcphub.db"

// Store is mcphub's database: SQLite in the data directory (Open), or
// PostgreSQL for a team (OpenURL). Both dialects run the same code over
// database/sql; only the migrations, the placeholders and how the schema
// version is kept differ (dialect.go). Open → use → Close. It is safe for
// concurrent use; writes are meant to come batched through Write.
type Store struct {
	dialect *dialect
	// path is the SQLite database file; "" for PostgreSQL.
	path string
	// where names the database in messages: the file, or the URL with its
	// password masked.
	where string

	// wmu serialises this process's writes: SQLite has one writer at a
	// time, and its busy handler retries on a schedule rather than in
	// order, so pooled connections racing for the lock can starve one
	// another; on PostgreSQL it keeps one replica's batches in order.
	// Check holds it too while it replaces the database, so no write sees
	// the swap. Lock order: wmu, then hmu.
	wmu sync.Mutex
	// hmu guards the handle: reads hold it shared for as long as they use
	// the database, Check and Close hold it alone to replace or close it.
	hmu sync.RWMutex
	handle
	closed bool

	// shrunk counts the writes that deleted events behind the sweep's
	// back (DeleteSession, a recreated database), so a sweep that measured
	// the store before one knows its figure is stale.
	shrunk atomic.Uint64
}

// handle is one open database.
type handle struct {
	db *sql.DB
	// insEvent and hasStream are the hot statements, prepared once.
	insEvent, hasStream *sql.Stmt
	// file identifies the SQLite database file opened, for Check.
	file os.FileInfo
}

// Open opens (creating if needed) the SQLite database in dir and migrates
// it to the newest schema.
func Open(dir string) (*Store, error) {
	path := filepath.Join(dir, FileName)
	s := &Store{dialect: sqliteDialect, path: path, where: path}
	h, err := openSQLite(path)
	if err != nil {
		return nil, err
	}
	s.handle = h
	return s, nil
}

// prepare migrates db and prepares the hot statements.
func (h *handle) prepare(d *dialect, where string) error {
	if err := migrate(h.db, d, where); err != nil {
		return err
	}
	var err error
	if h.insEvent, err = h.db.Prepare(d.q(`INSERT INTO events (stream_id, seq, session_id, data, size, stored) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (stream_id, seq) DO NOTHING`)); err == nil {
		h.hasStream, err = h.db.Prepare(d.q(`SELECT EXISTS (SELECT 1 FROM streams WHERE id = ?)`))
	}
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// close closes the statements and the database.
func (h handle) close() error {
	for _, st := range []*sql.Stmt{h.insEvent, h.hasStream} {
		if st != nil {
			st.Close()
		}
	}
	return h.db.Close()
}

// Path is the SQLite database file; "" for PostgreSQL.
func (s *Store) Path() string { return s.path }

// Where names the database for messages: the SQLite file, or the
// PostgreSQL URL with its password masked.
func (s *Store) Where() string { return s.where }

// Dialect is "sqlite" or "postgres".
func (s *Store) Dialect() string { return s.dialect.name }

// Close closes the database. It is idempotent.
func (s *Store) Close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.hmu.Lock()
	defer s.hmu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.handle.close()
}

// SchemaVersion reports the schema version the database is at.
func (s *Store) SchemaVersion() (int, error) {
	s.hmu.RLock()
	defer s.hmu.RUnlock()
	return s.dialect.version(s.db)
}

// Migrations is how many schema versions this mcphub knows: the newest
// schema version it migrates a database to.
func Migrations() int {
	n, _ := migrationNames(sqliteDialect)
	return len(n)
}

// migrationNames lists a dialect's embedded migrations, in order.
func migrationNames(d *dialect) ([]string, error) {
	names, err := fs.Glob(migrations, "migrations/"+d.name+"/*.sql")
	sort.Strings(names)
	return names, err
}

// migrate applies, in order and in one transaction, every embedded
// migration newer than the database's schema version. On PostgreSQL the
// transaction first takes an advisory lock, so replicas starting together
// migrate once, one after the other.
func migrate(db *sql.DB, d *dialect, where string) error {
	names, err := migrationNames(d)
	if err != nil {
		return err
	}
	tx, err := db.Begin()
	if err != nil {
		return fmt.Errorf("store: %s: %w", where, err)
	}
	defer tx.Rollback()
	if err := d.lock(tx); err != nil {
		return fmt.Errorf("store: %s: take the migration lock: %w", where, err)
	}
	current, err := d.version(tx)
	if err != nil {
		return fmt.Errorf("store: read schema version of %s: %w", where, err)
	}
	if current > len(names) {
		return fmt.Errorf("store: %s has schema version %d, newer than this mcphub knows (%d); use a newer mcphub or %s", where, current, len(names), d.elsewhere)
	}
	if current == len(names) {
		return nil
	}
	for i := current; i < len(names); i++ {
		body, err := migrations.ReadFile(names[i])
		if err != nil {
			return err
		}
		if _, err := tx.Exec(string(body)); err != nil {
			return fmt.Errorf("store: migration %s: %w", names[i], err)
		}
	}
	if err := d.setVersion(tx, len(names)); err != nil {
		return fmt.Errorf("store: %s: %w", where, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: migrate %s: %w", where, err)
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
//
// A write for a session or stream that is no longer stored (an event, a
// stream or a call that arrives after its session was deleted) is skipped:
// it has nothing left to belong to, and failing on it would lose the rest
// of the batch.
func (s *Store) Write(ops []Op) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.BeginTx(context.Background(), nil)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer tx.Rollback()
	var insEvent, hasStream *sql.Stmt
	// streams says which streams are stored, as far as this batch has
	// looked: one lookup per stream rather than per event.
	streams := map[string]bool{}
	stored := time.Now().UnixNano()
	deletes := false
	for _, op := range ops {
		ev := op.Event
		if ev == nil {
			if op.DeleteSession != "" {
				deletes = true
				clear(streams)
			} else if op.Stream != nil {
				delete(streams, op.Stream.ID)
			}
			if err := apply(tx, s.dialect, op); err != nil {
				return fmt.Errorf("store: %w", err)
			}
			continue
		}
		if insEvent == nil {
			insEvent, hasStream = tx.Stmt(s.insEvent), tx.Stmt(s.hasStream)
		}
		ok, known := streams[ev.Stream]
		if !known {
			if err := hasStream.QueryRow(ev.Stream).Scan(&ok); err != nil {
				return fmt.Errorf("store: %w", err)
			}
			streams[ev.Stream] = ok
		}
		if !ok {
			continue
		}
		if _, err := insEvent.Exec(ev.Stream, ev.Seq, ev.Session, ev.Data, len(ev.Data), stored); err != nil {
			return fmt.Errorf("store: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	if deletes {
		s.shrunk.Add(1)
	}
	return nil
}

func apply(tx *sql.Tx, d *dialect, op Op) error {
	switch {
	case op.Session != nil:
		return saveSession(tx, d, op.Session)
	case op.DeleteSession != "":
		_, err := tx.Exec(d.q(`DELETE FROM sessions WHERE id = ?`), op.DeleteSession)
		return err
	case op.Stream != nil:
		// The WHERE clause also keeps the upsert's ON from reading as a
		// join constraint.
		_, err := tx.Exec(d.q(`INSERT INTO streams (id, session_id, post, request_id, finished)
			SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM sessions WHERE id = ?2)
			ON CONFLICT (id) DO UPDATE SET finished = excluded.finished`),
			op.Stream.ID, op.Stream.Session, op.Stream.Post, op.Stream.RequestID, op.Stream.Finished)
		return err
	case op.Call != nil:
		c := op.Call
		_, err := tx.Exec(d.q(`INSERT INTO calls (stream_id, server, upstream_id, hub_token, progress_token)
			SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM streams WHERE id = ?1)
			ON CONFLICT (stream_id) DO UPDATE SET server = excluded.server, upstream_id = excluded.upstream_id,
				hub_token = excluded.hub_token, progress_token = excluded.progress_token`),
			c.Stream, c.Server, c.UpstreamID, c.HubToken, c.ProgressToken)
		return err
	case op.DeleteCall != "":
		_, err := tx.Exec(d.q(`DELETE FROM calls WHERE stream_id = ?`), op.DeleteCall)
		return err
	}
	return nil
}

func saveSession(tx *sql.Tx, d *dialect, se *Session) error {
	if _, err := tx.Exec(d.q(`INSERT INTO sessions (id, endpoint, version, client_info, capabilities, log_level, created, last_seen)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET log_level = excluded.log_level, last_seen = excluded.last_seen`),
		se.ID, se.Endpoint, se.Version, se.ClientInfo, se.Capabilities, se.LogLevel, se.Created.UnixNano(), se.LastSeen.UnixNano()); err != nil {
		return err
	}
	if se.Subscriptions == nil {
		return nil
	}
	if _, err := tx.Exec(d.q(`DELETE FROM subscriptions WHERE session_id = ?`), se.ID); err != nil {
		return err
	}
	for _, uri := range se.Subscriptions {
		if _, err := tx.Exec(d.q(`INSERT INTO subscriptions (session_id, uri) VALUES (?, ?)`), se.ID, uri); err != nil {
			return err
		}
	}
	return nil
}

// Sessions loads every stored session with its subscriptions.
func (s *Store) Sessions() ([]Session, error) {
	s.hmu.RLock()
	defer s.hmu.RUnlock()
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
	rows, err := s.db.Query(s.dialect.q(query), args...)
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
	s.hmu.RLock()
	defer s.hmu.RUnlock()
	rows, err := s.db.Query(s.dialect.q(`SELECT s.id, s.post, s.request_id, s.finished, s.floor_seq,
		COALESCE((SELECT MAX(seq) + 1 FROM events e WHERE e.stream_id = s.id), 0)
		FROM streams s WHERE s.session_id = ?`), session)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	var out []Stream
	for rows.Next() {
		st := Stream{Session: session}
		var floor int
		if err := rows.Scan(&st.ID, &st.Post, &st.RequestID, &st.Finished, &floor, &st.NextSeq); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		st.NextSeq = max(st.NextSeq, floor)
		out = append(out, st)
	}
	return out, rows.Err()
}

// EventsAfter returns a stream's stored events with seq > after, in order:
// a page of them, ending with the event whose data reaches EventsPageBytes
// (at least one event), so that a resume from far back is read a page at a
// time. Ask again after the last one returned for the next page.
func (s *Store) EventsAfter(stream string, after int) ([]Event, error) {
	s.hmu.RLock()
	defer s.hmu.RUnlock()
	rows, err := s.db.Query(s.dialect.q(`SELECT session_id, seq, data FROM events WHERE stream_id = ? AND seq > ? ORDER BY seq LIMIT ?`), stream, after, eventsPageRows)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	var out []Event
	var size int
	for size < EventsPageBytes && rows.Next() {
		ev := Event{Stream: stream}
		if err := rows.Scan(&ev.Session, &ev.Seq, &ev.Data); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		out = append(out, ev)
		size += len(ev.Data)
	}
	return out, rows.Err()
}

// EventsPageBytes bounds what one EventsAfter call returns: a page ends
// with the event whose data reaches it, so it is exceeded by one event at
// most. A reader that resumes
// far back reads the stream page by page, so memory holds one page of it.
var EventsPageBytes = 4 << 20

// eventsPageRows bounds the events one EventsAfter call asks for, so that
// the database never reads out (PostgreSQL sends every row of a query the
// reader stops early) more than one page's worth of a long stream.
const eventsPageRows = 4096

// Calls loads where every request in flight on a POST stream went.
func (s *Store) Calls() ([]Call, error) {
	s.hmu.RLock()
	defer s.hmu.RUnlock()
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
	s.hmu.RLock()
	defer s.hmu.RUnlock()
	return s.counts(session)
}

// counts reads a session's figures from the events_session index alone.
func (s *Store) counts(session string) (events int, bytes int64, err error) {
	err = s.db.QueryRow(s.dialect.q(`SELECT COUNT(*), CAST(COALESCE(SUM(size), 0) AS BIGINT) FROM events WHERE session_id = ?`), session).Scan(&events, &bytes)
	if err != nil {
		return 0, 0, fmt.Errorf("store: %w", err)
	}
	return events, bytes, nil
}

// ErrNotFound is returned for state that was never saved.
var ErrNotFound = errors.New("not found")

// SaveUpstream records an upstream's connection state (JSON).
func (s *Store) SaveUpstream(server string, state []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := s.db.Exec(s.dialect.q(`INSERT INTO upstreams (server, state, updated) VALUES (?, ?, ?)
		ON CONFLICT (server) DO UPDATE SET state = excluded.state, updated = excluded.updated`), server, state, time.Now().UnixNano())
	return err
}

// Upstream loads an upstream's connection state.
func (s *Store) Upstream(server string) ([]byte, error) {
	s.hmu.RLock()
	defer s.hmu.RUnlock()
	var state []byte
	err := s.db.QueryRow(s.dialect.q(`SELECT state FROM upstreams WHERE server = ?`), server).Scan(&state)
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
	if _, err := tx.Exec(s.dialect.q(`DELETE FROM catalog WHERE server = ?`), server); err != nil {
		return err
	}
	for method, data := range items {
		if _, err := tx.Exec(s.dialect.q(`INSERT INTO catalog (server, method, items) VALUES (?, ?, ?)`), server, method, data); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Catalog loads what SaveCatalog recorded for a server.
func (s *Store) Catalog(server string) (map[string][]byte, error) {
	s.hmu.RLock()
	defer s.hmu.RUnlock()
	rows, err := s.db.Query(s.dialect.q(`SELECT method, items FROM catalog WHERE server = ?`), server)
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
