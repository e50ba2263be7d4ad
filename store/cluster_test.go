package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcphub/mcphub/store/pgtest"
)

// replica opens a store on u and joins it as name, with a fast heartbeat;
// it is closed when the test ends.
func replica(t *testing.T, u, name string, cfg ClusterConfig) (*Store, *Cluster) {
	t.Helper()
	s := openURLT(t, u)
	cfg.Name, cfg.Address = name, "http://"+name+".test"
	if cfg.Heartbeat == 0 {
		cfg.Heartbeat = 20 * time.Millisecond
	}
	if cfg.Deadline == 0 {
		cfg.Deadline = 300 * time.Millisecond
	}
	c, err := s.Join(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Join(%s): %v", name, err)
	}
	t.Cleanup(func() { c.Close() })
	return s, c
}

// withStream writes a session with one stream and an event, as s.
func withStream(t *testing.T, s *Store, sess string) {
	t.Helper()
	write(t, s, Op{Session: session(sess, t0)}, Op{Stream: &Stream{ID: sess + "/get", Session: sess}}, event(sess, sess+"/get", 0, "e0"))
}

func TestJoinNeedsPostgreSQL(t *testing.T) {
	s := openT(t, t.TempDir())
	if _, err := s.Join(context.Background(), ClusterConfig{Name: "a", Address: "http://a"}); !errors.Is(err, ErrNoCluster) {
		t.Errorf("Join on SQLite: %v, want ErrNoCluster", err)
	}
}

// A replica's writes for a session another replica owns are refused, and
// it sees only its own sessions and calls.
func TestReplicasWriteOnlyTheirOwnSessions(t *testing.T) {
	u := pgtest.URL(t)
	a, ca := replica(t, u, "a", ClusterConfig{})
	b, cb := replica(t, u, "b", ClusterConfig{})
	if ca.Secret() == "" || ca.Secret() != cb.Secret() {
		t.Errorf("secrets %q and %q: want one shared secret", ca.Secret(), cb.Secret())
	}
	withStream(t, a, "sa")
	write(t, a, Op{Stream: &Stream{ID: "sa/post", Session: "sa", Post: true, RequestID: "1"}}, Op{Call: &Call{Stream: "sa/post", Server: "up", UpstreamID: "7"}})
	withStream(t, b, "sb")
	// b writes into a's session: nothing of it lands.
	write(t, b,
		event("sa", "sa/get", 1, "from b"),
		Op{Stream: &Stream{ID: "sa/other", Session: "sa"}},
		Op{Call: &Call{Stream: "sa/post", Server: "up", UpstreamID: "999"}},
		Op{DeleteCall: "sa/post"},
		Op{Session: &Session{ID: "sa", Endpoint: "/mcp", Version: "v", LogLevel: "debug", Subscriptions: []string{"x://y"}, Created: t0, LastSeen: t0}},
		Op{DeleteSession: "sa"},
	)
	if got := seqs(eventsAfter(t, a, "sa/get", -1)); !slices.Equal(got, []int{0}) {
		t.Errorf("sa/get events = %v, want only a's [0]", got)
	}
	if got := streamsByID(t, a, "sa"); len(got) != 2 {
		t.Errorf("sa streams = %v, want a's two", got)
	}
	if got := sessionsByID(t, a)["sa"]; got.LogLevel != "info" || len(got.Subscriptions) != 0 {
		t.Errorf("sa after b's writes = %+v, want a's", got)
	}
	calls, _ := a.Calls()
	if len(calls) != 1 || calls[0].UpstreamID != "7" {
		t.Errorf("a's calls = %+v, want its own one", calls)
	}
	if got := sessionsByID(t, b); len(got) != 1 || got["sb"].ID != "sb" {
		t.Errorf("b's sessions = %v, want sb alone", got)
	}
	if calls, _ := b.Calls(); len(calls) != 0 {
		t.Errorf("b's calls = %+v, want none", calls)
	}
	if _, err := b.Session("sa"); !errors.Is(err, ErrNotFound) {
		t.Errorf("b.Session(sa) = %v, want ErrNotFound", err)
	}
	// Upstream state is each replica's own.
	a.SaveUpstream("up", []byte(`{"session":"a"}`))
	b.SaveUpstream("up", []byte(`{"session":"b"}`))
	if got, _ := a.Upstream("up"); string(got) != `{"session":"a"}` {
		t.Errorf("a's upstream state = %s", got)
	}
}

