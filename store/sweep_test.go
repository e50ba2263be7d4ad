package store

import (
	"bytes"
	"database/sql"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// ---- Sweep ------------------------------------------------------------------

func TestSweepIdleSessions(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		cutoff := t0.Add(time.Hour)
		for id, seen := range map[string]time.Time{
			"old":     t0,
			"older":   t0.Add(-time.Hour),
			"edge":    cutoff, // last seen exactly at the cutoff: not idle before it
			"current": cutoff.Add(time.Minute),
		} {
			write(t, s,
				Op{Session: session(id, seen)},
				Op{Stream: &Stream{ID: id + "/st", Session: id, Post: true}},
				event(id, id+"/st", 0, "x"),
				Op{Call: &Call{Stream: id + "/st", Server: "srv", UpstreamID: "1"}},
			)
		}
		deleted, err := s.Sweep(cutoff, Retention{SessionEvents: 1000, SessionBytes: 1 << 20})
		if err != nil {
			t.Fatalf("Sweep: %v", err)
		}
		slices.Sort(deleted)
		if !slices.Equal(deleted, []string{"old", "older"}) {
			t.Errorf("Sweep deleted %v, want [old older]", deleted)
		}
		ss := sessionsByID(t, s)
		if len(ss) != 2 || ss["edge"].ID == "" || ss["current"].ID == "" {
			t.Errorf("sessions left = %v, want edge and current", slices.Collect(maps.Keys(ss)))
		}
		for _, id := range []string{"old", "older"} {
			if n := count(t, s, "SELECT COUNT(*) FROM events WHERE session_id = ?", id); n != 0 {
				t.Errorf("%d events of swept session %s left", n, id)
			}
			if n := count(t, s, "SELECT COUNT(*) FROM calls WHERE stream_id = ?", id+"/st"); n != 0 {
				t.Errorf("call of swept session %s left", id)
			}
		}
		for _, id := range []string{"edge", "current"} {
			if got := eventsAfter(t, s, id+"/st", -1); len(got) != 1 {
				t.Errorf("session %s: %d events left, want 1", id, len(got))
			}
		}

		// Nothing more to sweep.
		if deleted, err := s.Sweep(cutoff, Retention{SessionEvents: 1000, SessionBytes: 1 << 20}); err != nil || len(deleted) != 0 {
			t.Errorf("second Sweep = %v, %v; want nothing", deleted, err)
		}
	})
}

// writeInterleaved writes n events to each of streams a and b of session
// sess, alternating a0 b0 a1 b1 …, each event size bytes.
func writeInterleaved(t testing.TB, s *Store, sess string, n, size int) {
	t.Helper()
	ops := []Op{
		{Session: session(sess, t0)},
		{Stream: &Stream{ID: sess + "/a", Session: sess}},
		{Stream: &Stream{ID: sess + "/b", Session: sess, Post: true}},
	}
	for i := range n {
		for _, st := range []string{"a", "b"} {
			ops = append(ops, Op{Event: &Event{Session: sess, Stream: sess + "/" + st, Seq: i, Data: bytes.Repeat([]byte(st), size)}})
		}
	}
	write(t, s, ops...)
}

