package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/termtext"
)

func init() { commands = append(commands, newResourcesCmd) }

func newResourcesCmd(a *app) *cobra.Command {
	cmd := a.listCmd(&cobra.Command{
		Use:   "resources [ls [SERVER]]",
		Short: "List the running hub's resources (resources ls [SERVER]) or read one (resources read URI)",
		Long: `List the resources of the running hub, or read one, as an MCP client of the
hub (found as "mcphub status" finds it, with its bearer token when auth is on).

The hub serves every server's resources under their own URIs on its merged
endpoint /mcp; with SERVER, "resources ls" asks that server's own endpoint
/SERVER/mcp instead, which lists only that server's; with --profile NAME,
"resources ls" and "resources read" use the profile's endpoint
/profiles/NAME/mcp, which has the resources of the servers it selects.`,
		Example: `  mcphub resources ls                 # every resource and resource template
  mcphub resources ls notes           # the notes server's
  mcphub resources ls --profile docs  # what a client of /profiles/docs/mcp sees
  mcphub resources read file:///notes/today.md`,
		Args: cobra.NoArgs,
	}, "the same as resources ls --json", a.resourcesList)
	cmd.AddCommand(newResourcesLsCmd(a), newResourcesReadCmd(a))
	return cmd
}

func newResourcesLsCmd(a *app) *cobra.Command {
	return a.listCmd(&cobra.Command{
		Use:   "ls [SERVER]",
		Short: "List the running hub's resources and resource templates",
		Long: `List the running hub's resources and resource templates: URI (or URI
template), name and the first line of the description, sorted by URI.
Without SERVER they come from the merged endpoint /mcp; with SERVER from
that server's own endpoint /SERVER/mcp, which lists only its own; with
--profile NAME from the profile's endpoint /profiles/NAME/mcp, which lists
those of the servers the profile selects.

--json prints {"resources": [...], "resourceTemplates": [...]}, each item as
the hub sent it.`,
		Example: `  mcphub resources ls
  mcphub resources ls notes --json
  mcphub resources ls --profile docs`,
		Args: cobra.MaximumNArgs(1),
	}, "print the resources and templates as the hub sent them", a.resourcesList)
}

// resourcesList is resources ls: the resources and the resource templates.
func (a *app) resourcesList(ctx context.Context, v hubclient.View, asJSON bool) error {
	var resources, templates []json.RawMessage
	fetch := func(ctx context.Context, s *hubclient.Session) error {
		var err error
		if resources, err = s.ListAll(ctx, "resources/list"); err != nil {
			return err
		}
		templates, err = s.ListAll(ctx, "resources/templates/list")
		return err
	}
	return a.listView(ctx, v, "resources", fetch, func() error {
		if asJSON {
			out := []byte(`{"resources":`)
			out = jsonrpc.AppendArray(out, resources)
			out = append(out, `,"resourceTemplates":`...)
			out = jsonrpc.AppendArray(out, templates)
			return printRaw(a.stdout, append(out, '}'))
		}
		rs, err := hubclient.DecodeItems[hubclient.Resource]("resources/list", resources)
		if err != nil {
			return err
		}
		ts, err := hubclient.DecodeItems[hubclient.ResourceTemplate]("resources/templates/list", templates)
		if err != nil {
			return err
		}
		printResources(a, rs, ts)
		return nil
	})
}

// printResources prints the resources and templates as one table.
func printResources(a *app, resources []hubclient.Resource, templates []hubclient.ResourceTemplate) {
	rows := make([][]string, 0, len(resources)+len(templates))
	for _, r := range resources {
		rows = append(rows, []string{r.URI, r.Name, r.Description})
	}
	for _, t := range templates {
		rows = append(rows, []string{t.URITemplate, t.Name, t.Description})
	}
	slices.SortStableFunc(rows, func(x, y []string) int { return strings.Compare(x[0], y[0]) })
	if len(rows) > 0 {
		termtext.PrintTable(a.stdout, tableWidth, []string{"URI", "NAME", "DESCRIPTION"}, rows)
	}
	line := termtext.HowMany(len(resources), "resource")
	if len(templates) > 0 {
		line += ", " + termtext.HowMany(len(templates), "resource template")
	}
	fmt.Fprintln(a.stdout, line)
}

func newResourcesReadCmd(a *app) *cobra.Command {
	var asJSON bool
	var profile string
	cmd := &cobra.Command{
		Use:   "read URI",
		Short: "Read one resource of the running hub and print its contents",
		Long: `Read the resource URI through the running hub's merged endpoint /mcp, which
sends it to the server that has it, and print its contents: text as it is,
binary contents as a note with their type and size. With --profile NAME the
read goes through the profile's endpoint (/profiles/NAME/mcp), which reads
the resources of the servers the profile selects. --json prints the whole
result as the hub sent it, binary contents (base64) included.`,
		Example: `  mcphub resources read file:///notes/today.md
  mcphub resources read 'db://tables/users' --json
  mcphub resources read --profile docs file:///notes/today.md`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.resourcesRead(cmd.Context(), hubclient.View{Profile: profile}, args[0], asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as the hub sent it")
	cmd.Flags().StringVar(&profile, "profile", "", "read the resource through the profile's endpoint (/profiles/NAME/mcp)")
	cmd.RegisterFlagCompletionFunc("profile", a.completeProfileFlag)
	return cmd
}

// resourcesRead is resources read URI, on v's endpoint.
func (a *app) resourcesRead(ctx context.Context, v hubclient.View, uri string, asJSON bool) error {
	ctx, interrupted, stop := withInterrupt(ctx)
	defer stop()
	s, err := a.openView(ctx, v, nil)
	if err != nil {
		if interrupted() {
			return a.interruptedErr(nil)
		}
		return err
	}
	defer s.Close()
	raw, err := s.Request(ctx, "resources/read", fmt.Appendf(nil, `{"uri":%s}`, jsonrpc.Quote(uri)))
	if err != nil {
		if interrupted() {
			return a.interruptedErr(s)
		}
		if code := hubclient.RPCCode(err); code == hubclient.CodeResourceNotFound || code == jsonrpc.CodeInvalidParams {
			return s.UnknownResource(ctx, uri, err)
		}
		return s.Fail("read "+uri, err)
	}
	if asJSON {
		return printRaw(a.stdout, raw)
	}
	var res mcp.ReadResourceResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("read %s: the hub's result is malformed: %w", uri, err)
	}
	for _, c := range res.Contents {
		if c != nil {
			printResourceContents(a.stdout, c)
		}
	}
	return nil
}