// A replica that starts again under its name takes back its sessions.
func TestRejoinKeepsTheSessions(t *testing.T) {
	u := pgtest.URL(t)
	a, ca := replica(t, u, "a", ClusterConfig{})
	withStream(t, a, "s1")
	a.SaveUpstream("up", []byte(`{"session":"u"}`))
	ca.Close()
	a.Close()
	a2, _ := replica(t, u, "a", ClusterConfig{})
	if got := sessionsByID(t, a2); len(got) != 1 {
		t.Fatalf("a's sessions after rejoining = %v, want s1", got)
	}
	if got, _ := a2.Upstream("up"); string(got) != `{"session":"u"}` {
		t.Errorf("upstream state after rejoining = %s, want the earlier run's", got)
	}
	write(t, a2, event("s1", "s1/get", 1, "e1"))
	if got := seqs(eventsAfter(t, a2, "s1/get", -1)); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("events = %v, want [0 1]", got)
	}
}

func TestLocateAndClaim(t *testing.T) {
	u := pgtest.URL(t)
	a, ca := replica(t, u, "a", ClusterConfig{})
	_, cb := replica(t, u, "b", ClusterConfig{})
	_, cc := replica(t, u, "c", ClusterConfig{})
	withStream(t, a, "s1")
	ctx := context.Background()
	if p, err := cb.Locate(ctx, "nope"); err != nil || p.Found {
		t.Errorf("Locate(nope) = %+v, %v", p, err)
	}
	p, err := cb.Locate(ctx, "s1")
	if err != nil || !p.Found || p.Mine || !p.Alive || p.Owner != "a" || p.Address != "http://a.test" {
		t.Fatalf("b Locate(s1) = %+v, %v; want a's, alive", p, err)
	}
	if p, _ := ca.Locate(ctx, "s1"); !p.Mine {
		t.Errorf("a Locate(s1) = %+v, want Mine", p)
	}
	// While a beats (it joined just now), nobody can claim it.
	if ids, err := cb.Claim(ctx, p); err != nil || len(ids) != 0 {
		t.Errorf("Claim of a live replica's session = %v, %v; want nothing", ids, err)
	}
	// a never beats (not started): once the deadline passes it is dead.
	deadline := time.Now().Add(20 * time.Second)
	for p.Alive {
		if time.Now().After(deadline) {
			t.Fatal("a was never taken for dead")
		}
		time.Sleep(50 * time.Millisecond) // polling the store's view, not synchronizing goroutines
		p, _ = cb.Locate(ctx, "s1")
	}
	withStream(t, a, "s2")
	// Two replicas claim it as they found it: one wins, and takes every
	// session of a's.
	var wins [][]string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range []*Cluster{cb, cc} {
		wg.Go(func() {
			ids, err := c.Claim(ctx, p)
			if err != nil {
				t.Error(err)
			}
			slices.Sort(ids)
			mu.Lock()
			wins = append(wins, ids)
			mu.Unlock()
		})
	}
	wg.Wait()
	if !(slices.Equal(wins[0], []string{"s1", "s2"}) && len(wins[1]) == 0) && !(slices.Equal(wins[1], []string{"s1", "s2"}) && len(wins[0]) == 0) {
		t.Errorf("claims = %v, want one winner with both of a's sessions", wins)
	}
	// a is fenced out of it.
	write(t, a, event("s1", "s1/get", 1, "late"))
	if got := seqs(eventsAfter(t, a, "s1/get", -1)); !slices.Equal(got, []int{0}) {
		t.Errorf("events after the claim = %v, want a's late one refused", got)
	}
}

// A replica that stops beating is taken for dead: another takes its
// sessions and restores them, and the stopped one, when it beats again,
// learns it was fenced, lets go, and joins again.
func TestDeadReplicaIsTakenOverAndFenced(t *testing.T) {
	u := pgtest.URL(t)
	fenced := make(chan struct{}, 1)
	a, ca := replica(t, u, "a", ClusterConfig{OnFenced: func() { fenced <- struct{}{} }})
	withStream(t, a, "s1")
	withStream(t, a, "s2")
	claimed := make(chan []string, 4)
	_, cb := replica(t, u, "b", ClusterConfig{OnClaimed: func(ids []string) { claimed <- ids }})
	cb.Start(context.Background())
	// a never beats (not started): after the deadline b takes it over.
	var ids []string
	select {
	case ids = <-claimed:
	case <-time.After(20 * time.Second):
		t.Fatal("b did not take over a's sessions")
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"s1", "s2"}) {
		t.Errorf("claimed %v, want [s1 s2]", ids)
	}
	if p, _ := cb.Locate(context.Background(), "s1"); !p.Mine {
		t.Errorf("s1 after the takeover: %+v", p)
	}
	// a comes back: its writes are refused, its next beat fences it.
	write(t, a, event("s1", "s1/get", 1, "stale"))
	ca.Start(context.Background())
	select {
	case <-fenced:
	case <-time.After(20 * time.Second):
		t.Fatal("a was not told it was fenced")
	}
	if got := seqs(eventsAfter(t, a, "s1/get", -1)); !slices.Equal(got, []int{0}) {
		t.Errorf("s1 events = %v, want the stale write refused", got)
	}
	reps, _, err := cb.Replicas(context.Background())
	if err != nil || len(reps) != 2 {
		t.Fatalf("Replicas = %+v, %v", reps, err)
	}
	for _, r := range reps {
		if r.Name == "b" && (r.Sessions != 2 || !r.Self) {
			t.Errorf("b = %+v, want self with 2 sessions", r)
		}
	}
}

