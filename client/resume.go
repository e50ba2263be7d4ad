package client

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Resuming a stored upstream session: the requests the previous run left in
// flight get their results through Await, since their original callers are
// gone.

// expectResumed prepares for the responses of the requests whose streams a
// resumed session reopens, so none is dropped before Await asks for it. Ids
// minted from now on start above anything an earlier run could have used
// in the same upstream session (they are time-based), as ids must not be
// reused within a session.
func (c *Conn) expectResumed(lastEventIDs map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextID.Store(time.Now().UnixMilli() * 1000)
	for key := range lastEventIDs {
		if key == getStreamKey {
			continue
		}
		ch := make(chan result, 1)
		c.pending[key] = ch
		if c.resumed == nil {
			c.resumed = map[string]chan result{}
		}
		c.resumed[key] = ch
	}
}

func (c *Conn) failResumed(err error) {
	c.mu.Lock()
	chans := c.resumed
	c.resumed = nil
	for key := range chans {
		delete(c.pending, key)
	}
	c.mu.Unlock()
	for _, ch := range chans {
		ch <- result{err: err}
	}
}

// Resumed lists the ids of the requests a resumed session is finishing: the
// ones whose streams were open when the previous run stopped.
func (c *Conn) Resumed() []json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]json.RawMessage, 0, len(c.resumed))
	for key := range c.resumed {
		out = append(out, json.RawMessage(key))
	}
	return out
}

// Await waits for the result of a request an earlier run sent on the session
// this connection resumed (see Config.Resume).
func (c *Conn) Await(ctx context.Context, id json.RawMessage) (json.RawMessage, error) {
	c.mu.Lock()
	ch := c.resumed[string(id)]
	c.mu.Unlock()
	if ch == nil {
		return nil, fmt.Errorf("%w: request %s is not being resumed", ErrSessionExpired, id)
	}
	res, _, err := wait(ctx, ch, c.transport())
	return res, err
}

// resumer is a transport that can continue a stored upstream session.
type resumer interface {
	resume(ctx context.Context, st State) error
}
