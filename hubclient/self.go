package hubclient

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/mcphub/mcphub/registry"
)

// Self is what tells this hub apart from an upstream in a client's file,
// so that neither import nor connect --move takes the hub for one of its
// own servers: the addresses it is known to listen on (listens), the one a
// running hub recorded in the data directory (serve --listen may differ),
// and its registry file, config.
func (l Locator) Self(config string, listens ...string) registry.Self {
	self := registry.Self{Listens: listens, Config: config}
	// A stale record errs on the side of never importing a hub.
	if info, err := ReadRunInfo(l.DataDir); err == nil && info.Listen != "" && !slices.Contains(self.Listens, info.Listen) {
		self.Listens = append(self.Listens, info.Listen)
	}
	return self
}

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
