package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/termtext"
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
	}, "print the tools array as the hub sent it", a.toolsList)
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
	}, "print the tools array as the hub sent it", a.toolsList)
}

// toolsList is tools ls: the tools of the merged endpoint, of a server's
// or of a profile's.
func (a *app) toolsList(ctx context.Context, v hubclient.View, asJSON bool) error {
	return listOf(ctx, a, v, asJSON, lister[hubclient.Tool]{
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

// toolCallOptions are the flags of tools call.
type toolCallOptions struct {
	args    string
	asJSON  bool
	profile string
}

func newToolsCallCmd(a *app) *cobra.Command {
	var o toolCallOptions
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
			return a.toolsCall(cmd.Context(), args[0], args[1:], o)
		},
	}
	cmd.Flags().StringVar(&o.args, "args", "", `the arguments as one JSON object, such as '{"path": "/tmp"}'`)
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the result as the hub sent it, structuredContent included")
	cmd.Flags().StringVar(&o.profile, "profile", "", "call the tool on the profile's endpoint (/profiles/NAME/mcp)")
	cmd.RegisterFlagCompletionFunc("profile", a.completeProfileFlag)
	return cmd
}

// cliProgressToken is the progress token of the CLI's one call per session.
const cliProgressToken = "mcphub-cli"

// virtualTerminal turns on, where that is needed (Windows), the terminal's
// processing of the escape sequences the progress line uses, and reports
// whether it has it. It is a variable so that a test can stand in for a
// terminal without it.
var virtualTerminal = enableVirtualTerminal

// progressHandler shows on prog the progress the hub reports for the
// CLI's call.
type progressHandler struct {
	prog *progressLine
}

func (h progressHandler) HandleNotification(m *jsonrpc.Message, _ json.RawMessage) {
	if m.Method != "notifications/progress" {
		return
	}
	var p mcp.ProgressNotificationParams
	if json.Unmarshal(m.Params, &p) == nil && p.ProgressToken == cliProgressToken {
		h.prog.show(&p)
	}
}

func (progressHandler) HandleRequest(_ context.Context, m *jsonrpc.Message, _ json.RawMessage) (json.RawMessage, error) {
	return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "mcphub tools call does not answer %s", m.Method)
}

// toolsCall is tools call NAME.
func (a *app) toolsCall(ctx context.Context, name string, pairs []string, o toolCallOptions) error {
	// Refuse malformed arguments before going to the hub.
	if _, err := hubclient.ToolArguments(o.args, pairs, nil); err != nil {
		return err
	}
	ctx, interrupted, stop := withInterrupt(ctx)
	defer stop()
	prog := &progressLine{w: a.stderr, width: terminalWidth(a.stderr)}
	prog.on = isTerminal(a.stderr) && virtualTerminal(a.stderr)
	s, err := a.openView(ctx, hubclient.View{Profile: o.profile}, progressHandler{prog: prog})
	if err != nil {
		if interrupted() {
			return a.interruptedErr(nil)
		}
		return err
	}
	defer s.Close()
	var schema json.RawMessage
	if len(pairs) > 0 {
		// The pairs' values are read as the tool's input schema types them.
		tool, err := s.FindTool(ctx, name)
		if err != nil {
			if interrupted() {
				return a.interruptedErr(s)
			}
			a.noteMissing(ctx, s, "tools")
			return err
		}
		schema = tool.InputSchema
	}
	arguments, err := hubclient.ToolArguments(o.args, pairs, schema)
	if err != nil {
		return err
	}
	params := fmt.Appendf(nil, `{"name":%s`, jsonrpc.Quote(name))
	if arguments != nil {
		params = fmt.Appendf(params, `,"arguments":%s`, arguments)
	}
	params = fmt.Appendf(params, `,"_meta":{"progressToken":%s}}`, jsonrpc.Quote(cliProgressToken))
	raw, err := s.Request(ctx, "tools/call", params)
	prog.clear()
	if err != nil {
		if interrupted() {
			return a.interruptedErr(s)
		}
		if hubclient.RPCCode(err) == jsonrpc.CodeInvalidParams {
			if uerr := s.UnknownTool(ctx, name); uerr != nil {
				// The tool may be missing because its server is down
				// or waits for a sign-in: say which, and what to run.
				a.noteMissing(ctx, s, "tools")
				return uerr
			}
		}
		return s.Fail("call "+name, err)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("call %s: the hub's result is malformed: %w", name, err)
	}
	if o.asJSON {
		if err := printRaw(a.stdout, raw); err != nil {
			return err
		}
		if res.IsError {
			return exitError{code: 1}
		}
		return nil
	}
	out := a.stdout
	if res.IsError {
		out = a.stderr
	}
	structured, hasStructured := jsonrpc.Member(raw, "structuredContent")
	switch {
	case len(res.Content) > 0:
		printContent(out, res.Content)
	case hasStructured && string(structured) != "null":
		if err := printRaw(out, structured); err != nil {
			return err
		}
	case res.IsError:
		return fmt.Errorf("%s reported an error without a message", name)
	}
	if res.IsError {
		return exitError{code: 1}
	}
	return nil
}

// isTerminal reports whether w is a terminal. It is a variable so that a
// test can stand in for one.
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// terminalWidth is w's width in columns when it is a terminal, else 80.
func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 0 {
			return width
		}
	}
	return 80
}
