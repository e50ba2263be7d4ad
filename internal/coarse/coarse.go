// Package coarse runs functions after a delay, to within one tick, without
// a runtime timer per function.
//
// Every tool call through the hub arms a few timers that almost never fire:
// its timeout, the point where a JSON reply turns into a stream, the point
// where its connection starts being watched. Arming a Go timer that is due
// before every other timer on its P wakes another thread to watch for it,
// and on a two-core machine that wake-up competes with the upstream and the
// client for a CPU on every call. Here one goroutine ticks while timers are
// armed (and for a second after the last one, so back-to-back calls do not
// restart it), and arming or stopping a timer only takes a lock. While all
// that is armed is far off, it ticks once a second.
package coarse

import (
	"sync"
	"time"
)

// Tick is the precision: a function runs between its delay and its delay
// plus one tick after it was armed (later only if the goroutine is starved).
const Tick = 10 * time.Millisecond

// slowTick is the period while everything armed is due later than that: a
// long call's timeout alone does not keep the goroutine ticking 100 times a
// second.
const slowTick = time.Second

// idleFor is how long the goroutine ticks with nothing armed before it
// exits.
const idleFor = time.Second

// Timer is one armed function.
type Timer struct {
	when time.Time
	f    func()
}

var (
	mu      sync.Mutex
	armed   = map[*Timer]struct{}{}
	running bool // the goroutine runs
	slow    bool // it ticks every slowTick
	hurry   = make(chan struct{}, 1)
)

// AfterFunc runs f in its own goroutine once d has passed, unless the
// returned Timer is stopped first.
func AfterFunc(d time.Duration, f func()) *Timer {
	t := &Timer{when: time.Now().Add(d), f: f}
	mu.Lock()
	armed[t] = struct{}{}
	switch {
	case !running:
		running, slow = true, false
		go run()
	case slow && d < slowTick:
		slow = false
		select {
		case hurry <- struct{}{}:
		default:
		}
	}
	mu.Unlock()
	return t
}

// Stop disarms t. It reports whether that prevented f from running; false
// means f has already started (or t was stopped before).
func (t *Timer) Stop() bool {
	mu.Lock()
	defer mu.Unlock()
	if _, ok := armed[t]; !ok {
		return false
	}
	delete(armed, t)
	return true
}

// run ticks while timers are armed, starts the due ones, and exits after
// idleFor with nothing armed.
func run() {
	tk := time.NewTicker(Tick)
	defer tk.Stop()
	period := Tick
	lastBusy := time.Now()
	var due []func()
	for {
		var now time.Time
		select {
		case now = <-tk.C:
		case <-hurry:
			now = time.Now()
		}
		mu.Lock()
		soonest := slowTick
		for t := range armed {
			if left := t.when.Sub(now); left <= 0 {
				delete(armed, t)
				due = append(due, t.f)
			} else {
				soonest = min(soonest, left)
			}
		}
		if len(armed) > 0 || len(due) > 0 {
			lastBusy = now
		} else if now.Sub(lastBusy) >= idleFor {
			running = false
			mu.Unlock()
			return
		}
		// Tick slowly only while something is armed and all of it is far
		// off; with nothing armed, keep ticking fast so the next call's
		// timers need no wake-up.
		slow = len(armed) > 0 && soonest >= slowTick
		want := Tick
		if slow {
			want = slowTick
		}
		mu.Unlock()
		if want != period {
			period = want
			tk.Reset(period)
		}
		for i, f := range due {
			go f()
			due[i] = nil
		}
		due = due[:0]
	}
}
