package store

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Take on both dialects: a burst is taken at once, the next token is
// refused with the time until it comes, buckets are per subject, and two
// processes on one store draw from the same bucket (2 × 20 takes at once
// from a bucket of 5 grant 5, give or take what refills meanwhile).
func TestTake(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		a := open(t)
		for i := range 3 {
			if wait, err := a.Take("key:ci", 1, 3); err != nil || wait != 0 {
				t.Fatalf("take %d of a burst of 3: wait %v, %v", i+1, wait, err)
			}
		}
		wait, err := a.Take("key:ci", 1, 3)
		if err != nil || wait <= 0 || wait > time.Second {
			t.Fatalf("a fourth take at 1/s: wait %v, %v; want up to 1 s", wait, err)
		}
		if wait, err := a.Take("key:other", 1, 3); err != nil || wait != 0 {
			t.Fatalf("another subject: wait %v, %v", wait, err)
		}
		if wait, err := a.Take("key:free", 0, 0); err != nil || wait != 0 {
			t.Fatalf("no rate: wait %v, %v", wait, err)
		}

		b := open(t)
		var granted atomic.Int64
		var wg sync.WaitGroup
		for _, s := range []*Store{a, b} {
			for range 20 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if wait, err := s.Take("key:shared", 0.001, 5); err != nil {
						t.Error(err)
					} else if wait == 0 {
						granted.Add(1)
					}
				}()
			}
		}
		wg.Wait()
		if n := granted.Load(); n != 5 {
			t.Errorf("40 takes from two processes on a bucket of 5 (refilling one per 1000 s): %d granted, want 5", n)
		}
	})
}
