package store

import (
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Key is an API key as the store keeps it: never the key itself, only its
// public id and a keyed hash of it (the access room makes both). Profiles
// limit it to those profiles (none: every endpoint); Rate is its own rate
// limit as written ("10/s"), "" for the hub's, and Concurrent its own cap
// on calls at once, 0 for the hub's. Times are zero when unset.
type Key struct {
	ID, Name                            string
	Hash                                []byte
	Profiles                            []string
	Rate                                string
	Concurrent                          int
	Created, Expires, LastUsed, Revoked time.Time
}

// ErrKeyNameTaken is returned by CreateKey when a live key has the name.
var ErrKeyNameTaken = errors.New("store: a key with that name exists")

// CreateKey stores a new key; ErrKeyNameTaken when a live key (neither
// revoked nor expired) has its name. An expired key of that name is
// revoked first, which frees the name.
func (s *Store) CreateKey(k Key) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	now := time.Now().UnixNano()
	if _, err := s.db.Exec(s.dialect.q(`UPDATE api_keys SET revoked = ? WHERE name = ? AND revoked = 0 AND expires > 0 AND expires < ?`), now, k.Name, now); err != nil {
		return err
	}
	var n int
	if err := s.db.QueryRow(s.dialect.q(`SELECT count(*) FROM api_keys WHERE name = ? AND revoked = 0`), k.Name).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("%w: %q", ErrKeyNameTaken, k.Name)
	}
	_, err := s.db.Exec(s.dialect.q(`INSERT INTO api_keys (id, name, hash, profiles, rate, concurrent, created, expires) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
		k.ID, k.Name, k.Hash, strings.Join(k.Profiles, ","), k.Rate, k.Concurrent, unixNano(k.Created), unixNano(k.Expires))
	if err != nil && isUniqueViolation(err) {
		// Another process made a key of that name meanwhile.
		return fmt.Errorf("%w: %q", ErrKeyNameTaken, k.Name)
	}
	return err
}

// Keys lists every key, revoked ones too, by name then creation.
func (s *Store) Keys() ([]Key, error) {
	s.hmu.RLock()
	defer s.hmu.RUnlock()
	rows, err := s.db.Query(`SELECT id, name, hash, profiles, rate, concurrent, created, expires, last_used, revoked FROM api_keys ORDER BY name, created`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Key
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// KeyByID loads the key with a public id; ErrNotFound when there is none.
func (s *Store) KeyByID(id string) (Key, error) {
	s.hmu.RLock()
	defer s.hmu.RUnlock()
	k, err := scanKey(s.db.QueryRow(s.dialect.q(`SELECT id, name, hash, profiles, rate, concurrent, created, expires, last_used, revoked FROM api_keys WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return Key{}, ErrNotFound
	}
	return k, err
}

// RevokeKey revokes the live key called name, reporting whether there was
// one. Every process reading this store refuses it from its next request.
func (s *Store) RevokeKey(name string, at time.Time) (bool, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	res, err := s.db.Exec(s.dialect.q(`UPDATE api_keys SET revoked = ? WHERE name = ? AND revoked = 0`), unixNano(at), name)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// TouchKey records that a key was used at a time (a later use only).
func (s *Store) TouchKey(id string, at time.Time) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := s.db.Exec(s.dialect.q(`UPDATE api_keys SET last_used = ? WHERE id = ? AND last_used < ?`), unixNano(at), id, unixNano(at))
	return err
}

// HubSecret returns the hub's secret called name (32 random bytes), making
// it on first use; every process on this database reads the same one.
func (s *Store) HubSecret(name string) ([]byte, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	var v []byte
	err := s.db.QueryRow(s.dialect.q(`SELECT value FROM hub_secrets WHERE name = ?`), name).Scan(&v)
	if err == nil {
		return v, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	fresh := make([]byte, 32)
	rand.Read(fresh)
	if _, err := s.db.Exec(s.dialect.q(`INSERT INTO hub_secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`), name, fresh); err != nil {
		return nil, err
	}
	// Another process may have made it first: read whichever won.
	err = s.db.QueryRow(s.dialect.q(`SELECT value FROM hub_secrets WHERE name = ?`), name).Scan(&v)
	return v, err
}

type rowScanner interface{ Scan(dest ...any) error }

func scanKey(r rowScanner) (Key, error) {
	var k Key
	var profiles string
	var created, expires, lastUsed, revoked int64
	if err := r.Scan(&k.ID, &k.Name, &k.Hash, &profiles, &k.Rate, &k.Concurrent, &created, &expires, &lastUsed, &revoked); err != nil {
		return Key{}, err
	}
	if profiles != "" {
		k.Profiles = strings.Split(profiles, ",")
	}
	k.Created, k.Expires, k.LastUsed, k.Revoked = fromUnixNano(created), fromUnixNano(expires), fromUnixNano(lastUsed), fromUnixNano(revoked)
	return k, nil
}

// unixNano is t in unix nanoseconds, 0 for the zero time.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromUnixNano is the inverse of unixNano.
func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}
