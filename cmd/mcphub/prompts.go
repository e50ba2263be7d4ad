package main

import (
	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/mcpterm"
)

func init() { commands = append(commands, newPromptsCmd) }

func newPromptsCmd(a *app) *cobra.Command {
	cmd := a.listCmd(&cobra.Command{
		Use:   "prompts [ls [SERVER]]",
		Short: "List the running hub's prompts (prompts ls [SERVER]) or get one (prompts get NAME)",
		Long: `List the prompts of the running hub, or get one, as an MCP client of the hub
(found as "mcphub status" finds it, with its bearer token when auth is on).

Without SERVER, the list comes from the merged endpoint /mcp, under the
namespaced names (github__summarize_pr) that "prompts get" takes; with
SERVER, from that server's own endpoint /SERVER/mcp, under its own names;
with --profile NAME, from the profile's endpoint /profiles/NAME/mcp, under
the names the profile gives them, which "prompts get --profile NAME" takes.`,
		Example: `  mcphub prompts ls
  mcphub prompts ls github
  mcphub prompts ls --profile coding
  mcphub prompts get github__summarize_pr owner=me repo=hub number=42`,
		Args: cobra.NoArgs,
	}, "the same as prompts ls --json", (*mcpterm.Client).ListPrompts)
	cmd.AddCommand(newPromptsLsCmd(a), newPromptsGetCmd(a))
	return cmd
}

func newPromptsLsCmd(a *app) *cobra.Command {
	return a.listCmd(&cobra.Command{
		Use:   "ls [SERVER]",
		Short: "List the running hub's prompts, or one server's under its own names",
		Long: `List the running hub's prompts: name, arguments (optional ones in
brackets) and the first line of the description, sorted by name. Without
SERVER these are the merged endpoint's namespaced names (/mcp), the ones
"mcphub prompts get" takes; with SERVER, the prompts of that server's own
endpoint (/SERVER/mcp) under the server's own names; with --profile NAME,
the prompts of the profile's endpoint (/profiles/NAME/mcp), under the
names "mcphub prompts get --profile NAME" takes.

--json prints the prompts array as the hub sent it.`,
		Example: `  mcphub prompts ls
  mcphub prompts ls github --json
  mcphub prompts ls --profile coding`,
		Args: cobra.MaximumNArgs(1),
	}, "print the prompts array as the hub sent it", (*mcpterm.Client).ListPrompts)
}

func newPromptsGetCmd(a *app) *cobra.Command {
	var asJSON bool
	var profile string
	cmd := &cobra.Command{
		Use:   "get NAME [key=value ...]",
		Short: "Get a prompt of the running hub and print its messages",
		Long: `Get the prompt NAME of the running hub's merged endpoint (/mcp), by its
namespaced name as "mcphub prompts ls" lists it, with its arguments as
key=value pairs (prompt arguments are strings: every value is taken as it
is), and print its messages, each under its role. With --profile NAME the
prompt comes from the profile's endpoint (/profiles/NAME/mcp), by the name
"mcphub prompts ls --profile NAME" lists. --json prints the whole result as
the hub sent it.`,
		Example: `  mcphub prompts get github__summarize_pr owner=me repo=hub number=42
  mcphub prompts get notes__daily --json
  mcphub prompts get --profile coding summarize_pr number=42`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return exitCode(a.mcp().GetPrompt(cmd.Context(), hubclient.View{Profile: profile}, args[0], args[1:], asJSON))
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as the hub sent it")
	cmd.Flags().StringVar(&profile, "profile", "", "get the prompt from the profile's endpoint (/profiles/NAME/mcp)")
	cmd.RegisterFlagCompletionFunc("profile", a.completeProfileFlag)
	return cmd
}
