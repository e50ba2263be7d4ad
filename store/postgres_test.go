package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcphub/mcphub/store/pgtest"
)

func TestOpenURLReopenKeepsEverything(t *testing.T) {
	u := pgtest.URL(t)
	s := openURLT(t, u)
	write(t, s,
		Op{Session: session("s1", t0)},
		Op{Stream: &Stream{ID: "st1", Session: "s1", Post: true, RequestID: "7"}},
		event("s1", "st1", 0, "a"),
		event("s1", "st1", 1, "b"),
	)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v, want nil (idempotent)", err)
	}
	// A second migration run would fail on CREATE TABLE sessions, so
	// reopening at all shows the applied migrations are skipped.
	for i := range 2 {
		s := openURLT(t, u)
		if v, err := s.SchemaVersion(); err != nil || v != Migrations() {
			t.Errorf("reopen %d: SchemaVersion = %d, %v; want %d", i, v, err, Migrations())
		}
		if got := seqs(eventsAfter(t, s, "st1", -1)); !slices.Equal(got, []int{0, 1}) {
			t.Errorf("reopen %d: events = %v, want [0 1]", i, got)
		}
		if s.Path() != "" || s.Dialect() != "postgres" {
			t.Errorf("Path, Dialect = %q, %q", s.Path(), s.Dialect())
		}
	}
}

