package hubclient

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/internal/termtext"
	"github.com/mcphub/mcphub/internal/textdist"
	"github.com/mcphub/mcphub/registry"
)

// checkServer makes sure the hub serves server's own endpoint with the
// server connected, and says what to do when it does not. A server the hub
// is still starting is waited for, up to startWait.
func checkServer(ctx context.Context, t Target, server string) error {
	deadline := time.Now().Add(startWait)
	for {
		st, err := t.Status(ctx)
		if err != nil {
			return err
		}
		s := FindServer(st, server)
		if s == nil {
			return unknownServerErr(st, server)
		}
		switch s.State {
		case api.StateConnected:
			return nil
		case api.StateDisabled:
			return fmt.Errorf("server %q is disabled; enable it with: mcphub enable %s", server, server)
		case api.StateStarting:
			wait := min(startPoll, time.Until(deadline))
			if wait <= 0 {
				return fmt.Errorf("server %s is still starting after %s; see mcphub status or mcphub logs %s", server, startWait, server)
			}
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return ctx.Err()
			case <-timer.C:
			}
			continue
		}
		return notConnectedErr(*s)
	}
}

// checkProfile makes sure the hub serves the profile called name, and
// serves it: a profile whose table has a problem answers nothing until it
// is fixed. It returns the hub's status of the profile. A hub that lists no
// profile while the registry at configPath has this one is older than this
// mcphub.
func checkProfile(ctx context.Context, t Target, name, configPath string) (*api.ProfileStatus, error) {
	st, err := t.Status(ctx)
	if err != nil {
		return nil, err
	}
	p := FindProfile(st, name)
	if p == nil {
		if len(st.Profiles) == 0 && configPath != "" {
			if reg, err := registry.LoadServing(configPath); err == nil && reg.Profile(name) != nil {
				return nil, t.OlderHubErr("lists no profiles")
			}
		}
		return nil, NoProfileErr(name, "the hub", st.Profiles, func(p api.ProfileStatus) string { return p.Name })
	}
	if p.Problem != "" {
		return nil, fmt.Errorf("profile %s serves nothing until its table is fixed (mcphub validate shows every problem):\n%s", name, p.Problem)
	}
	return p, nil
}

// FindProfile is the entry of st for the profile called name, nil when it
// lists none (or name is "").
func FindProfile(st *api.Status, name string) *api.ProfileStatus {
	for i := range st.Profiles {
		if name != "" && st.Profiles[i].Name == name {
			return &st.Profiles[i]
		}
	}
	return nil
}

// FindServer is the entry of st for server, nil when it lists none.
func FindServer(st *api.Status, server string) *api.ServerStatus {
	for i := range st.Servers {
		if st.Servers[i].Name == server {
			return &st.Servers[i]
		}
	}
	return nil
}

// NoProfileErr says that where (the hub, a registry file) has no profile
// called name, naming the closest of its profiles, or how to add one.
// nameOf is a profile's name: the hub's status and the registry list
// profiles as different types.
func NoProfileErr[P any](name, where string, profiles []P, nameOf func(P) string) error {
	if len(profiles) == 0 {
		return fmt.Errorf("no profile %q in %s; it has none (a profile is a [profiles.NAME] table of the registry)", name, where)
	}
	names := make([]string, len(profiles))
	for i, p := range profiles {
		names[i] = nameOf(p)
	}
	slices.Sort(names)
	msg := fmt.Sprintf("no profile %q in %s; its profiles are %s", name, where, strings.Join(names, ", "))
	if close := textdist.Suggest(name, names, 3); len(close) > 0 {
		msg += " (did you mean " + strings.Join(close, ", ") + "?)"
	}
	return errors.New(msg)
}

// unknownServerErr says that the hub has no server named server, and which
// it has.
func unknownServerErr(st *api.Status, server string) error {
	var known []string
	for _, s := range st.Servers {
		if s.State != api.StateDisabled {
			known = append(known, s.Name)
		}
	}
	if len(known) == 0 {
		return fmt.Errorf("no server %q in the hub; it serves none (add one with: mcphub add NAME -- COMMAND)", server)
	}
	slices.Sort(known)
	return fmt.Errorf("no server %q in the hub; known: %s", server, strings.Join(known, ", "))
}

// notConnectedErr says that a server is not connected, why, and where to
// look.
func notConnectedErr(s api.ServerStatus) error {
	msg := fmt.Sprintf("server %s is %s", s.Name, s.State)
	if s.LastError != "" {
		msg += ": " + termtext.OneLine(s.LastError, 200)
	}
	return fmt.Errorf("%s; see mcphub status or mcphub logs %s", msg, s.Name)
}
