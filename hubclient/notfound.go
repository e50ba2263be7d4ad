package hubclient

// The hub's "not found" for a server or a session, turned into a sentence
// that says what the hub does have.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/mcphub/mcphub/api"
)

// RestartServer asks the hub to restart one server, as Restart does. When
// the hub does not know the name, the error adds what it does serve: its
// enabled servers, or how to enable the server when the hub has it
// disabled, so that the user can try again without another command.
func (t Target) RestartServer(ctx context.Context, name string) (*api.Restarted, error) {
	res, err := t.Restart(ctx, name)
	if he := (*HubError)(nil); errors.As(err, &he) && he.Status == http.StatusNotFound && he.Reason != "" {
		return nil, t.unknownServer(ctx, name, he)
	}
	return res, err
}

// unknownServer is the hub's refusal to restart name, with what the hub
// does serve.
func (t Target) unknownServer(ctx context.Context, name string, refused *HubError) error {
	st, err := t.Status(ctx)
	if err != nil {
		return refused
	}
	var enabled []string
	for _, s := range st.Servers {
		switch {
		case s.Name == name && s.State == api.StateDisabled:
			return fmt.Errorf("%w; %s is disabled: enable it with mcphub enable %s", refused, name, name)
		case s.State != api.StateDisabled:
			enabled = append(enabled, s.Name)
		}
	}
	if len(enabled) == 0 {
		return fmt.Errorf("%w; it serves no enabled server (add one with: mcphub add NAME -- COMMAND [ARGS...])", refused)
	}
	return fmt.Errorf("%w; its enabled servers: %s (see mcphub status)", refused, strings.Join(enabled, ", "))
}

// EndSessionByID ends one session of the hub, as EndSession does; when
// the hub has no session of that id, the error says where the live ones
// are listed.
func (t Target) EndSessionByID(ctx context.Context, id string) error {
	err := t.EndSession(ctx, id)
	if he := (*HubError)(nil); errors.As(err, &he) && he.Status == http.StatusNotFound && he.Reason != "" {
		return fmt.Errorf("%w (see mcphub sessions for the live ones)", he)
	}
	return err
}
