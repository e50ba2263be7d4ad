package hubclient

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/mcphub/mcphub/internal/termtext"
)

// Whether the environment that expands the registry has the variables a
// server refers to: the running hub's, asked over the control API, or this
// shell's when none runs.

// UnsetVars tells which of names the environment that will expand the
// registry lacks: that of the hub at t, when one answers there, since that
// is where ${NAME} is resolved; otherwise this process's, the one a hub
// started from this shell would have. where names the environment that
// was asked, for messages. When a hub runs but does not say (an older
// one, a refused token), err says why and nothing is known to be unset:
// this shell's environment says nothing about that hub's.
func (t Target) UnsetVars(ctx context.Context, names []string) (unset []string, where string, err error) {
	if len(names) == 0 {
		return nil, "", nil
	}
	ans, err := t.Env(ctx, names)
	if err == nil {
		return ans.Unset, fmt.Sprintf("the running hub (pid %d)", ans.PID), nil
	}
	if !errors.Is(err, ErrNoHub) {
		return nil, "", err
	}
	for _, n := range names {
		if _, ok := os.LookupEnv(n); !ok {
			unset = append(unset, n)
		}
	}
	return unset, "this shell (no hub is running; a hub started from here would lack it too)", nil
}

// UnsetWarning warns, before a server fails, that the environment that
// expands the registry (where, as Target.UnsetVars names it) lacks the
// variables unset the server refers to, and what to do; "" when none is
// unset.
func UnsetWarning(server string, unset []string, where string) string {
	n := len(unset)
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("warning: %s %s not set in %s, so %q will show failed until %s;\n"+
		"  set %s in the environment mcphub serve starts from (your shell profile, or the service's environment) and restart the hub,\n"+
		"  or write the value into hub.toml, or disable the server: mcphub disable %s\n",
		strings.Join(unset, ", "), termtext.Plural(n, "is", "are"), where, server, termtext.Plural(n, "it is", "they are"),
		termtext.Plural(n, "it", "them"), server)
}
