package store

import (
	"maps"
	"slices"
	"testing"
)

// A session deleted while a call was still answering leaves writes in
// flight for it: the call's events, its stream's final state, the call
// record. They arrive in a later batch, beside other sessions' writes, and
// must be skipped, not fail that batch ("FOREIGN KEY constraint failed")
// and lose the other sessions' writes with it.
func TestWriteSkipsWritesForDeletedSession(t *testing.T) {
	cases := []struct {
		name string
		late Op
	}{
		{"event of its stream", event("x", "x/post", 2, "late result")},
		{"stream of it", Op{Stream: &Stream{ID: "x/post2", Session: "x", Post: true, RequestID: "2"}}},
		{"final state of its stream", Op{Stream: &Stream{ID: "x/post", Session: "x", Post: true, RequestID: "1", Finished: true}}},
		{"call of its stream", Op{Call: &Call{Stream: "x/post", Server: "srv", UpstreamID: "7"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := openT(t, t.TempDir())
			write(t, s,
				Op{Session: session("x", t0)},
				Op{Stream: &Stream{ID: "x/post", Session: "x", Post: true, RequestID: "1"}},
				event("x", "x/post", 0, ""),
				event("x", "x/post", 1, "progress"),
				Op{Call: &Call{Stream: "x/post", Server: "srv", UpstreamID: "7"}},
			)
			write(t, s, Op{DeleteSession: "x"})

			if err := s.Write([]Op{
				tc.late,
				{Session: session("y", t0)},
				{Stream: &Stream{ID: "y/get", Session: "y"}},
				event("y", "y/get", 0, "hello"),
			}); err != nil {
				t.Fatalf("Write after the session was deleted: %v", err)
			}
			if _, ok := sessionsByID(t, s)["y"]; !ok {
				t.Error("session y of the same batch was not stored")
			}
			if got := seqs(eventsAfter(t, s, "y/get", -1)); !slices.Equal(got, []int{0}) {
				t.Errorf("y/get events = %v, want [0]", got)
			}
			// Nothing of x came back.
			for table, col := range map[string]string{"sessions": "id", "streams": "session_id", "events": "session_id"} {
				if n := count(t, s, "SELECT COUNT(*) FROM "+table+" WHERE "+col+" = 'x'"); n != 0 {
					t.Errorf("%s: %d rows of the deleted session", table, n)
				}
			}
			if n := count(t, s, "SELECT COUNT(*) FROM calls"); n != 0 {
				t.Errorf("calls: %d rows, want none", n)
			}
		})
	}
}

// Within one batch, a write for a session deleted earlier in the batch is
// skipped too, and so is an event of a stream never stored.
func TestWriteSkipsOrphansInOneBatch(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		s := open(t)
		write(t, s,
			Op{Session: session("x", t0)},
			Op{Stream: &Stream{ID: "x/get", Session: "x"}},
		)
		write(t, s,
			Op{DeleteSession: "x"},
			event("x", "x/get", 0, "late"),
			event("z", "never-stored", 0, "lost"),
			Op{Session: session("y", t0)},
		)
		if got := slices.Sorted(maps.Keys(sessionsByID(t, s))); !slices.Equal(got, []string{"y"}) {
			t.Errorf("sessions = %v, want [y]", got)
		}
		if n := count(t, s, "SELECT COUNT(*) FROM events"); n != 0 {
			t.Errorf("%d events stored, want none", n)
		}
	})
}
