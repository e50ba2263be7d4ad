package hubclient

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/internal/tokencount"
)

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