// Replicas started together run the migrations once: the advisory lock
// makes the others wait and then find the schema current.
func TestOpenURLReplicasMigrateOnce(t *testing.T) {
	u := pgtest.URL(t)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() {
			s, err := OpenURL(context.Background(), u)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
}

func TestOpenURLRefusesNewerSchema(t *testing.T) {
	u := pgtest.URL(t)
	s := openURLT(t, u)
	n := Migrations()
	if _, err := s.db.Exec(`UPDATE mcphub_schema SET version = $1`, n+1); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2, err := OpenURL(context.Background(), u)
	if err == nil {
		s2.Close()
		t.Fatal("OpenURL of a database newer than the migrations succeeded, want an error")
	}
	for _, want := range []string{"newer", fmt.Sprint(n + 1), fmt.Sprintf("(%d)", n), "127.0.0.1", "another database"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// An unreachable database fails at once with its URL, password masked, and
// the reason.
func TestOpenURLUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	raw := "postgres://team:s3cret-Pa55@" + addr + "/mcphub?sslmode=disable&connect_timeout=5"
	s, err := OpenURL(context.Background(), raw)
	if err == nil {
		s.Close()
		t.Fatal("OpenURL of a closed port succeeded")
	}
	msg := err.Error()
	if strings.Contains(msg, "s3cret") {
		t.Errorf("error shows the password: %s", msg)
	}
	for _, want := range []string{"cannot reach", "team:xxxxx@" + addr, "refused"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
}

func TestOpenURLRejectsOtherSchemes(t *testing.T) {
	for _, raw := range []string{"mysql://u:pw@h/db", "/var/lib/mcphub", "host=h password=pw"} {
		s, err := OpenURL(context.Background(), raw)
		if err == nil {
			s.Close()
			t.Errorf("OpenURL(%q) succeeded", raw)
			continue
		}
		if strings.Contains(err.Error(), "pw@") || strings.Contains(err.Error(), "password=pw") {
			t.Errorf("OpenURL(%q) error shows the password: %v", raw, err)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for raw, want := range map[string]string{
		"postgres://u:secret@h:5432/db":                           "postgres://u:xxxxx@h:5432/db",
		"postgres://u@h/db?sslmode=disable":                       "postgres://u@h/db?sslmode=disable",
		"postgresql://h/db?password=secret&sslmode=off":           "postgresql://h/db?password=xxxxx&sslmode=off",
		"postgres://u:p%40ss@h/db":                                "postgres://u:xxxxx@h/db",
		"postgres://h/db?sslpassword=hunter2&sslmode=verify-full": "postgres://h/db?sslmode=verify-full&sslpassword=xxxxx",
		"::not a url": "(a database URL that does not parse)",
	} {
		if got := RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestScrubKeepsTheOriginalError(t *testing.T) {
	base := errors.New(`cannot parse "postgres://u:hunter2@h/db"`)
	err := scrub(base, "postgres://u:hunter2@h/db")
	if strings.Contains(err.Error(), "hunter2") || !errors.Is(err, base) {
		t.Errorf("scrub = %v (Is base: %v)", err, errors.Is(err, base))
	}
}

// The two dialects' migrations make the same tables with the same columns.
func TestDialectsMakeTheSameSchema(t *testing.T) {
	lite := openT(t, t.TempDir())
	pg := openURLT(t, pgtest.URL(t))
	columns := func(db *sql.DB, query string) map[string][]string {
		t.Helper()
		rows, err := db.Query(query)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string][]string{}
		for rows.Next() {
			var table, col string
			if err := rows.Scan(&table, &col); err != nil {
				t.Fatal(err)
			}
			out[table] = append(out[table], col)
		}
		for _, cols := range out {
			slices.Sort(cols)
		}
		return out
	}
	want := columns(lite.db, `SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p
		WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'`)
	got := columns(pg.db, `SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name <> 'mcphub_schema'`)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("PostgreSQL schema\n %v\nSQLite schema\n %v", got, want)
	}
	if len(want) < 7 {
		t.Errorf("SQLite schema has %d tables, want every table: %v", len(want), want)
	}
}

func TestPlaceholders(t *testing.T) {
	for in, want := range map[string]string{
		`SELECT 1`:                             `SELECT 1`,
		`a = ? AND b = ?`:                      `a = $1 AND b = $2`,
		`SELECT ?1, ?2 WHERE id = ?2`:          `SELECT $1, $2 WHERE id = $2`,
		`x IN (?, ?, ?) LIMIT ?`:               `x IN ($1, $2, $3) LIMIT $4`,
		`UPDATE t SET v = ? WHERE k = ? AND ?`: `UPDATE t SET v = $1 WHERE k = $2 AND $3`,
	} {
		if got := postgresDialect.q(in); got != want {
			t.Errorf("q(%q) = %q, want %q", in, got, want)
		}
		if got := sqliteDialect.q(in); got != in {
			t.Errorf("sqlite q(%q) = %q, want it unchanged", in, got)
		}
	}
}

func TestInspect(t *testing.T) {
	ctx := context.Background()
	u := pgtest.URL(t)
	dir := t.TempDir()
	for _, target := range []string{u, dir} {
		r, err := Inspect(ctx, target)
		if err != nil || r.Exists || r.Version != 0 || r.Known != Migrations() {
			t.Errorf("Inspect(%s) before any open = %+v, %v; want no database yet", r.Where, r, err)
		}
	}
	openURLT(t, u).Close()
	openT(t, dir).Close()
	for _, target := range []string{u, dir} {
		r, err := Inspect(ctx, target)
		if err != nil || !r.Exists || r.Version != Migrations() {
			t.Errorf("Inspect(%s) = %+v, %v; want the current schema", r.Where, r, err)
		}
	}
	if r, _ := Inspect(ctx, u); r.Dialect != "postgres" || !strings.HasPrefix(r.Server, "1") {
		t.Errorf("Inspect(postgres) = %+v, want the server's version", r)
	}
	// Inspecting changes nothing: a database it did not find stays unmade.
	fresh := t.TempDir()
	Inspect(ctx, fresh)
	if r, _ := Inspect(ctx, fresh); r.Exists {
		t.Errorf("Inspect made a database in %s", fresh)
	}
}

// Replicas save one server's catalog at the same moments: no save fails on
// a key another inserted, nor deadlocks, and the last one stands whole.
func TestSaveCatalogConcurrentReplicas(t *testing.T) {
	u := pgtest.URL(t)
	stores := []*Store{openURLT(t, u), openURLT(t, u), openURLT(t, u)}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i, s := range stores {
		for j := range 8 {
			wg.Go(func() {
				items := map[string][]byte{"initialize": []byte(`{}`), "tools/list": []byte(fmt.Sprintf(`[%d]`, i*10+j)),
					"prompts/list": []byte(`[]`), "resources/list": []byte(`[]`)}
				if j%2 == 0 {
					delete(items, "prompts/list")
				}
				if err := s.SaveCatalog("up", items); err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("SaveCatalog: %v", err)
	}
	got, err := stores[0].Catalog("up")
	if err != nil || len(got) < 3 || string(got["initialize"]) != `{}` {
		t.Errorf("Catalog after the saves = %v, %v", got, err)
	}
}

// A write the database will never take (a NUL in text, on PostgreSQL)
// says so (RefusedError); a database that cannot be reached does not.
func TestWriteRefusedSaysSo(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		write(t, s, Op{Session: session("s1", t0)})
		var err error
		if s.Dialect() == "postgres" {
			err = s.Write([]Op{{Session: &Session{ID: "s1", Endpoint: "/mcp", Version: "v", LogLevel: "x\x00y", Subscriptions: []string{"a\x00b"}, Created: t0, LastSeen: t0}}})
		} else {
			// SQLite holds NULs; a constraint is what it refuses.
			_, err = s.db.Exec(`INSERT INTO sessions (id, endpoint, version, created, last_seen) VALUES ('s1', '/mcp', 'v', 0, 0)`)
			err = classify(err)
		}
		var refused *RefusedError
		if !errors.As(err, &refused) || !refused.Refused() {
			t.Errorf("a refused write: %v, want a RefusedError", err)
		}
	})
	if err := classify(errors.New("connection refused")); errors.As(err, new(*RefusedError)) {
		t.Errorf("a lost connection classified as refused: %v", err)
	}
}
