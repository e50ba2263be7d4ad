package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// SaveGrant keeps a sealed OAuth grant under key, replacing what was there.
// The store never sees it unsealed.
func (s *Store) SaveGrant(key string, sealed []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := s.db.Exec(s.dialect.q(`INSERT INTO oauth_grants (key, sealed, updated) VALUES (?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET sealed = excluded.sealed, updated = excluded.updated`), key, sealed, time.Now().UnixNano())
	return err
}

// Grant returns the sealed grant kept under key; ErrNotFound when none.
func (s *Store) Grant(key string) ([]byte, error) {
	s.hmu.RLock()
	defer s.hmu.RUnlock()
	var sealed []byte
	err := s.db.QueryRow(s.dialect.q(`SELECT sealed FROM oauth_grants WHERE key = ?`), key).Scan(&sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	return sealed, err
}

// DeleteGrant removes the grant kept under key, if any.
func (s *Store) DeleteGrant(key string) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := s.db.Exec(s.dialect.q(`DELETE FROM oauth_grants WHERE key = ?`), key)
	return err
}

// GrantKeys lists the keys grants are kept under, in order.
func (s *Store) GrantKeys() ([]string, error) {
	s.hmu.RLock()
	defer s.hmu.RUnlock()
	return s.strings(`SELECT key FROM oauth_grants ORDER BY key`)
}

// grantLockSpace is the first half of the PostgreSQL advisory lock of a
// grant (the second is a hash of its key), apart from the migrations'.
const grantLockSpace = 0x6d637067 // "mcpg"

const (
	// grantLockWait bounds the wait for a grant's lock: a holder takes
	// one request to the authorization server (30 s at most) and a write.
	grantLockWait = 45 * time.Second
	// grantLockIdle is how long PostgreSQL lets a holder that went silent
	// (frozen, cut off) keep the lock before it ends its session.
	grantLockIdle = "90s"
)

// LockGrant holds the lock of the grant kept under key until unlock is
// called, so that one process at a time refreshes it; it waits until the
// lock is free, ctx ends, or grantLockWait passes. On PostgreSQL it is an
// advisory lock in a transaction of a connection of its own, outside the
// pool (the holder reads and writes the grant through the pool meanwhile),
// which PostgreSQL releases when the holder's process dies or stays
// silent for grantLockIdle; within the process the waiters for one key
// queue on a semaphore first, so that at most one of them waits in
// PostgreSQL. On SQLite, which one hub owns, the semaphore is the lock.
func (s *Store) LockGrant(ctx context.Context, key string) (unlock func(), err error) {
	ctx, cancel := context.WithTimeout(ctx, grantLockWait)
	defer cancel()
	sem := s.grantSemaphore(key)
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("lock the grant: %w (waiting for this process's other holder)", ctx.Err())
	}
	release := func() { <-sem }
	if s.pgcfg == nil {
		return sync.OnceFunc(release), nil
	}
	conn, err := pgx.ConnectConfig(ctx, s.pgcfg)
	if err != nil {
		release()
		return nil, fmt.Errorf("lock the grant: %w", err)
	}
	end := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn.Close(ctx) // the transaction, and its lock, end with the session
		release()
	}
	if _, err := conn.Exec(ctx, `BEGIN`); err == nil {
		_, err = conn.Exec(ctx, `SET LOCAL idle_in_transaction_session_timeout = '`+grantLockIdle+`'`)
	}
	if err == nil {
		_, err = conn.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, int32(grantLockSpace), key)
	}
	if err != nil {
		end()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("lock the grant: %w (waiting for another process holding it)", ctx.Err())
		}
		return nil, fmt.Errorf("lock the grant: %w", err)
	}
	return sync.OnceFunc(end), nil
}

// grantSemaphore is the in-process lock of a grant: a channel that holds
// one token while the lock is held or waited for in PostgreSQL.
func (s *Store) grantSemaphore(key string) chan struct{} {
	v, _ := s.grantLocks.LoadOrStore(key, make(chan struct{}, 1))
	return v.(chan struct{})
}