func TestSweepTrimsToMaxEvents(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		writeInterleaved(t, s, "s1", 8, 10) // a0 b0 … a7 b7: 16 events
		writeInterleaved(t, s, "s2", 2, 10) // 4 events: within budget
		deleted, err := s.Sweep(t0.Add(-time.Hour), Retention{SessionEvents: 5, SessionBytes: 1 << 20})
		if err != nil {
			t.Fatalf("Sweep: %v", err)
		}
		if len(deleted) != 0 {
			t.Errorf("Sweep deleted %v, want none", deleted)
		}
		if n, _, _ := s.Counts("s1"); n != 5 {
			t.Errorf("s1 has %d events, want 5", n)
		}
		// The newest five across both streams: b5 a6 b6 a7 b7.
		if got := seqs(eventsAfter(t, s, "s1/a", -1)); !slices.Equal(got, []int{6, 7}) {
			t.Errorf("s1/a kept %v, want [6 7]", got)
		}
		if got := seqs(eventsAfter(t, s, "s1/b", -1)); !slices.Equal(got, []int{5, 6, 7}) {
			t.Errorf("s1/b kept %v, want [5 6 7]", got)
		}
		// A Last-Event-ID whose successor was purged shows up as a gap, which
		// the hub reports as purged; one whose successor is kept does not.
		if evs := eventsAfter(t, s, "s1/a", 2); len(evs) == 0 || evs[0].Seq <= 3 {
			t.Errorf("EventsAfter(s1/a, 2) starts at %v, want a gap (> 3)", seqs(evs))
		}
		if evs := eventsAfter(t, s, "s1/a", 5); len(evs) == 0 || evs[0].Seq != 6 {
			t.Errorf("EventsAfter(s1/a, 5) = %v, want to start at 6", seqs(evs))
		}
		if evs := eventsAfter(t, s, "s1/b", 4); len(evs) == 0 || evs[0].Seq != 5 {
			t.Errorf("EventsAfter(s1/b, 4) = %v, want to start at 5", seqs(evs))
		}
		// Another session's budget is its own.
		if n, _, _ := s.Counts("s2"); n != 4 {
			t.Errorf("s2 has %d events, want all 4", n)
		}
		// Within budget now: a second sweep changes nothing.
		if _, err := s.Sweep(t0.Add(-time.Hour), Retention{SessionEvents: 5, SessionBytes: 1 << 20}); err != nil {
			t.Fatal(err)
		}
		if n, _, _ := s.Counts("s1"); n != 5 {
			t.Errorf("after a second sweep s1 has %d events, want 5", n)
		}

		// A zero field sets no bound: only the byte budget trims, here to the
		// newest two.
		if _, err := s.Sweep(t0.Add(-time.Hour), Retention{SessionEvents: 0, SessionBytes: 25}); err != nil {
			t.Fatal(err)
		}
		if n, _, _ := s.Counts("s1"); n != 2 {
			t.Errorf("after Sweep with SessionEvents 0 and 25 bytes, s1 has %d events, want 2", n)
		}
		if _, err := s.Sweep(t0.Add(-time.Hour), Retention{}); err != nil {
			t.Fatal(err)
		}
		if n, _, _ := s.Counts("s1"); n != 2 {
			t.Errorf("after Sweep with no bounds, s1 has %d events, want 2 kept", n)
		}
	})
}

func TestSweepTrimsToMaxBytes(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		writeInterleaved(t, s, "s1", 5, 10) // 10 events × 10 bytes
		if _, err := s.Sweep(t0.Add(-time.Hour), Retention{SessionEvents: 1000, SessionBytes: 35}); err != nil {
			t.Fatalf("Sweep: %v", err)
		}
		n, b, err := s.Counts("s1")
		if err != nil {
			t.Fatal(err)
		}
		if n != 3 || b != 30 {
			t.Errorf("after a 35-byte budget: %d events, %d bytes; want 3, 30", n, b)
		}
		// Newest three: b3 a4 b4.
		if got := seqs(eventsAfter(t, s, "s1/a", -1)); !slices.Equal(got, []int{4}) {
			t.Errorf("s1/a kept %v, want [4]", got)
		}
		if got := seqs(eventsAfter(t, s, "s1/b", -1)); !slices.Equal(got, []int{3, 4}) {
			t.Errorf("s1/b kept %v, want [3 4]", got)
		}

		// Mixed sizes: trimming stops at the first (newest-first) event that
		// does not fit, and drops everything older, even small ones.
		s2 := openT(t, t.TempDir())
		write(t, s2,
			Op{Session: session("m", t0)},
			Op{Stream: &Stream{ID: "m/a", Session: "m"}},
			event("m", "m/a", 0, "x"),
			event("m", "m/a", 1, strings.Repeat("y", 50)),
			event("m", "m/a", 2, strings.Repeat("z", 20)),
			event("m", "m/a", 3, strings.Repeat("w", 20)),
		)
		if _, err := s2.Sweep(t0.Add(-time.Hour), Retention{SessionEvents: 1000, SessionBytes: 45}); err != nil {
			t.Fatal(err)
		}
		if got := seqs(eventsAfter(t, s2, "m/a", -1)); !slices.Equal(got, []int{2, 3}) {
			t.Errorf("mixed sizes kept %v, want [2 3]", got)
		}
	})
}

