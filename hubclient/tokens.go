package hubclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/internal/tokencount"
	"github.com/mcphub/mcphub/registry"
)

// CountTokens counts, with enc, what the tools of profile's endpoint
// (/mcp for "") cost a client of it, as the hub at t sends them: the
// report of mcphub tokens, with, for /mcp, each profile's cost too. st is
// the hub's status, nil when it did not answer: it says which servers are
// down and which profiles there are, and without it the counts stand
// alone. The vocabulary is decoded only once the hub has answered, and
// not at all when ctx is done by then.
func (t Target) CountTokens(ctx context.Context, enc tokencount.Encoding, profile string, warn io.Writer) (*tokencount.Report, *api.Status, error) {
	cat, err := t.Catalog(ctx, profile, ListTimeout)
	if err != nil {
		return nil, nil, err
	}
	st, _ := t.Status(ctx)
	if err := ctx.Err(); err != nil {
		return nil, st, err
	}
	counter := enc.NewCounter()
	rep, err := counter.Report(cat)
	if err != nil {
		return nil, st, err
	}
	rep.Profile = profile
	if profile == "" && st != nil {
		if rep.Profiles, err = t.ProfileCosts(ctx, counter, st, warn); err != nil {
			return nil, st, err
		}
	}
	return rep, st, nil
}

// ProfileCosts counts, with counter, the tools of each profile the hub's
// status st lists, asking the hub at t for their catalogs within one
// ListTimeout in all: the profiles' table of mcphub tokens. A profile with
// a problem serves nothing, so it is not asked for; one whose catalog
// cannot be had is noted on warn and not counted. Only an interrupted run
// (ctx cancelled) or a catalog that cannot be counted fails it.
func (t Target) ProfileCosts(ctx context.Context, counter *tokencount.Counter, st *api.Status, warn io.Writer) ([]tokencount.ProfileCost, error) {
	ctx, cancel := context.WithTimeout(ctx, ListTimeout)
	defer cancel()
	var costs []tokencount.ProfileCost
	for _, p := range st.Profiles {
		pc := tokencount.ProfileCost{Name: p.Name, Endpoint: View{Profile: p.Name}.Path(), Mode: p.Mode, Problem: p.Problem}
		if p.Problem != "" {
			costs = append(costs, pc)
			continue
		}
		pcat, err := t.Catalog(ctx, p.Name, ListTimeout)
		if err != nil {
			if errors.Is(ctx.Err(), context.Canceled) {
				return nil, err
			}
			pc.Error = err.Error()
			fmt.Fprintf(warn, "note: profile %s is not counted: %v\n", p.Name, err)
		} else {
			prep, err := counter.Report(pcat)
			if err != nil {
				return nil, fmt.Errorf("profile %s: %w", p.Name, err)
			}
			pc.Endpoint, pc.Mode, pc.Total, pc.Full = prep.Endpoint, prep.Mode, prep.Total, prep.Full
		}
		costs = append(costs, pc)
	}
	return costs, nil
}

// CheckToolCap asks the running hub of reg how many tools the endpoint a
// client's entry points at lists (/mcp, or profile's), when the client
// (as connect names it) caps them: warning says the count exceeds the
// cap, and how to bring it down. With a profile, note says when the count
// could not be checked.
func (l Locator) CheckToolCap(ctx context.Context, reg *registry.Registry, client, profile string) (warning, note string) {
	i := slices.IndexFunc(tokencount.ToolCaps, func(tc tokencount.ToolCap) bool { return tc.ID == client })
	if i < 0 {
		return "", ""
	}
	cp := tokencount.ToolCaps[i]
	unchecked := func(why string) string {
		if profile == "" {
			return ""
		}
		return fmt.Sprintf("%s, so whether profile %s fits %s's cap of %s could not be checked", why, profile, cp.Client, cp.Wording(true))
	}
	tok, err := Token(reg)
	if err != nil {
		return "", unchecked("the hub's token could not be read")
	}
	t := l.For(reg, tok)
	cat, err := t.Catalog(ctx, profile, ConnectTimeout)
	switch {
	case errors.Is(err, ErrNoHub):
		return "", unchecked("no hub is running at " + t.Listen)
	case err != nil:
		return "", unchecked(fmt.Sprintf("the hub could not be asked (%v)", err))
	case len(cat.Listed) <= cp.Cap:
		return "", ""
	}
	if profile == "" {
		return fmt.Sprintf("the hub's /mcp lists %d tools; %s. Narrow it with allow/deny on its servers, or connect a profile with --profile NAME ([profiles.NAME] in %s; mode = \"search\" lists 3 tools)",
			len(cat.Listed), cp.Does(), reg.Path), ""
	}
	return fmt.Sprintf("profile %s lists %d tools; %s. Narrow it with include/exclude in [profiles.%s], or set mode = \"search\" (3 tools)",
		profile, len(cat.Listed), cp.Does(), profile), ""
}
