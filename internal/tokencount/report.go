package tokencount

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// UnknownServer is the server a listed tool is counted under when the
// hub's catalog names no server for it.
const UnknownServer = "?"

// modeSearch is the mode of an endpoint in search mode, as the hub's
// catalog names it (registry.ModeSearch): its clients are given three
// search tools instead of its catalog.
const modeSearch = "search"

// Report is what one endpoint's tools cost, and the --json answer of
// mcphub tokens.
type Report struct {
	Encoding string `json:"encoding"`
	// Profile is the profile counted, "" for /mcp.
	Profile  string `json:"profile,omitempty"`
	Endpoint string `json:"endpoint"`
	Mode     string `json:"mode"`
	// Total is what the tools a client is given cost; Full what the
	// view's tools would cost listed in full (Total, but in search mode).
	Total Total `json:"total"`
	Full  Total `json:"full"`
	// Listed are the tools a client is given in search mode.
	Listed []ListedCost `json:"listed,omitempty"`
	// Servers and Tools are the view's tools, by server and one by one.
	Servers  []ServerCost  `json:"servers"`
	Tools    []ToolCost    `json:"tools"`
	Exceeds  []CapExceed   `json:"exceeds"`
	Profiles []ProfileCost `json:"profiles,omitempty"`
}

// Total is a number of tools and what they cost together.
type Total struct {
	Tools  int `json:"tools"`
	Tokens int `json:"tokens"`
}

// ServerCost is what one server's tools cost.
type ServerCost struct {
	Name   string `json:"name"`
	Tools  int    `json:"tools"`
	Tokens int    `json:"tokens"`
}

// ToolCost is what one tool costs.
type ToolCost struct {
	Name   string `json:"name"`
	Server string `json:"server"`
	Tokens int    `json:"tokens"`
}

// ListedCost is what one of the search tools costs.
type ListedCost struct {
	Name   string `json:"name"`
	Tokens int    `json:"tokens"`
}

// CapExceed is a client's tool cap the tools a client is given exceed.
type CapExceed struct {
	Client string `json:"client"`
	Cap    int    `json:"cap"`
}

// ProfileCost is what one profile's tools cost, a row of a report's
// profiles: the caller counts each profile's catalog and fills one in.
type ProfileCost struct {
	Name     string `json:"name"`
	Endpoint string `json:"endpoint"`
	Mode     string `json:"mode"`
	Total    Total  `json:"total"`
	Full     Total  `json:"full"`
	// Problem says what is wrong with the profile's table: its endpoint
	// serves nothing until it is fixed.
	Problem string `json:"problem,omitempty"`
	// Error says why the profile could not be counted.
	Error string `json:"error,omitempty"`
}

// countedItem is one tool entry and its tokens.
type countedItem struct {
	name   string
	tokens int
}

// countItems counts the tokens of tool entries.
func countItems(counter *Counter, items []json.RawMessage) ([]countedItem, error) {
	out := make([]countedItem, len(items))
	for i, item := range items {
		var entry struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(item, &entry); err != nil {
			return nil, fmt.Errorf("the hub's tool entry is not a JSON object: %w", err)
		}
		n, err := counter.Count(item)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", entry.Name, err)
		}
		out[i] = countedItem{name: entry.Name, tokens: n}
	}
	return out, nil
}

// Report counts the tokens of the catalog's tools: those a client is given
// (cat.Listed) and, in search mode, the view's own tools, grouped by the
// server the catalog names for each (UnknownServer where it names none).
// Servers and tools are sorted by tokens, the most first, then by name;
// Exceeds names the ToolCaps the listed tools exceed.
func (c *Counter) Report(cat *api.Catalog) (*Report, error) {
	rep := &Report{Encoding: c.Encoding(), Endpoint: cat.Endpoint, Mode: cat.Mode,
		Servers: []ServerCost{}, Tools: []ToolCost{}, Exceeds: []CapExceed{}}
	listed, err := countItems(c, cat.Listed)
	if err != nil {
		return nil, err
	}
	for _, it := range listed {
		rep.Total.Tools++
		rep.Total.Tokens += it.tokens
	}
	if cat.Mode == modeSearch {
		if err := rep.addSearchTools(c, cat, listed); err != nil {
			return nil, err
		}
	} else {
		serverOf := make(map[string]string, len(cat.Tools))
		for _, t := range cat.Tools {
			if name, ok := jsonrpc.StringMember(t.Item, "name"); ok {
				serverOf[name] = t.Server
			}
		}
		for _, it := range listed {
			rep.Tools = append(rep.Tools, ToolCost{Name: it.name, Server: cmp.Or(serverOf[it.name], UnknownServer), Tokens: it.tokens})
		}
	}
	rep.addServers()
	for _, tc := range ToolCaps {
		if rep.Total.Tools > tc.Cap {
			rep.Exceeds = append(rep.Exceeds, CapExceed{Client: tc.Client, Cap: tc.Cap})
		}
	}
	return rep, nil
}

// addSearchTools counts, for an endpoint in search mode, the view's own
// tools (what they would cost listed in full) and records the listed
// search tools one by one.
func (r *Report) addSearchTools(c *Counter, cat *api.Catalog, listed []countedItem) error {
	items := make([]json.RawMessage, len(cat.Tools))
	for i, t := range cat.Tools {
		items[i] = t.Item
	}
	all, err := countItems(c, items)
	if err != nil {
		return err
	}
	for i, it := range all {
		r.Tools = append(r.Tools, ToolCost{Name: it.name, Server: cat.Tools[i].Server, Tokens: it.tokens})
	}
	for _, it := range listed {
		r.Listed = append(r.Listed, ListedCost{Name: it.name, Tokens: it.tokens})
	}
	slices.SortFunc(r.Listed, func(x, y ListedCost) int {
		return cmp.Or(cmp.Compare(y.Tokens, x.Tokens), strings.Compare(x.Name, y.Name))
	})
	return nil
}

// addServers adds up the report's tools into Full and, by server, into
// Servers, and sorts servers and tools by tokens, the most first.
func (r *Report) addServers() {
	byServer := map[string]*ServerCost{}
	for _, t := range r.Tools {
		r.Full.Tools++
		r.Full.Tokens += t.Tokens
		sc := byServer[t.Server]
		if sc == nil {
			sc = &ServerCost{Name: t.Server}
			byServer[t.Server] = sc
		}
		sc.Tools++
		sc.Tokens += t.Tokens
	}
	for _, sc := range byServer {
		r.Servers = append(r.Servers, *sc)
	}
	slices.SortFunc(r.Servers, func(x, y ServerCost) int {
		return cmp.Or(cmp.Compare(y.Tokens, x.Tokens), strings.Compare(x.Name, y.Name))
	})
	slices.SortFunc(r.Tools, func(x, y ToolCost) int {
		return cmp.Or(cmp.Compare(y.Tokens, x.Tokens), strings.Compare(x.Name, y.Name))
	})
}

// UnknownTools counts the tools the catalog names no server for, which
// the report counts under UnknownServer and a caller should point out.
func (r *Report) UnknownTools() int {
	n := 0
	for _, t := range r.Tools {
		if t.Server == UnknownServer {
			n++
		}
	}
	return n
}
