package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/access"
	"github.com/mcphub/mcphub/registry"
	"github.com/mcphub/mcphub/store"
)

func init() { commands = append(commands, newKeysCmd) }

// keyPepperName names the store's secret API keys are hashed under.
const keyPepperName = "api-key-hash"

const keysLong = `API keys let scripts and agents without a browser use a hub with auth on:
each is sent as Authorization: Bearer <key>, beside the hub's own token (an
all-access key) and, with [hub.oauth], the team's sign-in.

A key is shown once, when it is made, and the store keeps only a keyed hash
of it. It starts with mcphub_ so that a key pasted where it should not be is
recognised. --profile limits a key to those profiles: on /mcp it gets its
profile's tools when it has one, and /profiles/NAME/mcp for each. A revoked
key is refused by every hub on the store from its next request.

Keys live in the store serve uses (SQLite in the data directory, or the
team's PostgreSQL: --store, MCPHUB_STORE or [store] url).`

func newKeysCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Make, list and revoke API keys for scripts and agents",
		Long:  keysLong,
		Args:  cobra.NoArgs,
	}
	var flagURL string
	cmd.PersistentFlags().StringVar(&flagURL, "store", "", "the PostgreSQL store of a team hub (env "+storeEnv+"; default the configured store)")
	cmd.AddCommand(newKeysCreateCmd(a, &flagURL), newKeysListCmd(a, &flagURL), newKeysRevokeCmd(a, &flagURL))
	return cmd
}

// targetStore opens the store serve would use (--store, MCPHUB_STORE,
// [store] url, else SQLite in the data directory), with the registry, or
// says why not: the store keys and grants live in.
func (a *app) targetStore(ctx context.Context, flagURL string) (*store.Store, *registry.Registry, error) {
	reg, err := a.loadExistingRegistry()
	if err != nil {
		return nil, nil, a.printRegistryErrors(err)
	}
	rawURL, _, err := a.storeTarget(flagURL, reg)
	if err != nil {
		return nil, nil, err
	}
	db, err := a.openStore(ctx, rawURL)
	if err != nil {
		return nil, nil, err
	}
	return db, reg, nil
}

// keyJSON is a key as keys create and keys ls print it with --json.
type keyJSON struct {
	Name     string   `json:"name"`
	ID       string   `json:"id"`
	Key      string   `json:"key,omitempty"` // keys create only
	Profiles []string `json:"profiles"`
	Rate     string   `json:"rate,omitempty"`             // "" for the hub's [hub.limits]
	Calls    int      `json:"concurrent_calls,omitempty"` // 0 for the hub's
	Created  string   `json:"created"`
	Expires  string   `json:"expires,omitempty"`
	LastUsed string   `json:"last_used,omitempty"`
	Revoked  string   `json:"revoked,omitempty"`
	State    string   `json:"state"` // live, expired or revoked
}

