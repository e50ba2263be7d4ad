package hubclient

import (
	"context"
	"errors"
	"net/http"
	"net/url"
)

// ReconnectWithTokens asks the hub to reconnect server with what the OAuth
// store now holds, after login, logout or probe --save changed it, and
// says in a sentence how that went. None of the outcomes is an error to
// those commands: the tokens are kept whether or not a hub runs, and the
// sentence names the command that applies them.
func (t Target) ReconnectWithTokens(ctx context.Context, server string) string {
	err := t.Control(ctx, http.MethodPost, "/control/restart?server="+url.QueryEscape(server), http.StatusAccepted, nil)
	var he *HubError
	switch {
	case err == nil:
		return "reconnecting " + server + "; see mcphub status"
	case errors.As(err, &he) && he.Status == http.StatusNotFound:
		return server + " is not enabled on the running hub; mcphub enable " + server + " starts it"
	case errors.Is(err, ErrNoHub):
		return "no hub running; mcphub serve uses the tokens when it starts"
	default:
		return "not told (" + err.Error() + "); mcphub restart " + server + " reconnects it"
	}
}
