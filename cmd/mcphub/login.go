package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/internal/keychain"
	"github.com/mcphub/mcphub/internal/termtext"
	"github.com/mcphub/mcphub/probe"
	"github.com/mcphub/mcphub/registry"
)

func init() { commands = append(commands, newLoginCmd, newLogoutCmd) }

const loginLong = `Sign in to a remote server that asks for OAuth sign-in (the hub shows it
needs-login), once, in the browser.

login connects to the server as the hub does. When the server asks for
sign-in it finds the server's authorization server (its protected resource
metadata, then the authorization server's metadata), registers mcphub with
it (the client of the entry's oauth key, a client ID metadata document, or
dynamic registration), opens the browser on the sign-in page ($BROWSER
when set) and waits for the redirect on a local port of 127.0.0.1. The
tokens go to the OS keychain (macOS Keychain, Windows Credential Manager,
Secret Service), or where none answers to a file readable only by you in
the data directory (MCPHUB_KEYCHAIN=file chooses the file). A running hub
is then told to reconnect the server with them, and refreshes them before
they expire from then on.

A browser on another machine works too: open the printed URL there, and
the redirect to 127.0.0.1 must reach this machine (forward the port).`

const loginExample = `  mcphub login tracker
  BROWSER=firefox mcphub login tracker
  mcphub logout tracker`

func newLoginCmd(a *app) *cobra.Command {
	var timeout time.Duration
	var asJSON bool
	cmd := &cobra.Command{
		Use:               "login NAME",
		Short:             "Sign in to a remote server behind OAuth; the hub keeps and refreshes the tokens",
		Long:              loginLong,
		Example:           loginExample,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeServers(isRemote),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.login(cmd.Context(), args[0], timeout, asJSON)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the sign-in in the browser")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"server", "signed_in", "tools", "store", "hub"} as one JSON object`)
	return cmd
}

func newLogoutCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "logout NAME",
		Short: "Forget the tokens of a remote server (its client registration too)",
		Long: `Forget what mcphub keeps for a server behind OAuth: its tokens and its
client registration, in the OS keychain or the file it falls back to. A
running hub is told to reconnect the server, which then shows needs-login
until mcphub login signs in again. The authorization server may still
list the grant; revoke it there to end it for good.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeServers(isRemote),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.logout(cmd.Context(), args[0], asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"server", "store", "hub"} as one JSON object`)
	return cmd
}

func isRemote(s *registry.Server) bool { return s.Kind() == registry.KindRemote }

// oauthStore is the store of OAuth grants, shared by the commands of one
// process.
func (a *app) oauthStore() *keychain.Store { return a.oauthKeys.Open(a.dataDir) }

// cliGrantsFor is cliGrants for the registry in force.
func (a *app) cliGrantsFor() (grantKeeper, func(), error) {
	reg, err := a.loadRegistry()
	if err != nil {
		return nil, nil, err
	}
	return a.cliGrants(context.Background(), reg)
}

// oauthState is what app keeps for oauthStore.
type oauthState struct{ oauthKeys keychain.Once }

// remoteSpec returns the registry's remote server called name, or an error
// that says what to do.
func (a *app) remoteSpec(name string) (*registry.Server, error) {
	reg, err := a.loadRegistry()
	if err != nil {
		return nil, err
	}
	return probe.RemoteServer(reg, a.configPath, name)
}

func (a *app) login(ctx context.Context, name string, timeout time.Duration, asJSON bool) error {
	if ctx == nil {
		ctx = context.Background()
	}
	spec, err := a.remoteSpec(name)
	if err != nil {
		return err
	}
	store, closeStore, err := a.cliGrantsFor()
	if err != nil {
		return err
	}
	defer closeStore()
	res, err := probe.SignIn(ctx, spec, store, probe.SignInOptions{Timeout: timeout, Log: a.stderr, Version: mcphubVersion()})
	if err != nil {
		return err
	}
	if !res.SignedIn {
		// The server let mcphub in without a sign-in: nothing to keep.
		if asJSON {
			return a.printJSON(res)
		}
		fmt.Fprintf(a.stdout, "%s did not ask for sign-in; mcphub reaches it without one\n", name)
		return nil
	}
	if res.ListErr != nil {
		fmt.Fprintf(a.stderr, "warning: signed in, but listing %s's tools failed: %v\n", name, res.ListErr)
	}
	res.Hub = a.tellHubs(ctx, store, name)
	if asJSON {
		return a.printJSON(res)
	}
	fmt.Fprintf(a.stdout, "signed in to %s: %s; tokens kept in the %s\n", name, termtext.HowMany(res.Tools, "tool"), res.Store)
	if n := store.Notice(); n != "" {
		fmt.Fprintln(a.stderr, "note: "+n)
	}
	fmt.Fprintln(a.stdout, "hub: "+res.Hub)
	return nil
}

func (a *app) logout(ctx context.Context, name string, asJSON bool) error {
	if ctx == nil {
		ctx = context.Background()
	}
	spec, err := a.remoteSpec(name)
	if err != nil {
		return err
	}
	store, closeStore, err := a.cliGrantsFor()
	if err != nil {
		return err
	}
	defer closeStore()
	res, err := probe.SignOut(spec, store)
	if err != nil {
		return err
	}
	res.Hub = a.tellHubs(ctx, store, name)
	if asJSON {
		return a.printJSON(res)
	}
	fmt.Fprintf(a.stdout, "signed out of %s: its tokens and client registration are gone from the %s\n", name, res.Store)
	fmt.Fprintln(a.stdout, "hub: "+res.Hub)
	return nil
}

// reconnectOnHub asks a running hub to reconnect a server with what the
// store now holds, and says how that went.
func (a *app) reconnectOnHub(ctx context.Context, name string) string {
	t, _, err := a.target()
	if err != nil {
		return "not told (" + err.Error() + ")"
	}
	return t.ReconnectWithTokens(ctx, name)
}
