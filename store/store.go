package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
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
	// pgcfg is PostgreSQL's connection config, for the cluster's LISTEN
	// connection; nil for SQLite.
	pgcfg *pgx.ConnConfig

	// wmu serialises this process's writes: SQLite has one writer at a
	// time, and its busy handler retries on a schedule rather than in
	// order, so pooled connections racing for the lock can starve one
	// another; on PostgreSQL it keeps one replica's batches in order.
	// Check holds it too while it replaces the database, so no write sees
	// the swap. Lock order: wmu, then hmu.
	wmu sync.Mutex
	// grantLocks holds the in-process locks of OAuth grants on SQLite
	// (LockGrant), by key.
	grantLocks sync.Map
	// hmu guards the handle: reads hold it shared for as long as they use
	// the database, Check and Close hold it alone to replace or close it.
	hmu sync.RWMutex
	handle
	closed bool

	// who is the replica this store writes as (cluster.go); a hub of its
	// own is "" of generation 0.
	who atomic.Pointer[identity]

	// shrunk counts the writes that deleted events behind the sweep's
	// back (DeleteSession, a recreated database), so a sweep that measured
	// the store before one knows its figure is stale.
	shrunk atomic.Uint64
}

// identity is a replica as sessions name their owner: its stable name and
// the generation it runs as.
type identity struct {
	name string
	gen  int64
}

// identity is who this store writes as.
func (s *Store) identity() identity {
	if p := s.who.Load(); p != nil {
		return *p
	}
	return identity{}
}

