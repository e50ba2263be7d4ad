package team

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/mcphub/mcphub/internal/seal"
	"github.com/mcphub/mcphub/registry"
	"github.com/mcphub/mcphub/store"
)

// SecretKeys reads the keys a team hub's OAuth grants are sealed under,
// from registry.SecretKeyEnv or the file registry.SecretKeyFileEnv names
// (one per line, the first seals); nil and no error when neither is set.
func SecretKeys() (*seal.Keys, error) {
	env, file := registry.SecretKeyEnv, registry.SecretKeyFileEnv
	if os.Getenv(env) != "" && os.Getenv(file) != "" {
		return nil, fmt.Errorf("both %s and %s are set; set one", env, file)
	}
	if v := os.Getenv(env); v != "" {
		k, err := seal.ParseKeys(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", env, err)
		}
		return k, nil
	}
	path := os.Getenv(file)
	if path == "" {
		return nil, nil
	}
	if fi, err := os.Stat(path); err == nil && runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s: %s can be read by others (mode %v); chmod 600 it (a mounted secret: mode 0400 or 0600, owned by the user mcphub runs as)", file, path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	k, err := seal.ParseKeys(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s (%s): %w", file, path, err)
	}
	return k, nil
}

// Grants keeps a team hub's OAuth grants in its PostgreSQL store for every
// replica, sealed (AES-256-GCM) under the operator's secret keys, which the
// database never holds. It is the oauth room's TokenStore and GrantLocker:
// a refresh holds the grant's lock.
type Grants struct {
	db   *store.Store
	keys *seal.Keys
}

// NewGrants keeps grants in db sealed under keys.
func NewGrants(db *store.Store, keys *seal.Keys) Grants { return Grants{db: db, keys: keys} }

// Load returns the grant kept under key, nil when there is none; a grant
// no key opens is an error Unreadable reports.
func (g Grants) Load(key string) ([]byte, error) {
	sealed, err := g.db.Grant(key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	data, err := g.keys.Open(sealed, key)
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

// Unreadable reports an error of Load that is a grant no key opens (not a
// store that cannot be reached).
func Unreadable(err error) bool { return errors.As(err, new(*sealError)) }

func (g Grants) Save(key string, data []byte) error {
	return g.db.SaveGrant(key, g.keys.Seal(data, key))
}

func (g Grants) Delete(key string) error { return g.db.DeleteGrant(key) }

func (g Grants) LockGrant(ctx context.Context, key string) (func(), error) {
	return g.db.LockGrant(ctx, key)
}

// Backend names where the grants are, for messages.
func (g Grants) Backend() string { return "team store (" + g.db.Where() + ", sealed)" }

// Notice has nothing to add: the store is the team's.
func (g Grants) Notice() string { return "" }

// TellHubs tells every replica (through the store) that a server's grant
// changed, so that each connects to it again, and says how that went.
func (g Grants) TellHubs(name string) string {
	if err := g.db.AnnounceGrant(name); err != nil {
		return "not told (" + err.Error() + "): mcphub restart " + name + " on each replica"
	}
	return "every replica of the team hub connects to " + name + " again"
}

// CommandGrants is the team's grants as a command (login, logout, probe
// --save) sees them: a grant no key opens is none, to be replaced (noted
// once on warn); and a write waits for the grant's lock, so that a replica
// refreshing the grant meanwhile stores its token first and the command's
// write (a new sign-in, a sign-out) comes last.
type CommandGrants struct {
	Grants
	warn   io.Writer
	warned *sync.Map // keys whose unreadable grant was noted
}

// ForCommand is g as a command sees it.
func (g Grants) ForCommand(warn io.Writer) CommandGrants {
	return CommandGrants{Grants: g, warn: warn, warned: &sync.Map{}}
}

func (c CommandGrants) Load(key string) ([]byte, error) {
	data, err := c.Grants.Load(key)
	if err != nil && Unreadable(err) {
		if _, noted := c.warned.LoadOrStore(key, true); !noted {
			fmt.Fprintf(c.warn, "note: the team's stored grant for %s does not open with these keys (%v); signing in replaces it\n", key, errors.Unwrap(err))
		}
		return nil, nil
	}
	return data, err
}

func (c CommandGrants) Save(key string, data []byte) error {
	return c.locked(key, func() error { return c.Grants.Save(key, data) })
}

func (c CommandGrants) Delete(key string) error {
	return c.locked(key, func() error { return c.Grants.Delete(key) })
}

// locked runs write under the grant's lock.
func (c CommandGrants) locked(key string, write func() error) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	unlock, err := c.db.LockGrant(ctx, key)
	if err != nil {
		return err
	}
	defer unlock()
	return write()
}

// RekeyResult is what Rekey did.
type RekeyResult struct {
	Grants     int      `json:"grants"`
	Resealed   int      `json:"resealed"`
	Unreadable []string `json:"unreadable"` // the servers (URLs) of grants no key opens
}

// Rekey seals every grant sealed under another key again under the first
// of keys, each under its lock, so that no replica's refresh is
// overwritten with the token it replaced. A grant no key opens is left as
// it is and named.
func Rekey(ctx context.Context, db *store.Store, keys *seal.Keys) (RekeyResult, error) {
	names, err := db.GrantKeys()
	if err != nil {
		return RekeyResult{}, fmt.Errorf("read the grants: %w", err)
	}
	res := RekeyResult{Grants: len(names), Unreadable: []string{}}
	for _, name := range names {
		if err := rekeyOne(ctx, db, keys, name, &res); err != nil {
			return res, fmt.Errorf("reseal the grant of %s: %w", name, err)
		}
	}
	return res, nil
}

func rekeyOne(ctx context.Context, db *store.Store, keys *seal.Keys, name string, res *RekeyResult) error {
	unlock, err := db.LockGrant(ctx, name)
	if err != nil {
		return err
	}
	defer unlock()
	sealed, err := db.Grant(name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil // signed out meanwhile
	case err != nil:
		return err
	case keys.Current(sealed):
		return nil
	}
	plain, err := keys.Open(sealed, name)
	if err != nil {
		res.Unreadable = append(res.Unreadable, name)
		return nil
	}
	if err := db.SaveGrant(name, keys.Seal(plain, name)); err != nil {
		return err
	}
	res.Resealed++
	return nil
}
