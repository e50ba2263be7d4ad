package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"time"
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

// LockGrant holds the lock of the grant kept under key until unlock is
// called: one process at a time refreshes it, among every replica on a
// PostgreSQL store (an advisory lock, on a connection of its own, which
// PostgreSQL releases if the process dies); within the process on SQLite,
// which one hub owns. It waits until the lock is free or ctx ends.
func (s *Store) LockGrant(ctx context.Context, key string) (unlock func(), err error) {
	if s.dialect.name != "postgres" {
		sem := s.grantSemaphore(key)
		select {
		case sem <- struct{}{}:
			return sync.OnceFunc(func() { <-sem }), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("lock the grant: %w", err)
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1, hashtext($2))`, int32(grantLockSpace), key); err != nil {
		conn.Close()
		return nil, fmt.Errorf("lock the grant: %w", err)
	}
	return sync.OnceFunc(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1, hashtext($2))`, int32(grantLockSpace), key); err != nil {
			// A connection that cannot unlock is dropped: PostgreSQL ends
			// its session, and its locks with it.
			conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}), nil
}

// grantSemaphore is the in-process lock of a grant on SQLite: a channel
// that holds one token while the lock is held.
func (s *Store) grantSemaphore(key string) chan struct{} {
	v, _ := s.grantLocks.LoadOrStore(key, make(chan struct{}, 1))
	return v.(chan struct{})
}
