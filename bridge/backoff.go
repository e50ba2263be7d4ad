package bridge

import (
	"math/rand/v2"
	"time"
)

// Backoff is the reconnect policy: delays start at Initial and double up to
// Max, with jitter; CrashLoopAfter failures within Window mark a stdio
// server crash-looping, after which it is retried every SlowRetry (a remote
// server is never marked so: it stays on the curve, never waiting more than
// Max); a connection that stays up for Stable resets the count.
type Backoff struct {
	Initial, Max   time.Duration
	CrashLoopAfter int
	Window         time.Duration
	SlowRetry      time.Duration
	Stable         time.Duration
}

func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = 500 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 30 * time.Second
	}
	if b.CrashLoopAfter <= 0 {
		b.CrashLoopAfter = 4
	}
	if b.Window <= 0 {
		b.Window = 2 * time.Minute
	}
	if b.SlowRetry <= 0 {
		b.SlowRetry = time.Minute
	}
	if b.Stable <= 0 {
		b.Stable = time.Minute
	}
	return b
}

// delay is the wait before retry number attempt (0 for the first retry):
// Initial doubled attempt times, capped at Max, then spread by ±25% so that
// many servers failing together do not retry in step. jitter returns a
// duration in [0, n); randomJitter is the production one.
func (b Backoff) delay(attempt int, jitter func(n time.Duration) time.Duration) time.Duration {
	d := b.base(attempt)
	return d*3/4 + jitter(d/2+1)
}

// delayWithin is delay never longer than Max: near the cap the spread
// stops at Max instead of reaching 25% past it. Remote servers wait this,
// so one that comes back is reconnected within Max however long it was
// gone.
func (b Backoff) delayWithin(attempt int, jitter func(n time.Duration) time.Duration) time.Duration {
	d := b.base(attempt)
	low := d * 3 / 4
	return low + jitter(min(d/2, b.Max-low)+1)
}

// base is the delay before retry number attempt, before jitter.
func (b Backoff) base(attempt int) time.Duration {
	// The shift is bounded so a long outage cannot overflow into a
	// negative or zero delay; both fall back to Max.
	d := b.Initial << min(attempt, 16)
	if d > b.Max || d <= 0 {
		d = b.Max
	}
	return d
}

// randomJitter spreads retries uniformly.
func randomJitter(n time.Duration) time.Duration { return rand.N(n) }
