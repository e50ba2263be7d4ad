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

// The ticking goroutine exits once nothing has been armed for idleTicks.
func TestTickerStopsWhenIdle(t *testing.T) {
	done := make(chan struct{})
	AfterFunc(time.Millisecond, func() { close(done) })
	<-done
	deadline := time.Now().Add(idleTicks*Tick + 5*time.Second)
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
