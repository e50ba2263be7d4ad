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
// restart it), and arming or stopping a timer only takes a lock.
package coarse

import (
	"sync"
	"time"
)

// Tick is the precision: a function runs between its delay and its delay
// plus one tick after it was armed.
const Tick = 10 * time.Millisecond

// idleTicks is how many ticks without a timer the goroutine waits before it
// exits.
const idleTicks = 100

// Timer is one armed function.
type Timer struct {
	when time.Time
	f    func()
}

var (
	mu      sync.Mutex
	armed   = map[*Timer]struct{}{}
	running bool
)

// AfterFunc runs f in its own goroutine once d has passed, unless the
// returned Timer is stopped first.
func AfterFunc(d time.Duration, f func()) *Timer {
	t := &Timer{when: time.Now().Add(d), f: f}
	mu.Lock()
	armed[t] = struct{}{}
	if !running {
		running = true
		go run()
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

// run ticks while timers are armed and starts the due ones.
func run() {
	tk := time.NewTicker(Tick)
	defer tk.Stop()
	idle := 0
	var due []func()
	for now := range tk.C {
		mu.Lock()
		for t := range armed {
			if !now.Before(t.when) {
				delete(armed, t)
				due = append(due, t.f)
			}
		}
		if len(armed) == 0 && len(due) == 0 {
			idle++
		} else {
			idle = 0
		}
		if idle >= idleTicks {
			running = false
			mu.Unlock()
			return
		}
		mu.Unlock()
		for i, f := range due {
			go f()
			due[i] = nil
		}
		due = due[:0]
	}
}
