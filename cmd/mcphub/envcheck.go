package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcphub/mcphub/hubclient"
)

// unsetVars tells which of names the environment that will expand the
// registry lacks (see hubclient.Target.UnsetVars); when the hub at t runs
// but does not say, it notes why on stderr and nothing is unset.
func (a *app) unsetVars(ctx context.Context, t hubclient.Target, names []string) (unset []string, where string) {
	unset, where, err := t.UnsetVars(ctx, names)
	if err != nil {
		a.noteUnasked(names, err)
	}
	return unset, where
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
	fmt.Fprint(a.stderr, hubclient.UnsetWarning(server, unset, where))
}
