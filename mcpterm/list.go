package mcpterm

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/termtext"
)

// ListTools prints the tools of v's endpoint (the merged /mcp, a
// server's own or a profile's): a table of name and description sorted by
// name with a count line, or with asJSON the tools array as the hub sent
// it.
func (c *Client) ListTools(ctx context.Context, v hubclient.View, asJSON bool) error {
	return listOf(ctx, c, v, asJSON, lister[hubclient.Tool]{
		method: "tools/list",
		member: "tools",
		noun:   "tool",
		name:   func(t hubclient.Tool) string { return t.Name },
		header: []string{"NAME", "DESCRIPTION"},
		row:    func(t hubclient.Tool) []string { return []string{t.Name, t.Description} },
		note: func(s *hubclient.Session) string {
			if !s.SearchMode() {
				return ""
			}
			return fmt.Sprintf("search mode: the profile's %s are found through search_tools; mcphub tokens --profile %s counts them",
				termtext.HowMany(s.ProfileTools(), "tool"), s.View().Profile)
		},
	})
}

// ListPrompts prints the prompts of v's endpoint as ListTools prints
// tools, with their arguments (the optional ones in brackets).
func (c *Client) ListPrompts(ctx context.Context, v hubclient.View, asJSON bool) error {
	return listOf(ctx, c, v, asJSON, lister[hubclient.Prompt]{
		method: "prompts/list",
		member: "prompts",
		noun:   "prompt",
		name:   func(p hubclient.Prompt) string { return p.Name },
		header: []string{"NAME", "ARGUMENTS", "DESCRIPTION"},
		row:    func(p hubclient.Prompt) []string { return []string{p.Name, promptArgs(p), p.Description} },
	})
}

// ListResources prints the resources and the resource templates of v's
// endpoint as one table sorted by URI, with a count line; with asJSON,
// {"resources": [...], "resourceTemplates": [...]}, each item as the hub
// sent it.
func (c *Client) ListResources(ctx context.Context, v hubclient.View, asJSON bool) error {
	var resources, templates []json.RawMessage
	fetch := func(ctx context.Context, s *hubclient.Session) error {
		var err error
		if resources, err = s.ListAll(ctx, "resources/list"); err != nil {
			return err
		}
		templates, err = s.ListAll(ctx, "resources/templates/list")
		return err
	}
	return c.listView(ctx, v, "resources", fetch, func() error {
		if asJSON {
			out := []byte(`{"resources":`)
			out = jsonrpc.AppendArray(out, resources)
			out = append(out, `,"resourceTemplates":`...)
			out = jsonrpc.AppendArray(out, templates)
			return printRaw(c.Stdout, append(out, '}'))
		}
		rs, err := hubclient.DecodeItems[hubclient.Resource]("resources/list", resources)
		if err != nil {
			return err
		}
		ts, err := hubclient.DecodeItems[hubclient.ResourceTemplate]("resources/templates/list", templates)
		if err != nil {
			return err
		}
		c.printResources(rs, ts)
		return nil
	})
}

// listView opens a session with the hub on v's endpoint and lists kind
// ("tools") on it with fetch, within hubclient.ListTimeout. Then it notes
// the servers whose kind the view lacks and has show print the lists.
// Ctrl-C ends it as an interrupt.
func (c *Client) listView(ctx context.Context, v hubclient.View, kind string, fetch func(ctx context.Context, s *hubclient.Session) error, show func() error) error {
	ctx, s, interrupted, end, err := c.session(ctx, v, nil)
	if err != nil {
		return err
	}
	defer end()
	lctx, cancel := context.WithTimeout(ctx, hubclient.ListTimeout)
	defer cancel()
	if err := fetch(lctx, s); err != nil {
		if interrupted() {
			return c.Interrupted(s)
		}
		return s.Fail("list the "+kind+" of "+s.Where(), err)
	}
	c.noteMissing(ctx, s, kind)
	return show()
}

// lister describes one kind of item that listOf lists.
type lister[T any] struct {
	method string           // the list method: "tools/list"
	member string           // the array of its result: "tools"
	noun   string           // one item, for the count line: "tool"
	name   func(T) string   // what the table is sorted by
	header []string         // the table's header
	row    func(T) []string // one item's cells
	// note, when set, is a line that follows the count line: "" for none.
	note func(s *hubclient.Session) string
}

// listOf lists one kind of item: the items of v's endpoint, as a table
// sorted by name with a count line, or with asJSON the array as the hub
// sent it.
func listOf[T any](ctx context.Context, c *Client, v hubclient.View, asJSON bool, l lister[T]) error {
	var raws []json.RawMessage
	var sess *hubclient.Session
	fetch := func(ctx context.Context, s *hubclient.Session) error {
		var err error
		sess = s
		raws, err = s.ListAll(ctx, l.method)
		return err
	}
	return c.listView(ctx, v, l.member, fetch, func() error {
		if asJSON {
			return printRaw(c.Stdout, jsonrpc.AppendArray(nil, raws))
		}
		items, err := hubclient.DecodeItems[T](l.method, raws)
		if err != nil {
			return err
		}
		slices.SortFunc(items, func(x, y T) int { return strings.Compare(l.name(x), l.name(y)) })
		if len(items) > 0 {
			rows := make([][]string, len(items))
			for i, it := range items {
				rows[i] = l.row(it)
			}
			termtext.PrintTable(c.Stdout, tableWidth, l.header, rows)
		}
		fmt.Fprintln(c.Stdout, termtext.HowMany(len(items), l.noun))
		if l.note != nil {
			if n := l.note(sess); n != "" {
				fmt.Fprintln(c.Stdout, n)
			}
		}
		return nil
	})
}

// promptArgs lists a prompt's arguments, the optional ones in brackets:
// "owner repo [branch]"; "-" for none.
func promptArgs(p hubclient.Prompt) string {
	var parts []string
	for _, arg := range p.Arguments {
		if arg == nil {
			continue
		}
		if arg.Required {
			parts = append(parts, arg.Name)
		} else {
			parts = append(parts, "["+arg.Name+"]")
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// printResources prints the resources and templates as one table.
func (c *Client) printResources(resources []hubclient.Resource, templates []hubclient.ResourceTemplate) {
	rows := make([][]string, 0, len(resources)+len(templates))
	for _, r := range resources {
		rows = append(rows, []string{r.URI, r.Name, r.Description})
	}
	for _, t := range templates {
		rows = append(rows, []string{t.URITemplate, t.Name, t.Description})
	}
	slices.SortStableFunc(rows, func(x, y []string) int { return strings.Compare(x[0], y[0]) })
	if len(rows) > 0 {
		termtext.PrintTable(c.Stdout, tableWidth, []string{"URI", "NAME", "DESCRIPTION"}, rows)
	}
	line := termtext.HowMany(len(resources), "resource")
	if len(templates) > 0 {
		line += ", " + termtext.HowMany(len(templates), "resource template")
	}
	fmt.Fprintln(c.Stdout, line)
}
