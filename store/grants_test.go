package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// Sealed grants on both dialects: saved, replaced, read by a second
// process, listed, deleted; and LockGrant lets one holder at a time, in
// this process and (on PostgreSQL) across processes, and gives up with
// its context.
func TestGrants(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		a, b := open(t), open(t)
		if _, err := a.Grant("https://x/mcp"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Grant of nothing: %v", err)
		}
		a.SaveGrant("https://x/mcp", []byte("one"))
		a.SaveGrant("https://x/mcp", []byte("two"))
		a.SaveGrant("https://y/mcp", []byte("three"))
		if got, err := b.Grant("https://x/mcp"); err != nil || string(got) != "two" {
			t.Fatalf("Grant = %q, %v", got, err)
		}
		if keys, err := b.GrantKeys(); err != nil || !slices.Equal(keys, []string{"https://x/mcp", "https://y/mcp"}) {
			t.Fatalf("GrantKeys = %v, %v", keys, err)
		}
		b.DeleteGrant("https://y/mcp")
		if _, err := a.Grant("https://y/mcp"); !errors.Is(err, ErrNotFound) {
			t.Errorf("a deleted grant: %v", err)
		}

		unlock, err := a.LockGrant(t.Context(), "https://x/mcp")
		if err != nil {
			t.Fatal(err)
		}
		other := a
		if a.Dialect() == "postgres" {
			other = b // another process: the advisory lock
		}
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		if _, err := other.LockGrant(ctx, "https://x/mcp"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a second holder while the first holds it: %v, want to wait until its context ends", err)
		}
		if u, err := other.LockGrant(t.Context(), "https://y/mcp"); err != nil {
			t.Fatalf("another grant's lock: %v", err)
		} else {
			u()
		}
		got := make(chan error, 1)
		go func() {
			u, err := other.LockGrant(t.Context(), "https://x/mcp")
			if err == nil {
				u()
			}
			got <- err
		}()
		unlock()
		unlock() // idempotent
		if err := <-got; err != nil {
			t.Fatalf("the lock after its holder let go: %v", err)
		}

		// Locks held on more grants than the pool has connections leave
		// the store's reads and writes free: a holder reads and writes
		// its grant while it holds the lock.
		var unlocks []func()
		for i := range 12 {
			u, err := a.LockGrant(t.Context(), fmt.Sprintf("https://many/%d", i))
			if err != nil {
				t.Fatal(err)
			}
			unlocks = append(unlocks, u)
		}
		if err := a.SaveGrant("https://many/0", []byte("x")); err != nil {
			t.Fatal(err)
		}
		if got, err := a.Grant("https://many/0"); err != nil || string(got) != "x" {
			t.Fatalf("a grant read while 12 locks are held: %q, %v", got, err)
		}
		for _, u := range unlocks {
			u()
		}
	})
}