// A stream's first event is a priming event with nil data (see
// hub.EventRecord), stored as NULL. Every stream of a session starts with one,
// so trimming newest-first soon reaches one and must not trip over it.
func TestSweepTrimsPastPrimingEvent(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		write(t, s,
			Op{Session: session("s1", t0)},
			Op{Stream: &Stream{ID: "a", Session: "s1"}},
			Op{Event: &Event{Session: "s1", Stream: "a", Seq: 0, Data: nil}}, // priming
			event("s1", "a", 1, "one"),
			event("s1", "a", 2, "two"),
			event("s1", "a", 3, "three"),
			Op{Stream: &Stream{ID: "b", Session: "s1", Post: true}},
			Op{Event: &Event{Session: "s1", Stream: "b", Seq: 0, Data: nil}}, // priming
			event("s1", "b", 1, "reply"),
		)
		if _, err := s.Sweep(t0.Add(-time.Hour), Retention{SessionEvents: 3, SessionBytes: 1 << 20}); err != nil {
			t.Fatalf("Sweep over budget with a priming event among the newest: %v", err)
		}
		if got := seqs(eventsAfter(t, s, "a", -1)); !slices.Equal(got, []int{3}) {
			t.Errorf("a kept %v, want [3]", got)
		}
		if got := seqs(eventsAfter(t, s, "b", -1)); !slices.Equal(got, []int{0, 1}) {
			t.Errorf("b kept %v, want [0 1]", got)
		}
		// The byte budget counts a priming event as 0 bytes.
		if _, err := s.Sweep(t0.Add(-time.Hour), Retention{SessionEvents: 1000, SessionBytes: 5}); err != nil {
			t.Fatalf("Sweep (bytes) with a priming event: %v", err)
		}
		if got := seqs(eventsAfter(t, s, "b", -1)); !slices.Equal(got, []int{0, 1}) {
			t.Errorf("b kept %v under a 5-byte budget, want [0 1]", got)
		}
		if got := eventsAfter(t, s, "a", -1); len(got) != 0 {
			t.Errorf("a kept %v under a 5-byte budget, want none", seqs(got))
		}
	})
}

// Purging every stored event of a stream must not lose where the stream's
// numbering stands: after a restart the hub continues the stream at NextSeq,
// and restarting at 0 would reuse event ids a client has already seen (and
// turn a purged Last-Event-ID into a "bad id" or, worse, a valid one that
// silently skips the new events).
func TestStreamsNextSeqSurvivesPurge(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		write(t, s,
			Op{Session: session("s1", t0)},
			Op{Stream: &Stream{ID: "quiet", Session: "s1"}},
			Op{Stream: &Stream{ID: "busy", Session: "s1", Post: true}},
		)
		for i := range 4 {
			write(t, s, event("s1", "quiet", i, "q"))
		}
		for i := range 10 {
			write(t, s, event("s1", "busy", i, "b"))
		}
		if _, err := s.Sweep(t0.Add(-time.Hour), Retention{SessionEvents: 5, SessionBytes: 1 << 20}); err != nil {
			t.Fatal(err)
		}
		if got := eventsAfter(t, s, "quiet", -1); len(got) != 0 {
			t.Fatalf("setup: quiet still has %v", seqs(got))
		}
		got := streamsByID(t, s, "s1")
		if got["busy"].NextSeq != 10 {
			t.Errorf("busy NextSeq = %d, want 10", got["busy"].NextSeq)
		}
		if got["quiet"].NextSeq != 4 {
			t.Errorf("quiet NextSeq after all its events were purged = %d, want 4 (one past the last event ever written)", got["quiet"].NextSeq)
		}
	})
}

// ---- retention by age and in all ----------------------------------------

