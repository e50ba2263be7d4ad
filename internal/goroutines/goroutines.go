// Package goroutines keeps the goroutines a long-lived object starts, so
// that its Close can wait for every one of them, and refuses to start any
// once Close has begun: a sync.WaitGroup's Add must not race its Wait, and a
// goroutine started after the wait would outlive the object.
package goroutines

import "sync"

// Group is the goroutines of one object. The zero value is ready to use.
type Group struct {
	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
}

// Go runs f on a new goroutine of the group and reports whether it did:
// once Stop has been called it runs nothing, and the caller does what a
// stopping object must instead (answer, release, or nothing).
func (g *Group) Go(f func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return false
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		f()
	}()
	return true
}

// Stop refuses new goroutines from now on and waits for the running ones.
// It is safe to call more than once.
func (g *Group) Stop() {
	g.mu.Lock()
	g.stopped = true
	g.mu.Unlock()
	g.wg.Wait()
}
