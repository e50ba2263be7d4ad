package hubclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/mcphub/mcphub/api"
)

// statusBodyMax bounds a status answer read whole: a hub's status with
// hundreds of servers and their last errors stays far below it.
const statusBodyMax = 16 << 20

// Status asks the hub at t for its state (GET /readyz), within
// StatusTimeout. A hub still starting answers it too, with HTTP 503.
func (t Target) Status(ctx context.Context) (*api.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, StatusTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.URL("/readyz"), nil)
	if err != nil {
		return nil, err
	}
	resp, err := t.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		var st api.Status
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			return nil, fmt.Errorf("%s answered, but not with mcphub's status (HTTP %d): %w", t.Listen, resp.StatusCode, err)
		}
		return &st, nil
	case http.StatusServiceUnavailable:
		// A hub not ready yet answers its status with 503; a hub that
		// cannot check tokens (auth on, no token) answers 503 with an
		// error, which is no status.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, statusBodyMax))
		var st api.Status
		if json.Unmarshal(body, &st) == nil && st.Version != "" {
			return &st, nil
		}
		return nil, t.AnswerError(resp.StatusCode, body)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return nil, t.AnswerError(resp.StatusCode, body)
}

// Control calls a control endpoint of the hub at t, within StatusTimeout,
// and decodes its answer into out (when set). An answer with another
// status than want is a *HubError: a sentence, never the body as it came.
// A nil ctx is taken for context.Background().
func (t Target) Control(ctx context.Context, method, path string, want int, out any) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, StatusTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, t.URL(path), nil)
	if err != nil {
		return err
	}
	resp, err := t.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return t.AnswerError(resp.StatusCode, body)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return fmt.Errorf("the hub at %s answered %s with something other than mcphub's JSON: %w", t.Listen, path, err)
		}
	}
	return nil
}

// Sessions lists the hub's live client sessions, oldest first (GET
// /control/sessions).
func (t Target) Sessions(ctx context.Context) ([]api.SessionInfo, error) {
	var list []api.SessionInfo
	if err := t.Control(ctx, http.MethodGet, "/control/sessions", http.StatusOK, &list); err != nil {
		return nil, err
	}
	return list, nil
}

// EndSession ends the session id, as a DELETE from its client would
// (DELETE /control/sessions?id=ID). A session the hub does not have is a
// *HubError with Status 404.
func (t Target) EndSession(ctx context.Context, id string) error {
	return t.Control(ctx, http.MethodDelete, "/control/sessions?id="+url.QueryEscape(id), http.StatusNoContent, nil)
}

// Restart asks the hub to restart server (POST /control/restart): a fresh
// connection is started and swapped in once connected. A server the hub
// does not serve is a *HubError with Status 404.
func (t Target) Restart(ctx context.Context, server string) (*api.Restarted, error) {
	res := api.Restarted{Server: server, Status: "restarting"}
	if err := t.Control(ctx, http.MethodPost, "/control/restart?server="+url.QueryEscape(server), http.StatusAccepted, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Env asks the hub which of names its environment lacks (GET
// /control/env), where the registry's ${NAME} are resolved. Values never
// leave the hub.
func (t Target) Env(ctx context.Context, names []string) (*api.EnvReport, error) {
	var ans api.EnvReport
	if err := t.Control(ctx, http.MethodGet, "/control/env?"+url.Values{"name": names}.Encode(), http.StatusOK, &ans); err != nil {
		return nil, err
	}
	return &ans, nil
}