// setStored dates a stream's event as stored at a time.
func setStored(t testing.TB, s *Store, stream string, seq int, at time.Time) {
	t.Helper()
	if _, err := s.db.Exec(s.dialect.q(`UPDATE events SET stored = ? WHERE stream_id = ? AND seq = ?`), at.UnixNano(), stream, seq); err != nil {
		t.Fatal(err)
	}
}

// totalBytes is the size of every stored event.
func totalBytes(t testing.TB, s *Store) int {
	t.Helper()
	return count(t, s, `SELECT COALESCE(SUM(LENGTH(data)), 0) FROM events`)
}

func TestSweepDropsEventsByAge(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		writeInterleaved(t, s, "s1", 4, 10) // a0 b0 a1 b1 a2 b2 a3 b3
		writeInterleaved(t, s, "s2", 2, 10) // a0 b0 a1 b1
		// s1's events were stored a minute apart, oldest first; s2's after.
		at := map[string]time.Time{}
		i := 0
		for _, sess := range []string{"s1", "s2"} {
			n := map[string]int{"s1": 4, "s2": 2}[sess]
			for seq := range n {
				for _, st := range []string{"a", "b"} {
					when := t0.Add(time.Duration(i) * time.Minute)
					setStored(t, s, sess+"/"+st, seq, when)
					at[fmt.Sprintf("%s/%s%d", sess, st, seq)] = when
					i++
				}
			}
		}
		// Before a2's time: a0 b0 a1 b1 of s1 go.
		cut := at["s1/a2"]
		if _, err := s.Sweep(t0.Add(-time.Hour), Retention{Before: cut}); err != nil {
			t.Fatal(err)
		}
		if got := seqs(eventsAfter(t, s, "s1/a", -1)); !slices.Equal(got, []int{2, 3}) {
			t.Errorf("s1/a kept %v, want [2 3]", got)
		}
		if got := seqs(eventsAfter(t, s, "s1/b", -1)); !slices.Equal(got, []int{2, 3}) {
			t.Errorf("s1/b kept %v, want [2 3]", got)
		}
		if n, _, _ := s.Counts("s2"); n != 4 {
			t.Errorf("s2 kept %d events, want all 4 (newer than the cut)", n)
		}
		// The streams' numbering goes on past what was dropped.
		if got := streamsByID(t, s, "s1")["s1/a"].NextSeq; got != 4 {
			t.Errorf("s1/a NextSeq = %d, want 4", got)
		}

		// Everything older than all of it: a stream left empty keeps its
		// numbering.
		if _, err := s.Sweep(t0.Add(-time.Hour), Retention{Before: t0.Add(24 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if n := count(t, s, "SELECT COUNT(*) FROM events"); n != 0 {
			t.Errorf("%d events left, want none", n)
		}
		for sess, want := range map[string]int{"s1": 4, "s2": 2} {
			for id, st := range streamsByID(t, s, sess) {
				if st.NextSeq != want {
					t.Errorf("%s NextSeq = %d after every event went, want %d", id, st.NextSeq, want)
				}
			}
		}
	})
}

// Events are dropped by age from the oldest end only: a newer event stored
// before an older one (the clock stepped back) holds back the ones after
// it, so no stream gets a hole.
func TestSweepByAgeNeverPunchesHoles(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		write(t, s, Op{Session: session("s1", t0)}, Op{Stream: &Stream{ID: "a", Session: "s1"}})
		for seq := range 5 {
			write(t, s, event("s1", "a", seq, "x"))
		}
		for seq, min := range []int{0, 1, 30, 2, 3} { // seq 2 dated after the cut
			setStored(t, s, "a", seq, t0.Add(time.Duration(min)*time.Minute))
		}
		if _, err := s.Sweep(t0.Add(-time.Hour), Retention{Before: t0.Add(10 * time.Minute)}); err != nil {
			t.Fatal(err)
		}
		if got := seqs(eventsAfter(t, s, "a", -1)); !slices.Equal(got, []int{2, 3, 4}) {
			t.Errorf("kept %v, want [2 3 4]", got)
		}
	})
}

