package store

import (
	"context"
	"testing"
	"time"

	"github.com/mcphub/mcphub/store/pgtest"
)

// A caller's call slots are counted across replicas: two taken on a, none
// left for b at a cap of 2; one given back, b takes it; a replica taken for
// dead no longer counts, and its rows go when it joins again.
func TestCallSlotsAcrossReplicas(t *testing.T) {
	u := pgtest.URL(t)
	ctx := context.Background()
	a, ca := replica(t, u, "a", ClusterConfig{Deadline: time.Minute})
	_, cb := replica(t, u, "b", ClusterConfig{Deadline: time.Minute})
	take := func(c *Cluster, who string) (func(), bool) {
		t.Helper()
		release, ok, err := c.AcquireSlot(ctx, who, 2)
		if err != nil {
			t.Fatal(err)
		}
		return release, ok
	}
	r1, ok1 := take(ca, "key:ci")
	_, ok2 := take(ca, "key:ci")
	if !ok1 || !ok2 {
		t.Fatal("a could not take 2 slots of 2")
	}
	if _, ok := take(cb, "key:ci"); ok {
		t.Fatal("b took a third slot of 2")
	}
	if release, ok := take(cb, "key:other"); !ok {
		t.Fatal("another caller's slots are not its own")
	} else {
		release()
	}
	r1()
	r1() // once only
	rb, ok := take(cb, "key:ci")
	if !ok {
		t.Fatal("b could not take the slot a gave back")
	}
	if _, ok := take(cb, "key:ci"); ok {
		t.Fatal("a slot given back twice counted twice")
	}
	// a is taken for dead: its calls no longer count.
	if _, err := a.db.Exec(`UPDATE replicas SET heartbeat = 0 WHERE name = 'a'`); err != nil {
		t.Fatal(err)
	}
	if release, ok := take(cb, "key:ci"); !ok {
		t.Fatal("a dead replica's calls still count")
	} else {
		release()
	}
	rb()
	// a joins again: the calls of its earlier run are gone.
	ca.Close()
	_, ca2 := replica(t, u, "a", ClusterConfig{Deadline: time.Minute})
	var n int
	if err := a.db.QueryRow(`SELECT count(*) FROM call_slots WHERE replica = 'a'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("a's rows after it joined again: %d, %v", n, err)
	}
	_ = ca2
}
