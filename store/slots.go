package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"
)

// slotLockSpace is the first half of the advisory lock that orders the
// takers of one caller's call slots (the second is a hash of the caller).
const slotLockSpace = 0x6d637073 // "mcps"

// AcquireSlot takes one of subject's max slots of tool calls in progress
// across the team hub: the calls counted are this replica's and those of
// replicas whose heartbeat is current. ok is false when all are taken.
// release gives the slot back (it may be called more than once); a slot
// whose release could not reach the store stays taken until this replica
// joins again or is taken for dead.
func (c *Cluster) AcquireSlot(ctx context.Context, subject string, max int) (release func(), ok bool, err error) {
	v, _ := c.slotWaits.LoadOrStore(subject, make(chan struct{}, 1))
	wait := v.(chan struct{})
	select {
	case wait <- struct{}{}:
	case <-ctx.Done():
		return nil, false, fmt.Errorf("store: take a call slot: %w", ctx.Err())
	}
	defer func() { <-wait }()
	s := c.s
	s.hmu.RLock()
	defer s.hmu.RUnlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, false, fmt.Errorf("store: take a call slot: %w", err)
	}
	defer tx.Rollback()
	// Takers of one caller's slots go one at a time, so that two cannot
	// both see the last one free.
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, int32(slotLockSpace), subject); err != nil {
		return nil, false, fmt.Errorf("store: take a call slot: %w", err)
	}
	me := s.identity().name
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM call_slots s WHERE s.subject = $1 AND (s.replica = $2 OR EXISTS (
			SELECT 1 FROM replicas r WHERE r.name = s.replica AND r.heartbeat >= `+nowNS+` - $3))`,
		subject, me, c.cfg.Deadline.Nanoseconds()).Scan(&n); err != nil {
		return nil, false, fmt.Errorf("store: take a call slot: %w", err)
	}
	if n >= max {
		return nil, false, nil
	}
	var b [12]byte
	rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	if _, err := tx.ExecContext(ctx, `INSERT INTO call_slots (id, subject, replica, started) VALUES ($1, $2, $3, `+nowNS+`)`, id, subject, me); err != nil {
		return nil, false, fmt.Errorf("store: take a call slot: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, false, fmt.Errorf("store: take a call slot: %w", err)
	}
	return sync.OnceFunc(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.hmu.RLock()
		defer s.hmu.RUnlock()
		if _, err := s.db.ExecContext(ctx, `DELETE FROM call_slots WHERE id = $1`, id); err != nil {
			c.cfg.Log.Warn("could not give back a call slot; the next heartbeat tries again", "caller", subject, "err", err)
			c.orphanMu.Lock()
			c.orphans = append(c.orphans, id)
			c.orphanMu.Unlock()
		}
	}), true, nil
}

// dropOrphanSlots gives back the slots whose release could not reach the
// store; the heartbeat calls it once the store took a beat.
func (c *Cluster) dropOrphanSlots(ctx context.Context) {
	c.orphanMu.Lock()
	ids := c.orphans
	c.orphans = nil
	c.orphanMu.Unlock()
	if len(ids) == 0 {
		return
	}
	if _, err := c.s.db.ExecContext(ctx, `DELETE FROM call_slots WHERE id = ANY($1)`, ids); err != nil {
		c.orphanMu.Lock()
		c.orphans = append(c.orphans, ids...)
		c.orphanMu.Unlock()
	}
}