func TestSweepTrimsTotalBytesOldestFirstAcrossSessions(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		writeInterleaved(t, s, "old", 3, 10) // 6 events, 60 bytes, the oldest
		writeInterleaved(t, s, "mid", 3, 10)
		writeInterleaved(t, s, "new", 3, 10)
		// 180 bytes in all; a 95-byte budget keeps the newest 9 events: new's
		// six and mid's last three (b1 a2 b2).
		if _, err := s.Sweep(t0.Add(-time.Hour), Retention{TotalBytes: 95}); err != nil {
			t.Fatal(err)
		}
		if got := totalBytes(t, s); got != 90 {
			t.Errorf("%d bytes kept, want 90", got)
		}
		if n, _, _ := s.Counts("old"); n != 0 {
			t.Errorf("old kept %d events, want none", n)
		}
		if got := seqs(eventsAfter(t, s, "mid/a", -1)); !slices.Equal(got, []int{2}) {
			t.Errorf("mid/a kept %v, want [2]", got)
		}
		if got := seqs(eventsAfter(t, s, "mid/b", -1)); !slices.Equal(got, []int{1, 2}) {
			t.Errorf("mid/b kept %v, want [1 2]", got)
		}
		if n, _, _ := s.Counts("new"); n != 6 {
			t.Errorf("new kept %d events, want all 6", n)
		}
		// Sessions themselves are not touched by retention.
		if n := len(sessionsByID(t, s)); n != 3 {
			t.Errorf("%d sessions, want 3", n)
		}
		if got := streamsByID(t, s, "old")["old/a"].NextSeq; got != 3 {
			t.Errorf("old/a NextSeq = %d, want 3", got)
		}
	})
}

// The rules apply in order (age, then each session, then all together),
// and a trim deletes in bounded steps: more events than one step takes
// still all go.
func TestSweepAppliesEveryRuleAcrossSteps(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		const n = 2*stepEvents + 500
		writeInterleaved(t, s, "small", 5, 10) // the oldest
		ops := []Op{{Session: session("big", t0)}, {Stream: &Stream{ID: "big/get", Session: "big"}}}
		for seq := range n {
			ops = append(ops, event("big", "big/get", seq, "0123456789"))
		}
		write(t, s, ops...)
		if _, err := s.db.Exec(s.dialect.q(`UPDATE events SET stored = ?`), t0.UnixNano()); err != nil {
			t.Fatal(err)
		}
		if _, err := s.db.Exec(s.dialect.q(`UPDATE events SET stored = ? WHERE session_id = 'big' AND seq >= 100`), t0.Add(time.Hour).UnixNano()); err != nil {
			t.Fatal(err)
		}
		keep := Retention{Before: t0.Add(time.Minute), SessionEvents: n - 200, SessionBytes: 1 << 20, TotalBytes: 10 * 50}
		if _, err := s.Sweep(t0.Add(-time.Hour), keep); err != nil {
			t.Fatal(err)
		}
		// Age took big's first 100 and all of small, the session rule the next
		// 100, the total budget all but the newest 50.
		if got := seqs(eventsAfter(t, s, "big/get", -1)); len(got) != 50 || got[0] != n-50 || got[49] != n-1 {
			t.Errorf("big/get kept %d events from %v, want the newest 50", len(got), got[:min(len(got), 3)])
		}
		if n, _, _ := s.Counts("small"); n != 0 {
			t.Errorf("small kept %d events, want none (older than Before)", n)
		}
	})
}

// The figures retention runs on come from the events_session index alone,
// never from reading the events' data.
func TestRetentionFiguresReadTheIndexOnly(t *testing.T) {
	s := openT(t, t.TempDir())
	for _, q := range []string{
		`SELECT COUNT(*), COALESCE(SUM(size), 0) FROM events WHERE session_id = 'x'`,
		`SELECT COALESCE(SUM(size), 0) FROM events`,
		`SELECT session_id FROM events GROUP BY session_id HAVING COUNT(*) > 1 OR SUM(size) > 1`,
		`SELECT id, size, 0 FROM events WHERE session_id = 'x' ORDER BY id`,
	} {
		rows, err := s.db.Query("EXPLAIN QUERY PLAN " + q)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if p := strings.Join(plan, "; "); !strings.Contains(p, "COVERING INDEX events_session") || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%s\n\tplan: %s\n\twant a scan of the covering index events_session and no sort", q, p)
		}
	}
}