// handle is one open database.
type handle struct {
	db *sql.DB
	// insEvent is the hot statement, prepared once.
	insEvent *sql.Stmt
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
	// An event of a stream that is no longer stored, or of a session this
	// replica no longer owns, is skipped (see Write).
	h.insEvent, err = h.db.Prepare(d.q(`INSERT INTO events (stream_id, seq, session_id, data, size, stored)
		SELECT ?1, ?4, ?5, ?6, ?7, ?8 WHERE ` + ownedStream + `
		ON CONFLICT (stream_id, seq) DO NOTHING`))
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// close closes the statements and the database.
func (h handle) close() error {
	if h.insEvent != nil {
		h.insEvent.Close()
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
	// TakenFrom names the replica this one took the session over from
	// (read, never written: Claim and the reaper set it).
	TakenFrom string
	// Principal names who opened the session (the hub's caller id); only
	// they may use it.
	Principal string
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
	w := opWriter{tx: tx, d: s.dialect, who: s.identity(), stored: time.Now().UnixNano()}
	deletes := false
	for _, op := range ops {
		if ev := op.Event; ev != nil {
			if w.insEvent == nil {
				w.insEvent = tx.Stmt(s.insEvent)
			}
			if _, err := w.insEvent.Exec(ev.Stream, w.who.name, w.who.gen, ev.Seq, ev.Session, ev.Data, len(ev.Data), w.stored); err != nil {
				return fmt.Errorf("store: %w", classify(err))
			}
			continue
		}
		deletes = deletes || op.DeleteSession != ""
		if err := w.apply(op); err != nil {
			return fmt.Errorf("store: %w", classify(err))
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", classify(err))
	}
	if deletes {
		s.shrunk.Add(1)
	}
	return nil
}

// opWriter applies one batch's ops in its transaction. Every write is
// guarded by the session's owner: a replica whose session another took over
// (the fence) writes nothing more for it. On a hub of its own the owner is
// always "" of generation 0.
type opWriter struct {
	tx       *sql.Tx
	d        *dialect
	who      identity
	stored   int64
	insEvent *sql.Stmt
}

// ownedSession is the guard for a session id given as ?1.
const ownedSession = `EXISTS (SELECT 1 FROM sessions WHERE id = ?1 AND owner = ?2 AND owner_gen = ?3)`

// ownedStream is the guard for a stream id given as ?1.
const ownedStream = `EXISTS (SELECT 1 FROM streams st JOIN sessions se ON se.id = st.session_id
	WHERE st.id = ?1 AND se.owner = ?2 AND se.owner_gen = ?3)`

func (w *opWriter) apply(op Op) error {
	tx, d, who := w.tx, w.d, w.who
	switch {
	case op.Session != nil:
		return w.saveSession(op.Session)
	case op.DeleteSession != "":
		_, err := tx.Exec(d.q(`DELETE FROM sessions WHERE id = ?1 AND owner = ?2 AND owner_gen = ?3`), op.DeleteSession, who.name, who.gen)
		return err
	case op.Stream != nil:
		// The WHERE clause also keeps the upsert's ON from reading as a
		// join constraint.
		_, err := tx.Exec(d.q(`INSERT INTO streams (id, session_id, post, request_id, finished)
			SELECT ?4, ?1, ?5, ?6, ?7 WHERE `+ownedSession+`
			ON CONFLICT (id) DO UPDATE SET finished = excluded.finished`),
			op.Stream.Session, who.name, who.gen, op.Stream.ID, op.Stream.Post, op.Stream.RequestID, op.Stream.Finished)
		return err
	case op.Call != nil:
		c := op.Call
		_, err := tx.Exec(d.q(`INSERT INTO calls (stream_id, server, upstream_id, hub_token, progress_token)
			SELECT ?1, ?4, ?5, ?6, ?7 WHERE `+ownedStream+`
			ON CONFLICT (stream_id) DO UPDATE SET server = excluded.server, upstream_id = excluded.upstream_id,
				hub_token = excluded.hub_token, progress_token = excluded.progress_token`),
			c.Stream, who.name, who.gen, c.Server, c.UpstreamID, c.HubToken, c.ProgressToken)
		return err
	case op.DeleteCall != "":
		_, err := tx.Exec(d.q(`DELETE FROM calls WHERE stream_id = ?1 AND `+ownedStream), op.DeleteCall, who.name, who.gen)
		return err
	}
	return nil
}

// saveSession inserts a session as this replica's, or updates its log level
// and last use while this replica still owns it; its subscriptions are
// replaced only then.
func (w *opWriter) saveSession(se *Session) error {
	tx, d, who := w.tx, w.d, w.who
	res, err := tx.Exec(d.q(`INSERT INTO sessions (id, endpoint, version, client_info, capabilities, log_level, created, last_seen, owner, owner_gen, principal)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET log_level = excluded.log_level, last_seen = excluded.last_seen
		WHERE sessions.owner = excluded.owner AND sessions.owner_gen = excluded.owner_gen`),
		se.ID, se.Endpoint, se.Version, se.ClientInfo, se.Capabilities, se.LogLevel, se.Created.UnixNano(), se.LastSeen.UnixNano(), who.name, who.gen, se.Principal)
	if err != nil {
		return err
	}
	if se.Subscriptions == nil {
		return nil
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err // another replica's now: not ours to change
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

// Sessions loads every stored session this replica owns (on a hub of its
// own, every one) with its subscriptions.
func (s *Store) Sessions() ([]Session, error) {
	return s.sessions("", "")
}

// Session loads one stored session this replica owns, with its
// subscriptions; ErrNotFound when it owns none of that id.
func (s *Store) Session(id string) (Session, error) {
	out, err := s.sessions(" AND id = ?", id)
	if err != nil {
		return Session{}, err
	}
	if len(out) == 0 {
		return Session{}, ErrNotFound
	}
	return out[0], nil
}

// sessions loads the sessions this replica owns, narrowed by and (an SQL
// condition on its one argument, arg) when it is not "".
func (s *Store) sessions(and, arg string) ([]Session, error) {
	s.hmu.RLock()
	defer s.hmu.RUnlock()
	who := s.identity()
	args := []any{who.name, who.gen}
	if and != "" {
		args = append(args, arg)
	}
	rows, err := s.db.Query(s.dialect.q(`SELECT id, endpoint, version, client_info, capabilities, log_level, created, last_seen, taken_from, principal
		FROM sessions WHERE owner = ? AND owner_gen = ?`+and+` ORDER BY created`), args...)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		var se Session
		var created, seen int64
		if err := rows.Scan(&se.ID, &se.Endpoint, &se.Version, &se.ClientInfo, &se.Capabilities, &se.LogLevel, &created, &seen, &se.TakenFrom, &se.Principal); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		se.Created, se.LastSeen = time.Unix(0, created), time.Unix(0, seen)
		out = append(out, se)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	rows.Close()
	for i := range out {
		subs, err := s.strings(`SELECT uri FROM subscriptions WHERE session_id = ? ORDER BY uri`, out[i].ID)
		if err != nil {
			return nil, err
		}
		out[i].Subscriptions = subs
	}
	return out, nil
}

// strings reads one column of strings.
func (s *Store) strings(query string, args ...any) ([]string, error) {
	return s.stringsTx(s.db, query, args...)
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

// Calls loads where every request in flight on a POST stream of this
// replica's sessions went.
func (s *Store) Calls() ([]Call, error) {
	s.hmu.RLock()
	defer s.hmu.RUnlock()
	who := s.identity()
	rows, err := s.db.Query(s.dialect.q(`SELECT c.stream_id, c.server, c.upstream_id, c.hub_token, c.progress_token
		FROM calls c JOIN streams st ON st.id = c.stream_id JOIN sessions se ON se.id = st.session_id
		WHERE se.owner = ? AND se.owner_gen = ?`), who.name, who.gen)
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

// UpstreamOf loads the connection state another replica kept for a server:
// the replica a session was taken over from, whose upstream session
// finishes the session's calls.
func (s *Store) UpstreamOf(replica, server string) ([]byte, error) {
	s.hmu.RLock()
	defer s.hmu.RUnlock()
	var state []byte
	err := s.db.QueryRow(s.dialect.q(`SELECT state FROM upstreams WHERE replica = ? AND server = ?`), replica, server).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	return state, err
}

// SaveUpstream records an upstream's connection state (JSON): this
// replica's, since each replica has its own connection to each server. A
// replica keeps its name across restarts, so a restarted one resumes its
// own upstream sessions.
func (s *Store) SaveUpstream(server string, state []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := s.db.Exec(s.dialect.q(`INSERT INTO upstreams (replica, server, state, updated) VALUES (?, ?, ?, ?)
		ON CONFLICT (replica, server) DO UPDATE SET state = excluded.state, updated = excluded.updated`),
		s.identity().name, server, state, time.Now().UnixNano())
	return err
}

// Upstream loads an upstream's connection state.
func (s *Store) Upstream(server string) ([]byte, error) {
	s.hmu.RLock()
	defer s.hmu.RUnlock()
	var state []byte
	err := s.db.QueryRow(s.dialect.q(`SELECT state FROM upstreams WHERE replica = ? AND server = ?`), s.identity().name, server).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	return state, err
}

// SaveCatalog records a server's initialize result and lists (method →
// JSON array), replacing what was there. Replicas of a team hub save the
// same server's catalog at the same moments: rows are upserted in method
// order, then the methods no longer offered deleted, so that concurrent
// saves neither collide on a key nor deadlock.
func (s *Store) SaveCatalog(server string, items map[string][]byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	methods := slices.Sorted(maps.Keys(items))
	for _, method := range methods {
		if _, err := tx.Exec(s.dialect.q(`INSERT INTO catalog (server, method, items) VALUES (?, ?, ?)
			ON CONFLICT (server, method) DO UPDATE SET items = excluded.items`), server, method, items[method]); err != nil {
			return err
		}
	}
	stale, err := s.stringsTx(tx, `SELECT method FROM catalog WHERE server = ? ORDER BY method`, server)
	if err != nil {
		return err
	}
	for _, method := range stale {
		if _, ok := items[method]; ok {
			continue
		}
		if _, err := tx.Exec(s.dialect.q(`DELETE FROM catalog WHERE server = ? AND method = ?`), server, method); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// stringsTx reads one column of strings through q: the database, or a
// transaction.
func (s *Store) stringsTx(q interface {
	Query(string, ...any) (*sql.Rows, error)
}, query string, args ...any) ([]string, error) {
	rows, err := q.Query(s.dialect.q(query), args...)
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
