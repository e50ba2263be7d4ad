package coarse

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestAfterFuncRunsNoSoonerThanItsDelay(t *testing.T) {
	start := time.Now()
	fired := make(chan time.Duration, 1)
	AfterFunc(30*time.Millisecond, func() { fired <- time.Since(start) })
	select {
	case d := <-fired:
		if d < 30*time.Millisecond {
			t.Fatalf("ran after %v, before its 30ms delay", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("never ran")
	}
}

func TestStopPreventsTheRun(t *testing.T) {
	var ran atomic.Bool
	stopped := AfterFunc(20*time.Millisecond, func() { ran.Store(true) })
	if !stopped.Stop() {
		t.Fatal("Stop of an armed timer reported false")
	}
	if stopped.Stop() {
		t.Fatal("a second Stop reported true")
	}
	// A later timer that does run proves the ticks went past the first
	// one's due time.
	done := make(chan struct{})
	AfterFunc(60*time.Millisecond, func() { close(done) })
	<-done
	if ran.Load() {
		t.Fatal("a stopped timer ran")
	}
}

func TestStopAfterTheRunReportsFalse(t *testing.T) {
	done := make(chan struct{})
	tm := AfterFunc(time.Millisecond, func() { close(done) })
	<-done
	if tm.Stop() {
		t.Fatal("Stop after the run reported true")
	}
}

// The ticking goroutine exits once nothing has been armed for idleFor.
func TestTickerStopsWhenIdle(t *testing.T) {
	done := make(chan struct{})
	AfterFunc(time.Millisecond, func() { close(done) })
	<-done
	deadline := time.Now().Add(idleFor + 5*time.Second)
	for {
		mu.Lock()
		r := running
		mu.Unlock()
		if !r {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the ticker still runs with nothing armed")
		}
		time.Sleep(Tick)
	}
}

// waitFor polls cond, under mu, for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(Tick) {
		mu.Lock()
		ok := cond()
		mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
	}
}

// With only a far-off timer armed the goroutine ticks slowly; a near one
// armed then still runs on time, and a timer armed after the goroutine
// exited starts it again.
func TestSlowTicksHurryAndRestart(t *testing.T) {
	far := AfterFunc(time.Hour, func() { t.Error("the far timer ran") })
	defer far.Stop()
	waitFor(t, "slow ticking", func() bool { return running && slow })

	start := time.Now()
	done := make(chan time.Duration, 1)
	AfterFunc(20*time.Millisecond, func() { done <- time.Since(start) })
	select {
	case d := <-done:
		if d < 20*time.Millisecond || d > slowTick/2 {
			t.Fatalf("a 20ms timer armed during slow ticking ran after %v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a timer armed during slow ticking never ran")
	}

	far.Stop()
	waitFor(t, "the goroutine to exit", func() bool { return !running })
	again := make(chan struct{})
	AfterFunc(time.Millisecond, func() { close(again) })
	select {
	case <-again:
	case <-time.After(10 * time.Second):
		t.Fatal("a timer armed after the goroutine exited never ran")
	}
}