// A replica that stops cleanly is taken over at once: it tells the others
// through LISTEN/NOTIFY, without waiting for their next heartbeat.
func TestClosedReplicaIsTakenOverAtOnce(t *testing.T) {
	u := pgtest.URL(t)
	a, ca := replica(t, u, "a", ClusterConfig{Deadline: time.Hour})
	withStream(t, a, "s1")
	claimed := make(chan []string, 1)
	// b beats once an hour: only a's notification can wake it.
	_, cb := replica(t, u, "b", ClusterConfig{Deadline: time.Hour, Heartbeat: time.Hour, OnClaimed: func(ids []string) { claimed <- ids }})
	cb.Start(context.Background())
	ca.Start(context.Background())
	if err := ca.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case ids := <-claimed:
		if !slices.Equal(ids, []string{"s1"}) {
			t.Errorf("claimed %v", ids)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a closed replica's sessions did not move (the deadline is an hour: only Close can have said it stopped)")
	}
}

// A second live process under a replica's name is refused at its start,
// and a process that finds its name taken over by a live one stops.
func TestReplicaNameInUse(t *testing.T) {
	u := pgtest.URL(t)
	_, ca := replica(t, u, "a", ClusterConfig{Deadline: time.Hour})
	s2 := openURLT(t, u)
	_, err := s2.Join(context.Background(), ClusterConfig{Name: "a", Address: "http://elsewhere.test", Deadline: time.Hour})
	if !errors.Is(err, ErrNameInUse) || !strings.Contains(err.Error(), "http://a.test") {
		t.Errorf("Join under a live replica's name: %v, want ErrNameInUse naming its address", err)
	}
	// The same address is the same replica started again (its old
	// process was killed): it takes over.
	s3 := openURLT(t, u)
	c3, err := s3.Join(context.Background(), ClusterConfig{Name: "a", Address: "http://a.test", Deadline: time.Hour,
		Heartbeat: 20 * time.Millisecond})
	if err != nil {
		t.Fatalf("Join of a restarted replica: %v", err)
	}
	defer c3.Close()
	c3.Start(context.Background())
	// The first process, still running, beats against a newer generation
	// whose heartbeat is live: it must stop, not fence the new one.
	if err := ca.beat(context.Background()); !errors.Is(err, ErrNameInUse) {
		t.Errorf("beat of the replaced process: %v, want ErrNameInUse", err)
	}
}

// Gone closes for a replica generation that stops beating.
func TestGone(t *testing.T) {
	u := pgtest.URL(t)
	_, ca := replica(t, u, "a", ClusterConfig{})
	_, cb := replica(t, u, "b", ClusterConfig{})
	ca.Start(context.Background())
	cb.Start(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	who := ca.s.identity()
	gone := cb.Gone(ctx, "a", who.gen)
	select {
	case <-gone:
		t.Fatal("Gone closed while a beats")
	default:
	}
	ca.Close()
	select {
	case <-gone:
	case <-time.After(20 * time.Second):
		t.Fatal("Gone did not close after a stopped")
	}
	// A generation already replaced is gone at once.
	select {
	case <-cb.Gone(ctx, "a", who.gen-1):
	case <-time.After(20 * time.Second):
		t.Fatal("Gone of an old generation did not close")
	}
	// A generation newer than the one read, or a replica not read yet,
	// has joined since: it is waited for, not taken for gone.
	for _, g := range []struct {
		name string
		gen  int64
	}{{"a", who.gen + 1}, {"z", 1}} {
		select {
		case <-cb.Gone(ctx, g.name, g.gen):
			t.Errorf("Gone(%s, %d) closed at once", g.name, g.gen)
		default:
		}
	}
}
