package main

import (
	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/mcpterm"
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
	}, "the same as resources ls --json", (*mcpterm.Client).ListResources)
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
	}, "print the resources and templates as the hub sent them", (*mcpterm.Client).ListResources)
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
			return exitCode(a.mcp().ReadResource(cmd.Context(), hubclient.View{Profile: profile}, args[0], asJSON))
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as the hub sent it")
	cmd.Flags().StringVar(&profile, "profile", "", "read the resource through the profile's endpoint (/profiles/NAME/mcp)")
	cmd.RegisterFlagCompletionFunc("profile", a.completeProfileFlag)
	return cmd
}
