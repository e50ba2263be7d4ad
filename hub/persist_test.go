package hub

import (
	"log/slog"
	"maps"
	"sync"
	"testing"
	"time"
)

// recreatingStore is a Store whose file "was deleted": its first Check
// reports that it created the file anew. It records the sessions and
// streams written to it.
type recreatingStore struct {
	mu       sync.Mutex
	sweeps   int
	checked  bool
	sessions map[string]bool
	streams  map[string]bool
}

func (s *recreatingStore) Write(ops []StoreOp) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, op := range ops {
		if op.Session != nil {
			s.sessions[op.Session.ID] = true
		}
		if op.Stream != nil {
			s.streams[op.Stream.ID] = true
		}
	}
	return nil
}

func (s *recreatingStore) Check() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := !s.checked
	s.checked = true
	if first {
		s.sessions, s.streams = map[string]bool{}, map[string]bool{}
	}
	return first, nil
}

func (s *recreatingStore) saved() (sessions, streams map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.sessions), maps.Clone(s.streams)
}

func (*recreatingStore) Sessions() ([]SessionRecord, error)             { return nil, nil }
func (*recreatingStore) Streams(string) ([]StreamRecord, error)         { return nil, nil }
func (*recreatingStore) EventsAfter(string, int) ([]EventRecord, error) { return nil, nil }
func (*recreatingStore) Calls() ([]CallRecord, error)                   { return nil, nil }
func (s *recreatingStore) Sweep(time.Time, Retention) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweeps++
	return nil, nil
}
func (*recreatingStore) Counts(string) (int, int64, error) { return 0, 0, nil }

// TestPersistStoreRecreated: when the store reports that its file was
// deleted and created anew, the hub saves its live sessions and their
// streams in it again and says so in its log.
func TestPersistStoreRecreated(t *testing.T) {
	logs := &hostileLog{}
	store := &recreatingStore{sessions: map[string]bool{}, streams: map[string]bool{}}
	th := startHub(t, twoServers, nil, func(o *Options) {
		o.Store = store
		o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	c := th.connect("/mcp", "2025-11-25", `{}`)
	get := c.get()
	get.next() // the priming event: the stream exists
	th.h.sessions.sweep()
	eventually(t, "the live session and its stream are saved again", func() bool {
		sessions, streams := store.saved()
		return sessions[c.sid] && len(streams) == 1
	})
	logs.wantLine(t, "recreated store", "session store was deleted", "sessions=1")
}

// TestPersistBurstWakesSweeper: events stored past sweepAfterBytes wake the
// sweeper at once, so a burst cannot outgrow the retention until the next
// periodic sweep.
func TestPersistBurstWakesSweeper(t *testing.T) {
	setVar(t, &sweepAfterBytes, 4<<10)
	setVar(t, &sweepInterval, time.Hour)
	store := &recreatingStore{sessions: map[string]bool{}, streams: map[string]bool{}}
	th := startHub(t, twoServers, nil, func(o *Options) { o.Store = store })
	c := th.connect("/mcp", "2025-11-25", `{}`)
	s := c.session()
	st, err := th.h.sessions.openStream(s, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 8 {
		st.append(make([]byte, 1<<10), false)
	}
	eventually(t, "a sweep after the burst", func() bool {
		store.mu.Lock()
		defer store.mu.Unlock()
		return store.sweeps > 0
	})
}
