package mcpterm

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// progressToken is the progress token of the CLI's one call per session.
const progressToken = "mcphub-cli"

// CallOptions are how CallTool takes a tool's arguments and prints its
// result.
type CallOptions struct {
	// Args is the arguments as one JSON object (--args), "" for none; the
	// key=value pairs add to it.
	Args string
	// JSON prints the whole result as the hub sent it,
	// structuredContent included.
	JSON bool
}

// CallTool calls the tool name on v's endpoint with the arguments of o.Args
// and pairs, each pair's value typed as the tool's input schema types it,
// and prints the result: its content as a user reads it, or its structured
// content as JSON. A result that is an error is printed on Stderr and
// exits 1 (ExitError). On a terminal the progress the tool reports shows
// on Stderr as one line rewritten in place; Ctrl-C cancels the call on the
// hub and exits 130.
func (c *Client) CallTool(ctx context.Context, v hubclient.View, name string, pairs []string, o CallOptions) error {
	// Refuse malformed arguments before going to the hub.
	if _, err := hubclient.ToolArguments(o.Args, pairs, nil); err != nil {
		return err
	}
	prog := c.progressLine()
	ctx, s, interrupted, end, err := c.session(ctx, v, progressHandler{prog: prog})
	if err != nil {
		return err
	}
	defer end()
	var schema json.RawMessage
	if len(pairs) > 0 {
		// The pairs' values are read as the tool's input schema types them.
		tool, err := s.FindTool(ctx, name)
		if err != nil {
			if interrupted() {
				return c.Interrupted(s)
			}
			c.noteMissing(ctx, s, "tools")
			return err
		}
		schema = tool.InputSchema
	}
	arguments, err := hubclient.ToolArguments(o.Args, pairs, schema)
	if err != nil {
		return err
	}
	params := fmt.Appendf(nil, `{"name":%s`, jsonrpc.Quote(name))
	if arguments != nil {
		params = fmt.Appendf(params, `,"arguments":%s`, arguments)
	}
	params = fmt.Appendf(params, `,"_meta":{"progressToken":%s}}`, jsonrpc.Quote(progressToken))
	raw, err := s.Request(ctx, "tools/call", params)
	prog.clear()
	if err != nil {
		if interrupted() {
			return c.Interrupted(s)
		}
		if hubclient.RPCCode(err) == jsonrpc.CodeInvalidParams {
			if uerr := s.UnknownTool(ctx, name); uerr != nil {
				// The tool may be missing because its server is down
				// or waits for a sign-in: say which, and what to run.
				c.noteMissing(ctx, s, "tools")
				return uerr
			}
		}
		return s.Fail("call "+name, err)
	}
	return c.printCallResult(name, raw, o.JSON)
}

// printCallResult prints the result raw of a call of name (see CallTool).
func (c *Client) printCallResult(name string, raw json.RawMessage, asJSON bool) error {
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("call %s: the hub's result is malformed: %w", name, err)
	}
	if asJSON {
		if err := printRaw(c.Stdout, raw); err != nil {
			return err
		}
		if res.IsError {
			return ExitError{Code: 1}
		}
		return nil
	}
	out := c.Stdout
	if res.IsError {
		out = c.Stderr
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
		return ExitError{Code: 1}
	}
	return nil
}

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
	if json.Unmarshal(m.Params, &p) == nil && p.ProgressToken == progressToken {
		h.prog.show(&p)
	}
}

func (progressHandler) HandleRequest(_ context.Context, m *jsonrpc.Message, _ json.RawMessage) (json.RawMessage, error) {
	return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "mcphub tools call does not answer %s", m.Method)
}
