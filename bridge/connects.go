package bridge

import (
	"context"
	"fmt"
)

// DefaultConnectLimit is how many shared connections the Servers of one
// process make at once when their Config names no ConnectLimit.
const DefaultConnectLimit = 64

// ConnectLimit bounds how many connections are being made at once: a
// connection holds a slot from its start through its handshake and first
// list fetch. A hub that starts thousands of servers would otherwise open
// thousands of connections in the same instant; the listen backlogs and
// the upstreams overflow, handshakes run into their connect timeout, and
// every failure is retried, so the servers take minutes to come up instead
// of seconds. One ConnectLimit is shared by every Server it should bound.
type ConnectLimit struct {
	slots chan struct{}
}

// NewConnectLimit returns a limit of n connections at once (at least one).
func NewConnectLimit(n int) *ConnectLimit {
	return &ConnectLimit{slots: make(chan struct{}, max(n, 1))}
}

// processConnects bounds the Servers whose Config names no limit.
var processConnects = NewConnectLimit(DefaultConnectLimit)

// acquire waits for a slot; release gives it back and may be called more
// than once.
func (c *ConnectLimit) acquire(ctx context.Context) (release func(), err error) {
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting to connect: %w", context.Cause(ctx))
	}
	released := false
	return func() {
		if !released {
			released = true
			<-c.slots
		}
	}, nil
}
