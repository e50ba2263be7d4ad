package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/mcphub/mcphub/internal/seal"
	"github.com/mcphub/mcphub/probe"
	"github.com/mcphub/mcphub/registry"
	"github.com/mcphub/mcphub/store"
)

// The secret keys a team hub's OAuth grants are sealed under: the keys
// themselves, or a file holding them (one per line, the first seals).
const (
	secretKeyEnv     = registry.SecretKeyEnv
	secretKeyFileEnv = registry.SecretKeyFileEnv
)

// secretKeys reads the keys the team's grants are sealed under; nil and no
// error when neither variable is set.
func secretKeys() (*seal.Keys, error) {
	if os.Getenv(secretKeyEnv) != "" && os.Getenv(secretKeyFileEnv) != "" {
		return nil, fmt.Errorf("both %s and %s are set; set one", secretKeyEnv, secretKeyFileEnv)
	}
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
		return nil, fmt.Errorf("%s: %s can be read by others (mode %v); chmod 600 it (a mounted secret: mode 0400 or 0600, owned by the user mcphub runs as)", secretKeyFileEnv, path, fi.Mode().Perm())
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
		return nil, &sealError{key, err}
	}
	return data, nil
}

// sealError is a stored grant that does not open.
type sealError struct {
	key string
	err error
}

func (e *sealError) Error() string { return "the team's grant for " + e.key + ": " + e.err.Error() }
func (e *sealError) Unwrap() error { return e.err }

// unreadable reports an error of Load that is a grant no key opens (not a
// store that cannot be reached).
func (s sharedGrants) unreadable(err error) bool { return errors.As(err, new(*sealError)) }

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

// tellHubs tells the hubs using the grants that a server's changed: every
// replica of the team hub (through the store), which connect to it again.
func (s sharedGrants) tellHubs(name string) string {
	if err := s.db.AnnounceGrant(name); err != nil {
		return "not told (" + err.Error() + "): mcphub restart " + name + " on each replica"
	}
	return "every replica of the team hub connects to " + name + " again"
}

// tellHubs is how a command that changed a server's grant tells the hubs
// that use it: the team's replicas through their store, or the hub this
// machine runs.
func (a *app) tellHubs(ctx context.Context, keeper grantKeeper, name string) string {
	if team, ok := keeper.(interface{ tellHubs(string) string }); ok {
		return team.tellHubs(name)
	}
	return a.reconnectOnHub(ctx, name)
}

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

// cliGrants is grantsFor for a command (login, logout, probe --save): with
// a secret key, the team store the registry or MCPHUB_STORE names, opened
// for the command's life (close it when done); without one, the keychain,
// as before there were team stores.
func (a *app) cliGrants(ctx context.Context, reg *registry.Registry) (keeper grantKeeper, closeStore func(), err error) {
	keys, err := secretKeys()
	if err != nil {
		return nil, nil, err
	}
	if keys == nil {
		if rawURL, _, err := a.storeTarget("", reg); err == nil && rawURL != "" {
			fmt.Fprintf(a.stderr, "note: the store is a team's PostgreSQL, but %s is not set: the tokens stay in this machine's keychain, not shared with the replicas\n", secretKeyEnv)
		}
		return a.oauthStore(), func() {}, nil
	}
	rawURL, _, err := a.storeTarget("", reg)
	if err != nil {
		return nil, nil, err
	}
	if rawURL == "" {
		return nil, nil, fmt.Errorf("%s is set, but no team store is: set %s or [store] url to the team's PostgreSQL (on a laptop, unset %s: tokens go to the keychain)", secretKeyEnv, storeEnv, secretKeyEnv)
	}
	db, err := a.openStore(ctx, rawURL)
	if err != nil {
		return nil, nil, err
	}
	// A sign-in replaces a grant no key opens, which the replicas cannot
	// use either; the command says so.
	return replaceUnreadable{sharedGrants{db: db, keys: keys}, a.stderr, &sync.Map{}}, func() { db.Close() }, nil
}

// replaceUnreadable is the team's grants as a command (login, logout,
// probe --save) sees them: a grant that does not open (sealed under a key
// no longer among the keys) is none, to be replaced; and a write waits
// for the grant's lock, so that a replica refreshing the grant meanwhile
// stores its token first, and the command's write (a new sign-in, a
// sign-out) comes last.
type replaceUnreadable struct {
	sharedGrants
	warn   io.Writer
	warned *sync.Map // keys whose unreadable grant was noted
}

func (r replaceUnreadable) Load(key string) ([]byte, error) {
	data, err := r.sharedGrants.Load(key)
	if err != nil && r.sharedGrants.unreadable(err) {
		if _, noted := r.warned.LoadOrStore(key, true); !noted {
			fmt.Fprintf(r.warn, "note: the team's stored grant for %s does not open with these keys (%v); signing in replaces it\n", key, errors.Unwrap(err))
		}
		return nil, nil
	}
	return data, err
}

func (r replaceUnreadable) Save(key string, data []byte) error {
	return r.locked(key, func() error { return r.sharedGrants.Save(key, data) })
}

func (r replaceUnreadable) Delete(key string) error {
	return r.locked(key, func() error { return r.sharedGrants.Delete(key) })
}

// locked runs write under the grant's lock.
func (r replaceUnreadable) locked(key string, write func() error) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	unlock, err := r.db.LockGrant(ctx, key)
	if err != nil {
		return err
	}
	defer unlock()
	return write()
}
