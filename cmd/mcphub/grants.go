package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/mcphub/mcphub/probe"
	"github.com/mcphub/mcphub/registry"
	"github.com/mcphub/mcphub/store"
	"github.com/mcphub/mcphub/team"
)

// The variables of the secret keys a team hub's OAuth grants are sealed
// under (team.SecretKeys reads them).
const (
	secretKeyEnv     = registry.SecretKeyEnv
	secretKeyFileEnv = registry.SecretKeyFileEnv
)

// grantKeeper is where sign-ins keep their grants: the OS keychain, or a
// team hub's store.
type grantKeeper interface {
	probe.Keeper
	Notice() string
}

// tellHubs is how a command that changed a server's grant tells the hubs
// that use it: the team's replicas through their store, or the hub this
// machine runs.
func (a *app) tellHubs(ctx context.Context, keeper grantKeeper, name string) string {
	if t, ok := keeper.(interface{ TellHubs(string) string }); ok {
		return t.TellHubs(name)
	}
	return a.reconnectOnHub(ctx, name)
}

// grantsFor chooses where a hub on db keeps its OAuth grants: with a
// PostgreSQL store and a secret key, in the store for every replica;
// otherwise in this machine's keychain, as on a laptop.
func (a *app) grantsFor(db *store.Store, log *slog.Logger) (grantKeeper, error) {
	if db == nil || db.Dialect() != "postgres" {
		return a.oauthStore(), nil
	}
	keys, err := team.SecretKeys()
	if err != nil {
		return nil, err
	}
	if keys == nil {
		log.Warn("OAuth grants stay in each replica's keychain: set " + secretKeyEnv + " (or " + secretKeyFileEnv + ") on every replica to share them through the store")
		return a.oauthStore(), nil
	}
	return team.NewGrants(db, keys), nil
}

// cliGrants is grantsFor for a command (login, logout, probe --save): with
// a secret key, the team store the registry or MCPHUB_STORE names, opened
// for the command's life (close it when done); without one, the keychain,
// as before there were team stores.
func (a *app) cliGrants(ctx context.Context, reg *registry.Registry) (keeper grantKeeper, closeStore func(), err error) {
	keys, err := team.SecretKeys()
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
	return team.NewGrants(db, keys).ForCommand(a.stderr), func() { db.Close() }, nil
}
