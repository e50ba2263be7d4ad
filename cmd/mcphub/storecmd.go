package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/registry"
	"github.com/mcphub/mcphub/store"
	"github.com/mcphub/mcphub/team"
)

func init() { commands = append(commands, newStoreCmd) }

// storeEnv names the variable that chooses the store, between --store and
// hub.toml's [store] url.
const storeEnv = registry.StoreEnv

// storeTarget chooses the store: --store, else MCPHUB_STORE, else hub.toml's
// [store] url (its ${NAME} references expanded), else SQLite in the data
// directory. It returns the URL ("" for SQLite) and where it came from.
func (a *app) storeTarget(flagURL string, reg *registry.Registry) (rawURL, from string, err error) {
	switch {
	case flagURL != "":
		rawURL, from = flagURL, "--store"
	case os.Getenv(storeEnv) != "":
		rawURL, from = os.Getenv(storeEnv), storeEnv
	case reg != nil && reg.Store.URL != "":
		if rawURL, err = reg.StoreURL(os.LookupEnv); err != nil {
			return "", "", err
		}
		from = reg.Path + " [store] url"
	}
	if rawURL == "" {
		return "", "--data-dir", nil
	}
	if !store.IsURL(rawURL) {
		// Not echoed: it may be a connection string with a password.
		return "", "", fmt.Errorf("%s is not a PostgreSQL URL; write postgres://user:password@host:port/database, or leave it unset to keep the store in SQLite in %s", from, a.dataDir)
	}
	return rawURL, from, nil
}

// openStore opens the chosen store: PostgreSQL by URL, else SQLite in the
// data directory.
func (a *app) openStore(ctx context.Context, rawURL string) (*store.Store, error) {
	if rawURL == "" {
		return store.Open(a.dataDir)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return store.OpenURL(ctx, rawURL)
}

const storeLong = `Look at the store, where mcphub keeps sessions, their streams and every event
(so that a client resumes after a dropped stream or a restart), the state of
each upstream connection, and the cached catalog.

By default the store is SQLite in the data directory (--data-dir). A team's
replicas share one PostgreSQL database instead, named by URL, first found of:
  --store postgres://user:password@host:port/database
  MCPHUB_STORE=postgres://...
  [store] url = "postgres://team:${PGPASSWORD}@db:5432/mcphub"   in hub.toml
The password is never printed: messages show it as xxxxx.`

func newStoreCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Look at the store: SQLite in the data directory, or a team's PostgreSQL",
		Long:  storeLong,
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newStoreCheckCmd(a), newStoreRekeyCmd(a))
	return cmd
}

