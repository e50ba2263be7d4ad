package hubclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcphub/mcphub/api"
)

// catalogBodyMax bounds the hub's catalog answer: thousands of tools with
// long schemas stay far below it.
const catalogBodyMax = 64 << 20

// Catalog asks the hub at t for the catalog of /mcp, or of profile's
// endpoint (GET /control/catalog), within timeout: the hub answers once it
// has its servers' lists, which may take a moment after it started. A
// profile the hub does not serve is an error naming those it does.
func (t Target) Catalog(ctx context.Context, profile string, timeout time.Duration) (*api.Catalog, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	path := "/control/catalog"
	if profile != "" {
		path += "?profile=" + url.QueryEscape(profile)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.URL(path), nil)
	if err != nil {
		return nil, err
	}
	resp, err := t.Do(req)
	if errors.Is(err, context.DeadlineExceeded) || err != nil && ctx.Err() == context.DeadlineExceeded {
		return nil, fmt.Errorf("the hub at %s did not answer with its catalog within %s; see mcphub status", t.Listen, timeout)
	}
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		herr := t.AnswerError(resp.StatusCode, body)
		if resp.StatusCode == http.StatusNotFound && strings.HasPrefix(Reason(body), "no such endpoint") {
			return nil, t.OlderHubErr("does not answer /control/catalog")
		}
		if resp.StatusCode == http.StatusNotFound && profile != "" {
			if st, err := t.Status(ctx); err == nil {
				return nil, NoProfileErr(profile, "the hub", st.Profiles, func(p api.ProfileStatus) string { return p.Name })
			}
		}
		return nil, herr
	}
	var cat api.Catalog
	if err := json.NewDecoder(io.LimitReader(resp.Body, catalogBodyMax)).Decode(&cat); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("the hub at %s did not send its whole catalog within %s", t.Listen, timeout)
		}
		return nil, fmt.Errorf("the hub at %s answered %s with something other than mcphub's catalog: %w", t.Listen, "/control/catalog", err)
	}
	return &cat, nil
}
