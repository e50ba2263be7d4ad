package mcpterm

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// GetPrompt gets the prompt name of v's endpoint with the arguments of
// pairs (key=value, every value a string) and prints its messages, each
// under its role; with asJSON, the result as the hub sent it. A name the
// endpoint does not have is a sentence naming the closest it has.
func (c *Client) GetPrompt(ctx context.Context, v hubclient.View, name string, pairs []string, asJSON bool) error {
	arguments, err := hubclient.PromptArguments(pairs)
	if err != nil {
		return err
	}
	ctx, s, interrupted, end, err := c.session(ctx, v, nil)
	if err != nil {
		return err
	}
	defer end()
	params, err := json.Marshal(struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments,omitempty"`
	}{name, arguments})
	if err != nil {
		return err
	}
	raw, err := s.Request(ctx, "prompts/get", params)
	if err != nil {
		if interrupted() {
			return c.Interrupted(s)
		}
		if hubclient.RPCCode(err) == jsonrpc.CodeInvalidParams {
			if uerr := s.UnknownPrompt(ctx, name); uerr != nil {
				return uerr
			}
		}
		return s.Fail("get prompt "+name, err)
	}
	if asJSON {
		return printRaw(c.Stdout, raw)
	}
	var res mcp.GetPromptResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("get prompt %s: the hub's result is malformed: %w", name, err)
	}
	for _, m := range res.Messages {
		if m == nil {
			continue
		}
		fmt.Fprintf(c.Stdout, "[%s]\n", m.Role)
		if m.Content != nil {
			printContent(c.Stdout, []mcp.Content{m.Content})
		}
	}
	return nil
}

// ReadResource reads the resource uri through v's endpoint and prints its
// contents: text as it is, binary contents as a note with their type and
// size; with asJSON, the result as the hub sent it. A URI no server has is
// a sentence naming the closest resources there are.
func (c *Client) ReadResource(ctx context.Context, v hubclient.View, uri string, asJSON bool) error {
	ctx, s, interrupted, end, err := c.session(ctx, v, nil)
	if err != nil {
		return err
	}
	defer end()
	raw, err := s.Request(ctx, "resources/read", fmt.Appendf(nil, `{"uri":%s}`, jsonrpc.Quote(uri)))
	if err != nil {
		if interrupted() {
			return c.Interrupted(s)
		}
		if code := hubclient.RPCCode(err); code == hubclient.CodeResourceNotFound || code == jsonrpc.CodeInvalidParams {
			return s.UnknownResource(ctx, uri, err)
		}
		return s.Fail("read "+uri, err)
	}
	if asJSON {
		return printRaw(c.Stdout, raw)
	}
	var res mcp.ReadResourceResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("read %s: the hub's result is malformed: %w", uri, err)
	}
	for _, rc := range res.Contents {
		if rc != nil {
			printResourceContents(c.Stdout, rc)
		}
	}
	return nil
}
