package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// ---- helpers ----------------------------------------------------------------

// openT opens a store in dir and closes it when the test ends.
func openT(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatalf("Open(%q): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// numMigrations is how many embedded migrations there are.
func numMigrations(t testing.TB) int {
	t.Helper()
	n := Migrations()
	if n == 0 {
		t.Fatal("no embedded migrations")
	}
	return n
}

// write applies ops and fails the test on error.
func write(t testing.TB, s *Store, ops ...Op) {
	t.Helper()
	if err := s.Write(ops); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

// count runs a COUNT(*)-style query straight against the database, so tests
// see rows the API does not expose (subscriptions, events of deleted rows).
func count(t testing.TB, s *Store, query string, args ...any) int {
	t.Helper()
	var n int
	if err := s.db.QueryRow(s.dialect.q(query), args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

var t0 = time.Date(2025, 6, 18, 12, 0, 0, 123456789, time.UTC)

func session(id string, lastSeen time.Time) *Session {
	return &Session{
		ID: id, Endpoint: "/mcp", Version: "2025-06-18",
		ClientInfo:   []byte(`{"name":"c","version":"1"}`),
		Capabilities: []byte(`{"roots":{}}`),
		LogLevel:     "info",
		Created:      lastSeen, LastSeen: lastSeen,
	}
}

func event(sess, stream string, seq int, data string) Op {
	return Op{Event: &Event{Session: sess, Stream: stream, Seq: seq, Data: []byte(data)}}
}

// seqs lists the seqs of events.
func seqs(evs []Event) []int {
	out := make([]int, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

func eventsAfter(t testing.TB, s *Store, stream string, after int) []Event {
	t.Helper()
	evs, err := s.EventsAfter(stream, after)
	if err != nil {
		t.Fatalf("EventsAfter(%q, %d): %v", stream, after, err)
	}
	return evs
}

func streamsByID(t testing.TB, s *Store, sess string) map[string]Stream {
	t.Helper()
	sts, err := s.Streams(sess)
	if err != nil {
		t.Fatalf("Streams(%q): %v", sess, err)
	}
	out := map[string]Stream{}
	for _, st := range sts {
		if _, dup := out[st.ID]; dup {
			t.Fatalf("Streams(%q) lists %q twice", sess, st.ID)
		}
		out[st.ID] = st
	}
	return out
}

func sessionsByID(t testing.TB, s *Store) map[string]Session {
	t.Helper()
	ss, err := s.Sessions()
	if err != nil {
		t.Fatalf("Sessions: %v", err)
	}
	out := map[string]Session{}
	for _, se := range ss {
		out[se.ID] = se
	}
	return out
}

// ---- Open, migrations -------------------------------------------------------

func TestOpenCreatesDatabase(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "data") // Open must create it
	s := openT(t, dir)

	want := filepath.Join(dir, FileName)
	if s.Path() != want {
		t.Errorf("Path() = %q, want %q", s.Path(), want)
	}
	fi, err := os.Stat(want)
	if err != nil {
		t.Fatalf("database file: %v", err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Errorf("%s mode = %o, want 600", FileName, m)
	}
	di, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m := di.Mode().Perm(); m&0o077 != 0 {
		t.Errorf("data dir mode = %o, want no group/other access", m)
	}

	v, err := s.SchemaVersion()
	if err != nil {
		t.Fatalf("SchemaVersion: %v", err)
	}
	if n := numMigrations(t); v != n {
		t.Errorf("SchemaVersion = %d, want %d (number of migrations)", v, n)
	}

	var mode string
	if err := s.db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Errorf("journal_mode = %q, want wal", mode)
	}

	// foreign_keys and busy_timeout are per connection: hold every
	// connection the pool allows at once and check each.
	ctx := context.Background()
	var conns []*sql.Conn
	for range 4 {
		c, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for i, c := range conns {
		var fk, busy int
		if err := c.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy); err != nil {
			t.Fatal(err)
		}
		if fk != 1 {
			t.Errorf("connection %d: foreign_keys = %d, want 1", i, fk)
		}
		if busy <= 0 {
			t.Errorf("connection %d: busy_timeout = %d, want > 0", i, busy)
		}
	}
	for _, c := range conns {
		c.Close()
	}

	// Every table of the schema is there.
	for _, table := range []string{"sessions", "subscriptions", "streams", "events", "calls", "upstreams", "catalog"} {
		if n := count(t, s, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?", table); n != 1 {
			t.Errorf("table %s missing", table)
		}
	}
}

// The WAL and shared-memory files hold the same data as the database (every
// event, before a checkpoint), so they must be as private as mcphub.db.
func TestOpenWALFilesPrivate(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	write(t, s, Op{Session: session("s1", t0)})
	for _, suffix := range []string{"-wal", "-shm"} {
		fi, err := os.Stat(s.Path() + suffix)
		if err != nil {
			t.Logf("%s: %v", FileName+suffix, err)
			continue
		}
		if m := fi.Mode().Perm(); m&0o077 != 0 {
			t.Errorf("%s mode = %o, want 600 like %s (it holds the same session data)", FileName+suffix, m, FileName)
		}
	}
}

func TestOpenReopenIsIdempotent(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	write(t, s,
		Op{Session: session("s1", t0)},
		Op{Stream: &Stream{ID: "st1", Session: "s1", Post: true, RequestID: "7"}},
		event("s1", "st1", 0, "a"),
		event("s1", "st1", 1, "b"),
	)
	if err := s.SaveUpstream("srv", []byte(`{"session":"u1"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v, want nil (idempotent)", err)
	}

	// A second migration run would fail on CREATE TABLE sessions, so
	// reopening at all shows the applied migration is skipped.
	for i := range 3 {
		s = openT(t, dir)
		v, err := s.SchemaVersion()
		if err != nil {
			t.Fatal(err)
		}
		if n := numMigrations(t); v != n {
			t.Errorf("reopen %d: SchemaVersion = %d, want %d", i, v, n)
		}
		if _, ok := sessionsByID(t, s)["s1"]; !ok {
			t.Errorf("reopen %d: session s1 lost", i)
		}
		if got := seqs(eventsAfter(t, s, "st1", -1)); !slices.Equal(got, []int{0, 1}) {
			t.Errorf("reopen %d: events = %v, want [0 1]", i, got)
		}
		if st, err := s.Upstream("srv"); err != nil || string(st) != `{"session":"u1"}` {
			t.Errorf("reopen %d: Upstream = %q, %v", i, st, err)
		}
		fi, err := os.Stat(s.Path())
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("reopen %d: mode = %o, want 600", i, m)
		}
		s.Close()
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	n := numMigrations(t)
	if _, err := s.db.Exec(fmt.Sprintf("PRAGMA user_version = %d", n+1)); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s2, err := Open(dir)
	if err == nil {
		s2.Close()
		t.Fatal("Open of a database newer than the migrations succeeded, want an error")
	}
	msg := err.Error()
	for _, want := range []string{"newer", fmt.Sprint(n + 1), fmt.Sprint(n), filepath.Join(dir, FileName)} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}

	// The refused database is left as it was.
	db, err := sql.Open("sqlite", filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != n+1 {
		t.Errorf("user_version after refused Open = %d, want %d", v, n+1)
	}
}

func TestOpenErrors(t *testing.T) {
	t.Run("dir is a file", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if s, err := Open(f); err == nil {
			s.Close()
			t.Error("Open on a regular file succeeded")
		}
	})
	t.Run("not a database", func(t *testing.T) {
		dir := t.TempDir()
		junk := bytes.Repeat([]byte("this is not sqlite "), 512)
		if err := os.WriteFile(filepath.Join(dir, FileName), junk, 0o600); err != nil {
			t.Fatal(err)
		}
		if s, err := Open(dir); err == nil {
			s.Close()
			t.Error("Open on a file that is not a database succeeded")
		}
	})
}

// A data directory is a path, not a URI: characters that mean something in
// a SQLite URI ('#' fragment, '?' query, '%' escape) must not change which
// file is opened, nor drop the connection pragmas.
func TestOpenDirWithURICharacters(t *testing.T) {
	// Subtest names are plain: t.TempDir() embeds the test name, and a '#'
	// there would send SQLite to a file outside the temporary directory.
	for label, name := range map[string]string{"hash": "a#b", "question": "a?b", "percent": "a%41b", "space": "a b"} {
		t.Run(label, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, name)
			s, err := Open(dir)
			if err != nil {
				t.Fatalf("Open(%q): %v", dir, err)
			}
			defer s.Close()
			write(t, s, Op{Session: session("s1", t0)})
			var file string
			if err := s.db.QueryRow("SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&file); err != nil {
				t.Fatal(err)
			}
			if file != s.Path() {
				t.Errorf("SQLite opened %q, want %q (Path())", file, s.Path())
			}
			if _, err := os.Stat(s.Path()); err != nil {
				t.Errorf("database file missing at Path(): %v", err)
			}
			var fk int
			if err := s.db.QueryRow("PRAGMA foreign_keys").Scan(&fk); err != nil {
				t.Fatal(err)
			}
			if fk != 1 {
				t.Errorf("foreign_keys = %d, want 1 (the _pragma parameters were lost)", fk)
			}
			entries, _ := os.ReadDir(parent)
			for _, e := range entries {
				if e.Name() != name {
					t.Errorf("stray file %q created beside the data dir", e.Name())
				}
			}
		})
	}
}

// ---- Write ------------------------------------------------------------------

func TestWriteIsOneTransaction(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		// An op that fails: nothing Write is given fails on its own any more
		// (orphans are skipped), so a trigger makes one.
		trigger := `CREATE TRIGGER boom BEFORE INSERT ON sessions WHEN NEW.id = 'boom'
		BEGIN SELECT RAISE(ABORT, 'boom refused'); END`
		if s.Dialect() == "postgres" {
			trigger = `CREATE FUNCTION boom() RETURNS trigger AS $$ BEGIN RAISE 'boom refused'; END $$ LANGUAGE plpgsql;
			CREATE TRIGGER boom BEFORE INSERT ON sessions FOR EACH ROW WHEN (NEW.id = 'boom') EXECUTE FUNCTION boom()`
		}
		if _, err := s.db.Exec(trigger); err != nil {
			t.Fatal(err)
		}
		// State from an earlier, committed batch.
		write(t, s,
			Op{Session: session("s1", t0)},
			Op{Stream: &Stream{ID: "st1", Session: "s1"}},
			event("s1", "st1", 0, "old"),
		)

		batch := []Op{
			{Session: session("s2", t0.Add(time.Second))},
			{Stream: &Stream{ID: "st2", Session: "s2", Post: true, RequestID: "1"}},
			event("s2", "st2", 0, "new0"),
			event("s1", "st1", 1, "old1"),
			{Call: &Call{Stream: "st2", Server: "srv", UpstreamID: "u1"}},
			{Session: &Session{ID: "s1", LogLevel: "debug", LastSeen: t0.Add(time.Hour), Subscriptions: []string{"file:///x"}}},
			{Session: session("boom", t0)},
			event("s2", "st2", 1, "new1"),
		}
		err := s.Write(batch)
		if err == nil {
			t.Fatal("Write with a failing op succeeded")
		}
		if !strings.HasPrefix(err.Error(), "store:") || !strings.Contains(err.Error(), "boom refused") {
			t.Errorf("error %q lacks the store: prefix or the cause", err)
		}

		// Nothing of the batch is left.
		ss := sessionsByID(t, s)
		if _, ok := ss["s2"]; ok {
			t.Error("session s2 of the failed batch was kept")
		}
		if got := ss["s1"]; got.LogLevel != "info" || !got.LastSeen.Equal(t0) || got.Subscriptions != nil {
			t.Errorf("s1 changed by the failed batch: level %q, last seen %v, subs %v", got.LogLevel, got.LastSeen, got.Subscriptions)
		}
		for table, want := range map[string]int{"sessions": 1, "streams": 1, "events": 1, "calls": 0, "subscriptions": 0} {
			if n := count(t, s, "SELECT COUNT(*) FROM "+table); n != want {
				t.Errorf("%s: %d rows after the failed batch, want %d", table, n, want)
			}
		}
		if got := eventsAfter(t, s, "st1", -1); len(got) != 1 || string(got[0].Data) != "old" {
			t.Errorf("st1 events after the failed batch = %v", got)
		}

		// The same batch without the bad op goes through, in order.
		good := slices.Concat(batch[:6], batch[7:])
		write(t, s, good...)
		if got := seqs(eventsAfter(t, s, "st2", -1)); !slices.Equal(got, []int{0, 1}) {
			t.Errorf("st2 events = %v, want [0 1]", got)
		}
		if calls, err := s.Calls(); err != nil || len(calls) != 1 {
			t.Errorf("Calls = %v, %v", calls, err)
		}
	})
}

func TestWriteEmptyBatch(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		if err := s.Write(nil); err != nil {
			t.Errorf("Write(nil) = %v", err)
		}
		if err := s.Write([]Op{{}}); err != nil {
			t.Errorf("Write of an op with no field set = %v", err)
		}
	})
}

func TestSessionUpsert(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		first := session("s1", t0)
		first.Endpoint = "/github/mcp"
		write(t, s, Op{Session: first})

		got := sessionsByID(t, s)["s1"]
		if got.Endpoint != "/github/mcp" || got.Version != "2025-06-18" || got.LogLevel != "info" ||
			string(got.ClientInfo) != string(first.ClientInfo) || string(got.Capabilities) != string(first.Capabilities) ||
			!got.Created.Equal(t0) || !got.LastSeen.Equal(t0) {
			t.Errorf("first write round-trip = %+v", got)
		}

		later := t0.Add(90 * time.Second)
		write(t, s, Op{Session: &Session{
			ID: "s1", Endpoint: "/other/mcp", Version: "2024-11-05",
			ClientInfo: []byte(`{"name":"other"}`), Capabilities: []byte(`{}`),
			LogLevel: "debug", Created: later, LastSeen: later,
		}})
		ss := sessionsByID(t, s)
		if len(ss) != 1 {
			t.Fatalf("%d sessions after upsert, want 1", len(ss))
		}
		got = ss["s1"]
		// Kept: what the session was created with.
		if got.Endpoint != "/github/mcp" {
			t.Errorf("Endpoint = %q, want kept /github/mcp", got.Endpoint)
		}
		if got.Version != "2025-06-18" {
			t.Errorf("Version = %q, want kept 2025-06-18", got.Version)
		}
		if string(got.ClientInfo) != string(first.ClientInfo) {
			t.Errorf("ClientInfo = %s, want kept %s", got.ClientInfo, first.ClientInfo)
		}
		if string(got.Capabilities) != string(first.Capabilities) {
			t.Errorf("Capabilities = %s, want kept %s", got.Capabilities, first.Capabilities)
		}
		if !got.Created.Equal(t0) {
			t.Errorf("Created = %v, want kept %v", got.Created, t0)
		}
		// Updated: log level and last seen.
		if got.LogLevel != "debug" {
			t.Errorf("LogLevel = %q, want debug", got.LogLevel)
		}
		if !got.LastSeen.Equal(later) {
			t.Errorf("LastSeen = %v, want %v", got.LastSeen, later)
		}
	})
}

func TestSessionsOrderedByCreated(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		write(t, s,
			Op{Session: session("c", t0.Add(2*time.Second))},
			Op{Session: session("a", t0)},
			Op{Session: session("b", t0.Add(time.Second))},
		)
		ss, err := s.Sessions()
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, se := range ss {
			ids = append(ids, se.ID)
		}
		if !slices.Equal(ids, []string{"a", "b", "c"}) {
			t.Errorf("Sessions order = %v, want [a b c]", ids)
		}
	})
}

func TestSubscriptions(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		subs := func() []string { return sessionsByID(t, s)["s1"].Subscriptions }

		se := session("s1", t0)
		se.Subscriptions = []string{"file:///b", "file:///a"}
		write(t, s, Op{Session: se})
		if got := subs(); !slices.Equal(got, []string{"file:///a", "file:///b"}) {
			t.Errorf("after first write: %v, want [file:///a file:///b]", got)
		}

		// nil leaves them alone.
		se = session("s1", t0.Add(time.Second))
		se.Subscriptions = nil
		write(t, s, Op{Session: se})
		if got := subs(); !slices.Equal(got, []string{"file:///a", "file:///b"}) {
			t.Errorf("after nil Subscriptions: %v, want untouched [file:///a file:///b]", got)
		}

		// Non-nil replaces.
		se.Subscriptions = []string{"file:///c"}
		write(t, s, Op{Session: se})
		if got := subs(); !slices.Equal(got, []string{"file:///c"}) {
			t.Errorf("after replace: %v, want [file:///c]", got)
		}

		// Another session's subscriptions are its own.
		other := session("s2", t0)
		other.Subscriptions = []string{"file:///z"}
		write(t, s, Op{Session: other})
		if got := subs(); !slices.Equal(got, []string{"file:///c"}) {
			t.Errorf("s1 after s2's write: %v", got)
		}

		// Empty but non-nil clears.
		se.Subscriptions = []string{}
		write(t, s, Op{Session: se})
		if got := subs(); len(got) != 0 {
			t.Errorf("after empty Subscriptions: %v, want none", got)
		}
		if got := sessionsByID(t, s)["s2"].Subscriptions; !slices.Equal(got, []string{"file:///z"}) {
			t.Errorf("s2 subscriptions = %v, want [file:///z]", got)
		}
	})
}

func TestDeleteSessionCascades(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		for _, id := range []string{"gone", "kept"} {
			se := session(id, t0)
			se.Subscriptions = []string{"file:///" + id}
			write(t, s,
				Op{Session: se},
				Op{Stream: &Stream{ID: id + "-get", Session: id}},
				Op{Stream: &Stream{ID: id + "-post", Session: id, Post: true, RequestID: `"r"`}},
				event(id, id+"-get", 0, "g0"),
				event(id, id+"-post", 0, "p0"),
				event(id, id+"-post", 1, "p1"),
				Op{Call: &Call{Stream: id + "-post", Server: "srv", UpstreamID: "9"}},
			)
		}
		write(t, s, Op{DeleteSession: "gone"})

		for table, col := range map[string]string{"sessions": "id", "subscriptions": "session_id", "streams": "session_id", "events": "session_id"} {
			if n := count(t, s, "SELECT COUNT(*) FROM "+table+" WHERE "+col+" = 'gone'"); n != 0 {
				t.Errorf("%s: %d rows of the deleted session left", table, n)
			}
			if n := count(t, s, "SELECT COUNT(*) FROM "+table+" WHERE "+col+" = 'kept'"); n == 0 {
				t.Errorf("%s: the other session's rows were deleted too", table)
			}
		}
		if n := count(t, s, "SELECT COUNT(*) FROM calls WHERE stream_id = 'gone-post'"); n != 0 {
			t.Errorf("calls: %d rows of the deleted session left", n)
		}
		if got := eventsAfter(t, s, "gone-post", -1); len(got) != 0 {
			t.Errorf("EventsAfter of a deleted session's stream = %v", got)
		}
		if got := streamsByID(t, s, "gone"); len(got) != 0 {
			t.Errorf("Streams of the deleted session = %v", got)
		}
		calls, err := s.Calls()
		if err != nil {
			t.Fatal(err)
		}
		if len(calls) != 1 || calls[0].Stream != "kept-post" {
			t.Errorf("Calls = %+v, want only kept-post's", calls)
		}
		if n, b, err := s.Counts("gone"); err != nil || n != 0 || b != 0 {
			t.Errorf("Counts(gone) = %d, %d, %v", n, b, err)
		}
		if n, _, err := s.Counts("kept"); err != nil || n != 3 {
			t.Errorf("Counts(kept) = %d, %v; want 3", n, err)
		}
		// Deleting what is not there is not an error.
		write(t, s, Op{DeleteSession: "never"})
	})
}

// ---- Streams, events, calls -------------------------------------------------

func TestStreams(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		write(t, s,
			Op{Session: session("s1", t0)},
			Op{Session: session("s2", t0)},
			Op{Stream: &Stream{ID: "empty", Session: "s1"}},
			Op{Stream: &Stream{ID: "get", Session: "s1"}},
			Op{Stream: &Stream{ID: "post", Session: "s1", Post: true, RequestID: `{"id":"x"}`}},
			Op{Stream: &Stream{ID: "gap", Session: "s1", Post: true, RequestID: "42"}},
			Op{Stream: &Stream{ID: "elsewhere", Session: "s2"}},
			event("s2", "elsewhere", 0, "e"),
		)
		for i := range 5 {
			write(t, s, event("s1", "get", i, fmt.Sprint("g", i)))
		}
		write(t, s, event("s1", "post", 0, "p0"), event("s1", "gap", 0, "x"), event("s1", "gap", 7, "y"))
		// Finishing the POST stream: only finished changes.
		write(t, s, Op{Stream: &Stream{ID: "post", Session: "s1", Finished: true}})

		got := streamsByID(t, s, "s1")
		want := map[string]Stream{
			"empty": {ID: "empty", Session: "s1", NextSeq: 0},
			"get":   {ID: "get", Session: "s1", NextSeq: 5},
			"post":  {ID: "post", Session: "s1", Post: true, Finished: true, RequestID: `{"id":"x"}`, NextSeq: 1},
			"gap":   {ID: "gap", Session: "s1", Post: true, RequestID: "42", NextSeq: 8},
		}
		if !maps.Equal(got, want) {
			t.Errorf("Streams(s1) =\n %+v\nwant\n %+v", got, want)
		}
		if got := streamsByID(t, s, "s2"); len(got) != 1 || got["elsewhere"].NextSeq != 1 {
			t.Errorf("Streams(s2) = %+v", got)
		}
		if got := streamsByID(t, s, "unknown"); len(got) != 0 {
			t.Errorf("Streams(unknown) = %+v, want none", got)
		}
	})
}

func TestEventsAfter(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		write(t, s,
			Op{Session: session("s1", t0)},
			Op{Session: session("s2", t0)},
			Op{Stream: &Stream{ID: "a", Session: "s1"}},
			Op{Stream: &Stream{ID: "b", Session: "s1", Post: true}},
			Op{Stream: &Stream{ID: "c", Session: "s2"}},
		)
		// Interleave the streams so ids and seqs disagree.
		var ops []Op
		for i := range 6 {
			ops = append(ops, event("s1", "a", i, fmt.Sprint("a", i)), event("s1", "b", i, fmt.Sprint("b", i)), event("s2", "c", i, fmt.Sprint("c", i)))
		}
		// Written out of seq order: stored order is by seq, not by insertion.
		write(t, s, event("s1", "a", 10, "a10"))
		write(t, s, ops...)

		all := eventsAfter(t, s, "a", -1)
		if got := seqs(all); !slices.Equal(got, []int{0, 1, 2, 3, 4, 5, 10}) {
			t.Errorf("EventsAfter(a, -1) seqs = %v", got)
		}
		for _, e := range all {
			if e.Stream != "a" || e.Session != "s1" || string(e.Data) != fmt.Sprint("a", e.Seq) {
				t.Errorf("event %+v: wrong stream, session or data", e)
			}
		}
		if got := seqs(eventsAfter(t, s, "a", 2)); !slices.Equal(got, []int{3, 4, 5, 10}) {
			t.Errorf("EventsAfter(a, 2) = %v, want strictly after 2", got)
		}
		if got := seqs(eventsAfter(t, s, "a", 5)); !slices.Equal(got, []int{10}) {
			t.Errorf("EventsAfter(a, 5) = %v, want [10]", got)
		}
		if got := eventsAfter(t, s, "a", 10); len(got) != 0 {
			t.Errorf("EventsAfter(a, 10) = %v, want none", got)
		}
		if got := eventsAfter(t, s, "nope", -1); len(got) != 0 {
			t.Errorf("EventsAfter(unknown) = %v, want none", got)
		}

		// Replay never crosses streams, even within one session.
		for _, stream := range []string{"b", "c"} {
			for _, e := range eventsAfter(t, s, stream, -1) {
				if e.Stream != stream || !strings.HasPrefix(string(e.Data), stream) {
					t.Errorf("EventsAfter(%s) returned %+v", stream, e)
				}
			}
			if got := seqs(eventsAfter(t, s, stream, -1)); !slices.Equal(got, []int{0, 1, 2, 3, 4, 5}) {
				t.Errorf("EventsAfter(%s) = %v", stream, got)
			}
		}
	})
}

func TestEventData(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		big := bytes.Repeat([]byte{0, 1, 2, 0xff}, 64<<10)
		write(t, s,
			Op{Session: session("s1", t0)},
			Op{Stream: &Stream{ID: "a", Session: "s1"}},
			// A priming event has no data.
			Op{Event: &Event{Session: "s1", Stream: "a", Seq: 0, Data: nil}},
			Op{Event: &Event{Session: "s1", Stream: "a", Seq: 1, Data: big}},
			event("s1", "a", 2, "first"),
		)
		// A duplicate (stream, seq) is ignored, the first write wins.
		write(t, s, event("s1", "a", 2, "second"))

		evs := eventsAfter(t, s, "a", -1)
		if len(evs) != 3 {
			t.Fatalf("got %d events, want 3", len(evs))
		}
		if evs[0].Data != nil {
			t.Errorf("priming event data = %q, want nil", evs[0].Data)
		}
		if !bytes.Equal(evs[1].Data, big) {
			t.Errorf("binary event data corrupted (%d bytes back, want %d)", len(evs[1].Data), len(big))
		}
		if string(evs[2].Data) != "first" {
			t.Errorf("duplicate seq: data = %q, want the first write's", evs[2].Data)
		}
		n, b, err := s.Counts("s1")
		if err != nil || n != 3 || b != int64(len(big)+len("first")) {
			t.Errorf("Counts = %d, %d, %v; want 3, %d", n, b, err, len(big)+len("first"))
		}
	})
}

func TestCalls(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		write(t, s,
			Op{Session: session("s1", t0)},
			Op{Stream: &Stream{ID: "p1", Session: "s1", Post: true, RequestID: "1"}},
			Op{Stream: &Stream{ID: "p2", Session: "s1", Post: true, RequestID: "2"}},
		)
		if calls, err := s.Calls(); err != nil || len(calls) != 0 {
			t.Fatalf("Calls on an empty store = %v, %v", calls, err)
		}
		c1 := Call{Stream: "p1", Server: "github", UpstreamID: "17", HubToken: "hub-tok-1", ProgressToken: `"client-tok"`}
		c2 := Call{Stream: "p2", Server: "fs", UpstreamID: "18"}
		write(t, s, Op{Call: &c1}, Op{Call: &c2})

		load := func() map[string]Call {
			calls, err := s.Calls()
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]Call{}
			for _, c := range calls {
				out[c.Stream] = c
			}
			return out
		}
		if got := load(); !maps.Equal(got, map[string]Call{"p1": c1, "p2": c2}) {
			t.Errorf("Calls = %+v", got)
		}

		// A call written again for the same stream replaces it.
		c1b := Call{Stream: "p1", Server: "github", UpstreamID: "99"}
		write(t, s, Op{Call: &c1b})
		if got := load(); !maps.Equal(got, map[string]Call{"p1": c1b, "p2": c2}) {
			t.Errorf("after replace: %+v", got)
		}

		write(t, s, Op{DeleteCall: "p2"})
		if got := load(); !maps.Equal(got, map[string]Call{"p1": c1b}) {
			t.Errorf("after DeleteCall(p2): %+v", got)
		}
		// The stream outlives its call.
		if _, ok := streamsByID(t, s, "s1")["p2"]; !ok {
			t.Error("DeleteCall deleted the stream")
		}
	})
}

// ---- concurrency ------------------------------------------------------------

func TestConcurrentWriters(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		const (
			writers   = 8
			batches   = 40
			batchSize = 25
		)
		var wg sync.WaitGroup
		errs := make(chan error, writers*batches+writers)
		var slowMu sync.Mutex
		var slowest time.Duration // the longest a single Write took
		stop := make(chan struct{})

		// A reader alongside, as the hub replays while it writes.
		var rwg sync.WaitGroup
		rwg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.EventsAfter("w0/st", -1); err != nil {
					errs <- fmt.Errorf("reader: %w", err)
					return
				}
				if _, err := s.Sessions(); err != nil {
					errs <- fmt.Errorf("reader: %w", err)
					return
				}
			}
		})

		for w := range writers {
			wg.Go(func() {
				sess, st := fmt.Sprintf("w%d", w), fmt.Sprintf("w%d/st", w)
				start := time.Now()
				if err := s.Write([]Op{{Session: session(sess, t0)}, {Stream: &Stream{ID: st, Session: sess}}}); err != nil {
					errs <- fmt.Errorf("writer %d setup, after %v: %w", w, time.Since(start).Round(time.Millisecond), err)
					return
				}
				seq := 0
				for b := range batches {
					ops := make([]Op, 0, batchSize+1)
					for range batchSize {
						ops = append(ops, event(sess, st, seq, fmt.Sprintf(`{"w":%d,"seq":%d}`, w, seq)))
						seq++
					}
					ops = append(ops, Op{Session: session(sess, t0.Add(time.Duration(b)*time.Second))})
					start := time.Now()
					err := s.Write(ops)
					slowMu.Lock()
					slowest = max(slowest, time.Since(start))
					slowMu.Unlock()
					if err != nil {
						errs <- fmt.Errorf("writer %d batch %d, after %v: %w", w, b, time.Since(start).Round(time.Millisecond), err)
						return
					}
				}
			})
		}
		wg.Wait()
		close(stop)
		rwg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		// busy_timeout is 5s; a Write that comes close to it shows writers of
		// this one process starving each other on SQLite's polling busy handler.
		t.Logf("slowest Write: %v", slowest.Round(time.Millisecond))

		for w := range writers {
			sess, st := fmt.Sprintf("w%d", w), fmt.Sprintf("w%d/st", w)
			evs := eventsAfter(t, s, st, -1)
			if len(evs) != batches*batchSize {
				t.Errorf("writer %d: %d events readable, want %d", w, len(evs), batches*batchSize)
				continue
			}
			for i, e := range evs {
				if e.Seq != i || e.Session != sess || string(e.Data) != fmt.Sprintf(`{"w":%d,"seq":%d}`, w, i) {
					t.Errorf("writer %d: event %d = %+v", w, i, e)
					break
				}
			}
			if got := streamsByID(t, s, sess)[st].NextSeq; got != batches*batchSize {
				t.Errorf("writer %d: NextSeq = %d, want %d", w, got, batches*batchSize)
			}
		}
	})
}

// ---- upstreams, catalog -----------------------------------------------------

func TestUpstream(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		if _, err := s.Upstream("unknown"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Upstream(unknown) error = %v, want ErrNotFound", err)
		}
		if err := s.SaveUpstream("github", []byte(`{"session":"u1","last":{"s":"3"}}`)); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveUpstream("fs", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Upstream("github"); err != nil || string(got) != `{"session":"u1","last":{"s":"3"}}` {
			t.Errorf("Upstream(github) = %s, %v", got, err)
		}
		// Saving again replaces.
		if err := s.SaveUpstream("github", []byte(`{"session":"u2"}`)); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Upstream("github"); err != nil || string(got) != `{"session":"u2"}` {
			t.Errorf("Upstream(github) after replace = %s, %v", got, err)
		}
		if n := count(t, s, "SELECT COUNT(*) FROM upstreams"); n != 2 {
			t.Errorf("%d upstream rows, want 2", n)
		}
		if got, err := s.Upstream("fs"); err != nil || string(got) != `{}` {
			t.Errorf("Upstream(fs) = %s, %v", got, err)
		}
		s.Close()

		s = open(t)
		if got, err := s.Upstream("github"); err != nil || string(got) != `{"session":"u2"}` {
			t.Errorf("Upstream(github) after reopen = %s, %v", got, err)
		}
		if _, err := s.Upstream("unknown"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Upstream(unknown) after reopen error = %v, want ErrNotFound", err)
		}
	})
}

func TestCatalog(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		load := func(server string) map[string]string {
			t.Helper()
			items, err := s.Catalog(server)
			if err != nil {
				t.Fatalf("Catalog(%s): %v", server, err)
			}
			out := map[string]string{}
			for k, v := range items {
				out[k] = string(v)
			}
			return out
		}
		if got := load("github"); len(got) != 0 {
			t.Errorf("Catalog of an unknown server = %v, want empty", got)
		}

		first := map[string][]byte{
			"initialize":     []byte(`{"serverInfo":{"name":"gh"}}`),
			"tools/list":     []byte(`[{"name":"search"}]`),
			"resources/list": []byte(`[]`),
		}
		if err := s.SaveCatalog("github", first); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveCatalog("fs", map[string][]byte{"tools/list": []byte(`[{"name":"read"}]`)}); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"initialize": `{"serverInfo":{"name":"gh"}}`, "tools/list": `[{"name":"search"}]`, "resources/list": `[]`}
		if got := load("github"); !maps.Equal(got, want) {
			t.Errorf("Catalog(github) = %v, want %v", got, want)
		}

		// Saving again replaces everything: methods not in the new map go.
		if err := s.SaveCatalog("github", map[string][]byte{"tools/list": []byte(`[{"name":"search"},{"name":"pr"}]`)}); err != nil {
			t.Fatal(err)
		}
		if got := load("github"); !maps.Equal(got, map[string]string{"tools/list": `[{"name":"search"},{"name":"pr"}]`}) {
			t.Errorf("Catalog(github) after replace = %v", got)
		}
		// Other servers are untouched.
		if got := load("fs"); !maps.Equal(got, map[string]string{"tools/list": `[{"name":"read"}]`}) {
			t.Errorf("Catalog(fs) = %v", got)
		}
		// An empty map clears the server's catalog.
		if err := s.SaveCatalog("github", map[string][]byte{}); err != nil {
			t.Fatal(err)
		}
		if got := load("github"); len(got) != 0 {
			t.Errorf("Catalog(github) after saving an empty map = %v", got)
		}
		// A failed save (NULL items violate NOT NULL) leaves the old catalog.
		if err := s.SaveCatalog("fs", map[string][]byte{"prompts/list": nil}); err == nil {
			t.Error("SaveCatalog with nil items succeeded")
		}
		if got := load("fs"); !maps.Equal(got, map[string]string{"tools/list": `[{"name":"read"}]`}) {
			t.Errorf("Catalog(fs) after a failed save = %v, want the old one", got)
		}
	})
}

// ---- benchmark --------------------------------------------------------------

func BenchmarkWriteEvents(b *testing.B) {
	for _, size := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			s, err := Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if err := s.Write([]Op{{Session: session("s", t0)}, {Stream: &Stream{ID: "st", Session: "s"}}}); err != nil {
				b.Fatal(err)
			}
			data := []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`)
			evs := make([]Event, size)
			ops := make([]Op, size)
			for i := range evs {
				evs[i] = Event{Session: "s", Stream: "st", Data: data}
				ops[i] = Op{Event: &evs[i]}
			}
			b.ReportAllocs()
			seq := 0
			n := 0
			for b.Loop() {
				for i := range evs {
					evs[i].Seq = seq
					seq++
				}
				if err := s.Write(ops); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(n*size)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