func keyView(k store.Key, now time.Time) keyJSON {
	v := keyJSON{Name: k.Name, ID: k.ID, Profiles: k.Profiles, Rate: k.Rate, Calls: k.Concurrent, Created: stamp(k.Created), Expires: stamp(k.Expires),
		LastUsed: stamp(k.LastUsed), Revoked: stamp(k.Revoked), State: "live"}
	if v.Profiles == nil {
		v.Profiles = []string{}
	}
	switch {
	case !k.Revoked.IsZero():
		v.State = "revoked"
	case !k.Expires.IsZero() && now.After(k.Expires):
		v.State = "expired"
	}
	return v
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func newKeysCreateCmd(a *app, flagURL *string) *cobra.Command {
	var profiles []string
	var expires, rate string
	var calls int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Make an API key; it is printed once",
		Long: `Make an API key called NAME (letters, digits, '-', '_', '.'; unique among the
live keys) and print it once on standard output, alone on its line, so that
KEY=$(mcphub keys create ci) keeps it; what it is for goes to standard error.

--rate and --concurrent-calls give the key its own limits in place of
[hub.limits]; a team hub's replicas draw from one rate bucket per key.

--json prints {"name", "id", "key", "profiles", "rate", "concurrent_calls",
"created", "expires", "state"}.`,
		Example: `  mcphub keys create ci --profile eng --expires 90d --rate 10/s
  mcphub keys create deploy-bot --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if !access.ValidKeyName(name) {
				return fmt.Errorf("%q is not a key name: use 1-64 letters, digits, '-', '_' and '.'", name)
			}
			var limit registry.Rate
			if rate != "" {
				var err error
				if limit, err = registry.ParseRate(rate); err != nil {
					return fmt.Errorf("--rate: %w", err)
				}
			}
			if calls < 0 {
				return fmt.Errorf("--concurrent-calls %d: give a positive number of calls (0: the hub's [hub.limits])", calls)
			}
			var ttl time.Duration
			if expires != "" {
				var err error
				if ttl, err = access.ParseExpiry(expires); err != nil {
					return fmt.Errorf("--expires: %w", err)
				}
			}
			db, reg, err := a.targetStore(cmd.Context(), *flagURL)
			if err != nil {
				return err
			}
			defer db.Close()
			for _, p := range profiles {
				if reg.Profile(p) == nil {
					return fmt.Errorf("--profile %s: %s has no [profiles.%s] table (profiles: %s)", p, reg.Path, p, reg.ProfileNames())
				}
			}
			pepper, err := db.HubSecret(keyPepperName)
			if err != nil {
				return fmt.Errorf("read the store's key secret: %w", err)
			}
			text, id, hash := access.Mint(pepper)
			now := time.Now()
			k := store.Key{ID: id, Name: name, Hash: hash, Profiles: slices.Compact(slices.Sorted(slices.Values(profiles))),
				Rate: limit.String(), Concurrent: calls, Created: now}
			if ttl > 0 {
				k.Expires = now.Add(ttl)
			}
			if err := db.CreateKey(k); err != nil {
				if errors.Is(err, store.ErrKeyNameTaken) {
					return fmt.Errorf("a live key is already called %s: pick another name, or mcphub keys revoke %s first", name, name)
				}
				return fmt.Errorf("store the key: %w", err)
			}
			if asJSON {
				v := keyView(k, now)
				v.Key = text
				return a.printJSON(v)
			}
			fmt.Fprintln(a.stdout, text)
			scope := "every endpoint"
			if len(k.Profiles) > 0 {
				scope = "profiles " + strings.Join(k.Profiles, ", ")
			}
			until := "never expires"
			if !k.Expires.IsZero() {
				until = "expires " + stamp(k.Expires)
			}
			fmt.Fprintf(a.stderr, "API key %s made (%s; %s). This is the only time it is shown: keep it in a secret store.\nSend it as Authorization: Bearer <key> to a hub with auth on; mcphub keys revoke %s ends it.\n", name, scope, until, name)
			if reg.Hub.Auth != registry.AuthToken {
				fmt.Fprintf(a.stderr, "warning: %s has auth = %q: the hub takes every request without a key; set auth = \"token\" in [hub] for keys to count\n", reg.Path, reg.Hub.Auth)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&profiles, "profile", nil, "limit the key to this profile (repeat for more); none: every endpoint")
	cmd.Flags().StringVar(&expires, "expires", "", "refuse the key after this long: 90d, 12h (default: never)")
	cmd.Flags().StringVar(&rate, "rate", "", "the key's rate limit, N/s, N/m or N/h (default: [hub.limits] rate)")
	cmd.Flags().IntVar(&calls, "concurrent-calls", 0, "the key's cap on tool calls in progress at once (default: [hub.limits] concurrent_calls)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the key and its settings as one JSON object")
	return cmd
}

func newKeysListCmd(a *app, flagURL *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the API keys: profiles, expiry, last use, revoked ones too",
		Long: `List every API key of the store, revoked and expired ones too, by name. The
keys themselves are never shown again; their ids are the part after mcphub_.
Last use is recorded at most every 30 s per hub.

--json prints an array of {"name", "id", "profiles", "rate",
"concurrent_calls", "created", "expires", "last_used", "revoked", "state"};
state is live, expired or revoked; rate and concurrent_calls are left out
where the key takes the hub's [hub.limits].`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, _, err := a.targetStore(cmd.Context(), *flagURL)
			if err != nil {
				return err
			}
			defer db.Close()
			keys, err := db.Keys()
			if err != nil {
				return fmt.Errorf("read the keys: %w", err)
			}
			now := time.Now()
			out := make([]keyJSON, len(keys))
			for i, k := range keys {
				out[i] = keyView(k, now)
			}
			if asJSON {
				return a.printJSON(out)
			}
			if len(out) == 0 {
				fmt.Fprintln(a.stdout, "No API keys yet; mcphub keys create NAME makes one.")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tID\tPROFILES\tRATE\tCALLS\tCREATED\tEXPIRES\tLAST USED\tSTATE")
			for _, k := range out {
				profiles := strings.Join(k.Profiles, ",")
				calls := "(hub)"
				if k.Calls > 0 {
					calls = strconv.Itoa(k.Calls)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.Name, k.ID, or(profiles, "(all)"), or(k.Rate, "(hub)"), calls,
					k.Created, or(k.Expires, "never"), or(k.LastUsed, "never"), k.State)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the keys as a JSON array")
	return cmd
}

func or(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}

func newKeysRevokeCmd(a *app, flagURL *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke an API key: every hub on the store refuses it from its next request",
		Long: `Revoke the live API key called NAME. Every hub on the store (each replica of a
team hub) refuses it from its next request, in the sessions it opened too; a
stream it already has open (a GET stream, a call's answer) runs to its end.
It exits 1 when no live key has that name.

--json prints {"name", "revoked"}.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, _, err := a.targetStore(cmd.Context(), *flagURL)
			if err != nil {
				return err
			}
			defer db.Close()
			ok, err := db.RevokeKey(args[0], time.Now())
			if err != nil {
				return fmt.Errorf("revoke the key: %w", err)
			}
			if asJSON {
				if err := a.printJSON(map[string]any{"name": args[0], "revoked": ok}); err != nil {
					return err
				}
			} else if ok {
				fmt.Fprintf(a.stdout, "Revoked API key %s: every hub on this store refuses it from its next request.\n", args[0])
			}
			if !ok {
				if !asJSON {
					fmt.Fprintf(a.stderr, "no live API key is called %s (mcphub keys ls lists them)\n", args[0])
				}
				return exitError{code: 1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the outcome as one JSON object")
	return cmd
}

// accessKeys is the store as the access room's KeyStore.
type accessKeys struct{ db *store.Store }

func (k accessKeys) KeyByID(id string) (access.Key, error) {
	sk, err := k.db.KeyByID(id)
	if errors.Is(err, store.ErrNotFound) {
		return access.Key{}, access.ErrNoKey
	}
	if err != nil {
		return access.Key{}, err
	}
	k2 := access.Key{ID: sk.ID, Name: sk.Name, Hash: sk.Hash, Profiles: sk.Profiles, Concurrent: sk.Concurrent, Expires: sk.Expires, Revoked: sk.Revoked}
	if sk.Rate != "" {
		// keys create wrote it from ParseRate, so it reads back.
		k2.Rate, _ = registry.ParseRate(sk.Rate)
	}
	return k2, nil
}

func (k accessKeys) TouchKey(id string, at time.Time) error { return k.db.TouchKey(id, at) }
