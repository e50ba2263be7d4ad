package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"

	"github.com/mcphub/mcphub/internal/seal"
	"github.com/mcphub/mcphub/probe"
	"github.com/mcphub/mcphub/registry"
	"github.com/mcphub/mcphub/store"
)

// The secret keys a team hub's OAuth grants are sealed under: the keys
// themselves, or a file holding them (one per line, the first seals).
const (
	secretKeyEnv     = "MCPHUB_SECRET_KEY"
	secretKeyFileEnv = "MCPHUB_SECRET_KEY_FILE"
)

// secretKeys reads the keys the team's grants are sealed under; nil and no
// error when neither variable is set.
func secretKeys() (*seal.Keys, error) {
	if v := os.Getenv(secretKeyEnv); v != "" {
		k, err := seal.ParseKeys(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", secretKeyEnv, err)
		}
		return k, nil
	}
	path := os.Getenv(secretKeyFileEnv)
	if path == "" {
		return nil, nil
	}
	if fi, err := os.Stat(path); err == nil && runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s: %s can be read by others (mode %v); chmod 600 it", secretKeyFileEnv, path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", secretKeyFileEnv, err)
	}
	k, err := seal.ParseKeys(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s (%s): %w", secretKeyFileEnv, path, err)
	}
	return k, nil
}

// sharedGrants keeps a team hub's OAuth grants in its PostgreSQL store for
// every replica, sealed (AES-256-GCM) under the operator's secret keys,
// which the database never holds; a refresh holds the grant's lock.
type sharedGrants struct {
	db   *store.Store
	keys *seal.Keys
}

func (s sharedGrants) Load(key string) ([]byte, error) {
	sealed, err := s.db.Grant(key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	data, err := s.keys.Open(sealed, key)
	if err != nil {
		return nil, fmt.Errorf("the team's grant for %s: %w", key, err)
	}
	return data, nil
}

func (s sharedGrants) Save(key string, data []byte) error {
	return s.db.SaveGrant(key, s.keys.Seal(data, key))
}

func (s sharedGrants) Delete(key string) error { return s.db.DeleteGrant(key) }

func (s sharedGrants) LockGrant(ctx context.Context, key string) (func(), error) {
	return s.db.LockGrant(ctx, key)
}

// Backend names where the grants are, for messages.
func (s sharedGrants) Backend() string { return "team store (" + s.db.Where() + ", sealed)" }

// Notice has nothing to add: the store is the team's.
func (s sharedGrants) Notice() string { return "" }

// grantKeeper is where sign-ins keep their grants: the OS keychain, or a
// team hub's store.
type grantKeeper interface {
	probe.Keeper
	Notice() string
}

// grantsFor chooses where a hub on db keeps its OAuth grants: with a
// PostgreSQL store and a secret key, in the store for every replica;
// otherwise in this machine's keychain, as on a laptop.
func (a *app) grantsFor(db *store.Store, log *slog.Logger) (grantKeeper, error) {
	if db == nil || db.Dialect() != "postgres" {
		return a.oauthStore(), nil
	}
	keys, err := secretKeys()
	if err != nil {
		return nil, err
	}
	if keys == nil {
		log.Warn("OAuth grants stay in each replica's keychain: set " + secretKeyEnv + " (or " + secretKeyFileEnv + ") on every replica to share them through the store")
		return a.oauthStore(), nil
	}
	return sharedGrants{db: db, keys: keys}, nil
}

// cliGrants is grantsFor for a command (login, logout, probe --save): the
// store the registry or MCPHUB_STORE names, opened for the command's
// life; close it when done.
func (a *app) cliGrants(ctx context.Context, reg *registry.Registry) (keeper grantKeeper, closeStore func(), err error) {
	rawURL, _, err := a.storeTarget("", reg)
	if err != nil || rawURL == "" {
		return a.oauthStore(), func() {}, err
	}
	keys, err := secretKeys()
	if err != nil {
		return nil, nil, err
	}
	if keys == nil {
		fmt.Fprintf(a.stderr, "note: the store is a team's PostgreSQL, but %s is not set: the tokens stay in this machine's keychain, not shared with the replicas\n", secretKeyEnv)
		return a.oauthStore(), func() {}, nil
	}
	db, err := a.openStore(ctx, rawURL)
	if err != nil {
		return nil, nil, err
	}
	return sharedGrants{db: db, keys: keys}, func() { db.Close() }, nil
}
