package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/mcphub/mcphub/hubclient"
)

// unsetVars tells which of names the environment that will expand the
// registry lacks: that of the hub at t, when one answers there, since that
// is where ${NAME} is resolved; otherwise this process's, the one a hub
// started from this shell would have. where names the environment that was
// asked, for messages.
func (a *app) unsetVars(ctx context.Context, t hubclient.Target, names []string) (unset []string, where string) {
	if len(names) == 0 {
		return nil, ""
	}
	ans, err := t.Env(ctx, names)
	if err == nil {
		return ans.Unset, fmt.Sprintf("the running hub (pid %d)", ans.PID)
	}
	if !errors.Is(err, hubclient.ErrNoHub) {
		// A hub runs but did not say (an older one, a refused token): this
		// shell's environment says nothing about that hub's.
		a.noteUnasked(names, err)
		return nil, ""
	}
	for _, n := range names {
		if _, ok := os.LookupEnv(n); !ok {
			unset = append(unset, n)
		}
	}
	return unset, "this shell (no hub is running; a hub started from here would lack it too)"
}

// envTarget is the hub to ask whether it has names set, found as status
// finds it, for a command that has not loaded the registry itself. When it
// cannot be found, envTarget says so on stderr and returns false: nothing
// is then known to be unset.
func (a *app) envTarget(names []string) (hubclient.Target, bool) {
	t, _, err := a.statusTarget()
	if err != nil {
		a.noteUnasked(names, err)
		return hubclient.Target{}, false
	}
	return t, true
}

// noteUnasked says that the hub could not be asked whether it has names
// set, and why.
func (a *app) noteUnasked(names []string, err error) {
	fmt.Fprintf(a.stderr, "note: could not ask the running hub whether it has %s set (%v); if the server shows failed, check `mcphub status`\n",
		strings.Join(names, ", "), err)
}

// warnUnset tells the user, before a frozen server does, that the
// environment expanding the registry lacks variables server refers to: the
// hub will show it failed, naming them, until they are set where it starts.
// t is the hub to ask.
func (a *app) warnUnset(ctx context.Context, t hubclient.Target, server string, vars []string) {
	unset, where := a.unsetVars(ctx, t, vars)
	if len(unset) == 0 {
		return
	}
	fmt.Fprintf(a.stderr, "warning: %s %s not set in %s, so %q will show failed until %s;\n"+
		"  set %s in the environment mcphub serve starts from (your shell profile, or the service's environment) and restart the hub,\n"+
		"  or write the value into hub.toml, or disable the server: mcphub disable %s\n",
		strings.Join(unset, ", "), plural(len(unset), "is", "are"), where, server, plural(len(unset), "it is", "they are"),
		plural(len(unset), "it", "them"), server)
}

// plural picks the word for n things.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
