package main

import (
	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/mcpterm"
)

func init() { commands = append(commands, newToolsCmd) }

const toolsLong = `List the tools of the running hub, or call one, as an MCP client of the
hub (found as "mcphub status" finds it, with its bearer token when auth is on).

Without SERVER, the list comes from the merged endpoint /mcp: every server's
tools under their namespaced names (github__create_issue), the names every
client of the hub calls them by, and the names "tools call" takes. With
SERVER it comes from that server's own endpoint /SERVER/mcp, under the
server's own names (create_issue): that endpoint is what the hub has from
the server itself, whatever its prefix and even for a tool whose name clashes
in the merged view, and what a client pointed at /SERVER/mcp sees. With
--profile NAME it comes from the profile's endpoint /profiles/NAME/mcp, as a
client pointed there sees it: a profile in search mode lists its three
search tools (search_tools, describe_tool, call_tool), and tools call
--profile NAME still calls the profile's tools by name.

--json prints the tools array (name, title, description, inputSchema,
annotations ...) as the hub sent it.`

const toolsExample = `  mcphub tools                   # every tool the hub serves, by namespaced name
  mcphub tools ls github         # github's tools, under their own names
  mcphub tools ls --json         # the tools with their input schemas
  mcphub tools ls --profile coding
  mcphub tools call github__create_issue owner=me repo=hub title="It broke"`

func newToolsCmd(a *app) *cobra.Command {
	cmd := a.listCmd(&cobra.Command{
		Use:     "tools [ls [SERVER]]",
		Short:   "List the running hub's tools (tools ls [SERVER]) or call one (tools call NAME)",
		Long:    toolsLong,
		Example: toolsExample,
		Args:    cobra.NoArgs,
	}, "print the tools array as the hub sent it", (*mcpterm.Client).ListTools)
	cmd.AddCommand(newToolsLsCmd(a), newToolsCallCmd(a))
	return cmd
}

func newToolsLsCmd(a *app) *cobra.Command {
	return a.listCmd(&cobra.Command{
		Use:   "ls [SERVER]",
		Short: "List the running hub's tools, or one server's under its own names",
		Long: `List the running hub's tools: name and the first line of the description,
sorted by name. Without SERVER these are the merged endpoint's namespaced
names (/mcp), the ones "mcphub tools call" takes; with SERVER, the tools of
that server's own endpoint (/SERVER/mcp) under the server's own names; with
--profile NAME, the tools of the profile's endpoint (/profiles/NAME/mcp),
which in search mode are its three search tools.`,
		Example: `  mcphub tools ls                # github__create_issue, fs__read_file, ...
  mcphub tools ls github         # create_issue, ... as /github/mcp lists them
  mcphub tools ls --profile web  # what a client of /profiles/web/mcp sees
  mcphub tools ls --json         # the tools array as the hub sent it`,
		Args: cobra.MaximumNArgs(1),
	}, "print the tools array as the hub sent it", (*mcpterm.Client).ListTools)
}

func newToolsCallCmd(a *app) *cobra.Command {
	var o mcpterm.CallOptions
	var profile string
	cmd := &cobra.Command{
		Use:   "call NAME [key=value ...]",
		Short: "Call a tool of the running hub and print its result",
		Long: `Call the tool NAME of the running hub's merged endpoint (/mcp), by its
namespaced name as "mcphub tools ls" lists it, and print the result: text as
it is, images and audio as a note with their type and size, resource links
by their URI, embedded resources as their text; a result with only
structured content prints that as JSON. A result that is an error (isError)
is printed on stderr and exits 1. Ctrl-C (or SIGTERM) cancels the call on
the hub and the server, and exits 130. With --profile NAME the call goes to
the profile's endpoint (/profiles/NAME/mcp), by the name the profile gives
the tool; a profile in search mode serves its tools by name too.

Arguments come as key=value pairs, each key given once, and each value is
read as the tool's input schema types that argument: a string argument
takes it exactly as typed (zip=01234 and sha=1234567 stay text); a number,
integer, boolean, object or array argument takes it as JSON (count=3,
force=true, tags='["a","b"]'), and a value that is not one is refused, such
as "count must be an integer, got abc", unless it is in JSON quotes, which
sends that string (count='"3"' sends "3"). An argument the schema does not
declare is taken as JSON when it is a JSON number, string, true, false,
null, object or array, and as a string otherwise. Or give the arguments as
one JSON object with --args, sent as it is; pairs add to it.

On a terminal, the progress the tool reports is shown on stderr as one line
that updates in place. --json prints the whole result as the hub sent it,
structuredContent included.`,
		Example: `  mcphub tools call github__create_issue owner=me repo=hub title="It broke"
  mcphub tools call fs__read_file --args '{"path": "/etc/hosts"}'
  mcphub tools call search__query q=mcp limit=5 filters='{"lang": "go"}'
  mcphub tools call weather__forecast city=Paris --json
  mcphub tools call --profile coding new_issue title="It broke"`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return exitCode(a.mcp().CallTool(cmd.Context(), hubclient.View{Profile: profile}, args[0], args[1:], o))
		},
	}
	cmd.Flags().StringVar(&o.Args, "args", "", `the arguments as one JSON object, such as '{"path": "/tmp"}'`)
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the result as the hub sent it, structuredContent included")
	cmd.Flags().StringVar(&profile, "profile", "", "call the tool on the profile's endpoint (/profiles/NAME/mcp)")
	cmd.RegisterFlagCompletionFunc("profile", a.completeProfileFlag)
	return cmd
}
