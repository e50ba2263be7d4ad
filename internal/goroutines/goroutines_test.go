package goroutines

import (
	"sync/atomic"
	"testing"
)

// TestGoThenStop checks that Stop waits for every goroutine Go started and
// that nothing starts after it.
func TestGoThenStop(t *testing.T) {
	var g Group
	var ran atomic.Int32
	release := make(chan struct{})
	for range 3 {
		if !g.Go(func() { <-release; ran.Add(1) }) {
			t.Fatal("Go refused before Stop")
		}
	}
	close(release)
	g.Stop()
	if n := ran.Load(); n != 3 {
		t.Errorf("Stop returned with %d of 3 goroutines done", n)
	}
	if g.Go(func() { t.Error("a goroutine ran after Stop") }) {
		t.Error("Go reported starting a goroutine after Stop")
	}
	g.Stop()
}

// TestGoRacesStop starts goroutines while the group stops, many times:
// under -race, Add must never race Wait, and each goroutine Go reports is
// waited for.
func TestGoRacesStop(t *testing.T) {
	for range 200 {
		var g Group
		var started, finished atomic.Int32
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range 50 {
				if g.Go(func() { finished.Add(1) }) {
					started.Add(1)
				}
			}
		}()
		g.Stop()
		<-done
		g.Stop()
		if started.Load() != finished.Load() {
			t.Fatalf("%d goroutines started, %d finished after Stop", started.Load(), finished.Load())
		}
	}
}