// TestTrimTotalStaleFigure: a total measured before a session was deleted
// is too big, and dropping by it would take more than the budget asks.
func TestTrimTotalStaleFigure(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		writeInterleaved(t, s, "a", 2, 10)
		writeInterleaved(t, s, "b", 2, 10)
		seen := s.shrunk.Load()
		// Measured: 80 bytes, 30 over a 50-byte budget. Then b goes.
		write(t, s, Op{DeleteSession: "b"})
		stale, err := s.dropExcess(30, seen)
		if err != nil || !stale {
			t.Fatalf("dropExcess after a delete = %v, %v; want stale", stale, err)
		}
		if n, _, _ := s.Counts("a"); n != 4 {
			t.Errorf("a has %d events after a stale figure, want all 4", n)
		}
		// The sweep measures again and leaves a alone: it fits.
		if _, err := s.Sweep(t0.Add(-time.Hour), Retention{TotalBytes: 50}); err != nil {
			t.Fatal(err)
		}
		if n, _, _ := s.Counts("a"); n != 4 {
			t.Errorf("a has %d events after the sweep, want all 4", n)
		}
	})
}

// A database from before events knew their time and size is migrated: the
// stored events count as stored at the upgrade (so the first sweep does not
// purge them) and their size is their data's.
func TestMigrationDatesAndSizesOldEvents(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	first, err := migrations.ReadFile("migrations/sqlite/001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(string(first) + `;
		PRAGMA user_version = 1;
		INSERT INTO sessions (id, endpoint, version, created, last_seen) VALUES ('s1', '/mcp', 'v', 0, 0);
		INSERT INTO streams (id, session_id, post) VALUES ('a', 's1', 0);
		INSERT INTO events (stream_id, seq, session_id, data) VALUES ('a', 0, 's1', NULL), ('a', 1, 's1', 'hello'), ('a', 2, 's1', zeroblob(5000));`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}

	before := time.Now().Add(-time.Second)
	s := openT(t, dir)
	after := time.Now().Add(time.Second)
	if n, b, err := s.Counts("s1"); err != nil || n != 3 || b != 5005 {
		t.Errorf("Counts after the migration = %d, %d, %v; want 3, 5005", n, b, err)
	}
	rows, err := s.db.Query(`SELECT seq, stored FROM events ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var seq int
		var stored int64
		if err := rows.Scan(&seq, &stored); err != nil {
			t.Fatal(err)
		}
		if at := time.Unix(0, stored); at.Before(before) || at.After(after) {
			t.Errorf("event %d stored at %v, want the migration's time (%v…%v)", seq, at, before, after)
		}
	}
	rows.Close()
	// (The session was last seen at 0: no idle cutoff before it.)
	if _, err := s.Sweep(time.Unix(0, 0), Retention{Before: before.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if got := seqs(eventsAfter(t, s, "a", -1)); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("events after the first sweep = %v, want all three", got)
	}
}

// Events written now carry their time and size.
func TestWriteRecordsStoredAndSize(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		before := time.Now()
		write(t, s,
			Op{Session: session("s1", t0)},
			Op{Stream: &Stream{ID: "a", Session: "s1"}},
			Op{Event: &Event{Session: "s1", Stream: "a", Seq: 0}},
			event("s1", "a", 1, strings.Repeat("x", 300)),
		)
		after := time.Now()
		var sizes []int
		rows, err := s.db.Query(`SELECT size, stored FROM events ORDER BY seq`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var size int
			var stored int64
			if err := rows.Scan(&size, &stored); err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, size)
			if at := time.Unix(0, stored); at.Before(before) || at.After(after) {
				t.Errorf("stored = %v, want between %v and %v", at, before, after)
			}
		}
		if !slices.Equal(sizes, []int{0, 300}) {
			t.Errorf("sizes = %v, want [0 300]", sizes)
		}
		if !bytes.Equal(eventsAfter(t, s, "a", 0)[0].Data, bytes.Repeat([]byte("x"), 300)) {
			t.Error("data changed")
		}
	})
}