func newStoreRekeyCmd(a *app) *cobra.Command {
	var flagURL string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "rekey",
		Short: "Seal the team's OAuth grants under the first secret key (after a key rotation)",
		Long: `A team hub keeps its OAuth grants for remote servers in its PostgreSQL store,
sealed (AES-256-GCM) under the secret keys in ` + secretKeyEnv + ` or the file named by
` + secretKeyFileEnv + `: several keys, separated by commas or newlines; the first
seals, every one opens. To rotate the key, restarting the replicas one by
one after each step (each replica must open what any other seals):

  1. add the new key after the old one: MCPHUB_SECRET_KEY="OLD,NEW";
  2. put it first: MCPHUB_SECRET_KEY="NEW,OLD", then (with that here too)
     run mcphub store rekey: each grant sealed under another key is opened
     and sealed again under the first;
  3. drop the old key: MCPHUB_SECRET_KEY="NEW".

A grant no key opens is left as it is and named; mcphub login for its
server replaces it. It exits 1 then.

--json prints {"grants", "resealed", "unreadable"}.`,
		Example: `  openssl rand -base64 32        # a new key
  MCPHUB_SECRET_KEY="$NEW,$OLD" mcphub store rekey`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			keys, err := team.SecretKeys()
			if err != nil {
				return err
			}
			if keys == nil {
				return fmt.Errorf("set %s (or %s) to the keys, the new one first", secretKeyEnv, secretKeyFileEnv)
			}
			db, _, err := a.targetStore(cmd.Context(), flagURL)
			if err != nil {
				return err
			}
			defer db.Close()
			if db.Dialect() != "postgres" {
				return fmt.Errorf("the store is SQLite (%s): grants are sealed in a team's PostgreSQL only; name it with --store or %s", db.Where(), storeEnv)
			}
			res, err := team.Rekey(cmd.Context(), db, keys)
			if err != nil {
				return err
			}
			if asJSON {
				if err := a.printJSON(res); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(a.stdout, "%d grants: %d sealed again under the first key, %d already were\n", res.Grants, res.Resealed, res.Grants-res.Resealed-len(res.Unreadable))
				for _, name := range res.Unreadable {
					fmt.Fprintf(a.stdout, "  %s: no key opens it; mcphub login for its server replaces it\n", name)
				}
			}
			if len(res.Unreadable) > 0 {
				return exitError{code: 1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&flagURL, "store", "", "the PostgreSQL store of a team hub (env "+storeEnv+"; default the configured store)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the outcome as one JSON object")
	return cmd
}

// storeCheckResult is the --json answer of store check.
type storeCheckResult struct {
	Dialect       string  `json:"dialect"`
	Where         string  `json:"where"`
	From          string  `json:"from"`
	Server        string  `json:"server,omitempty"`
	Reachable     bool    `json:"reachable"`
	Exists        bool    `json:"exists"`
	SchemaVersion int     `json:"schema_version"`
	KnownVersion  int     `json:"known_version"`
	TookMS        float64 `json:"took_ms"`
	State         string  `json:"state"`
	Error         string  `json:"error,omitempty"`
}

func newStoreCheckCmd(a *app) *cobra.Command {
	var flagURL string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Reach the store and report its schema version against this mcphub's",
		Long: `Reach the store serve would use and report its schema version against the
one this mcphub knows, without changing anything (no migration runs).

States: current (ready to serve), new (no database yet: serve creates it),
behind (serve migrates it forward), ahead (made by a newer mcphub: serve
refuses it), unreachable. It exits 1 when the store is unreachable or ahead.

--json prints {"dialect", "where", "from", "server", "reachable", "exists",
"schema_version", "known_version", "took_ms", "state", "error"}.`,
		Example: `  mcphub store check
  mcphub store check --store postgres://mcphub@db.internal:5432/mcphub --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reg, err := a.loadExistingRegistry()
			if err != nil {
				return a.printRegistryErrors(err)
			}
			rawURL, from, err := a.storeTarget(flagURL, reg)
			if err != nil {
				return err
			}
			target := a.dataDir
			if rawURL != "" {
				target = rawURL
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			r, err := store.Inspect(ctx, target)
			res := storeCheckResult{Dialect: r.Dialect, Where: r.Where, From: from, Server: r.Server, Reachable: err == nil,
				Exists: r.Exists, SchemaVersion: r.Version, KnownVersion: r.Known, TookMS: float64(r.Took.Microseconds()) / 1000}
			if res.State = r.State(err); err != nil {
				res.Error = err.Error()
			}
			if asJSON {
				if perr := a.printJSON(res); perr != nil {
					return perr
				}
			} else {
				printStoreCheck(a, res)
			}
			if res.State == "unreachable" || res.State == "ahead" {
				return exitError{code: 1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&flagURL, "store", "", "a PostgreSQL URL to check instead of the configured store (env "+storeEnv+")")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as one JSON object")
	return cmd
}

func printStoreCheck(a *app, r storeCheckResult) {
	kind := "SQLite"
	if r.Dialect == "postgres" {
		kind = "PostgreSQL"
		if r.Server != "" {
			kind += " " + r.Server
		}
	}
	fmt.Fprintf(a.stdout, "store:   %s, %s (from %s)\n", kind, r.Where, r.From)
	switch r.State {
	case "unreachable":
		fmt.Fprintf(a.stdout, "reached: no: %s\n", r.Error)
		return
	case "new":
		fmt.Fprintf(a.stdout, "reached: yes, in %.1f ms\nschema:  none yet; mcphub serve creates it (version %d)\n", r.TookMS, r.KnownVersion)
		return
	}
	fmt.Fprintf(a.stdout, "reached: yes, in %.1f ms\n", r.TookMS)
	switch r.State {
	case "current":
		fmt.Fprintf(a.stdout, "schema:  version %d, current\n", r.SchemaVersion)
	case "behind":
		fmt.Fprintf(a.stdout, "schema:  version %d; this mcphub migrates it to %d when it serves\n", r.SchemaVersion, r.KnownVersion)
	case "ahead":
		fmt.Fprintf(a.stdout, "schema:  version %d, newer than this mcphub knows (%d); serve refuses it: use a newer mcphub\n", r.SchemaVersion, r.KnownVersion)
	}
}
