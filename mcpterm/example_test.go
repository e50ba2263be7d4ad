package mcpterm_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/mcpterm"
)

// exampleHub is an MCP endpoint at /mcp that stands in for a running hub:
// two tools, one of which echoes its arguments.
func exampleHub() *httptest.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "hub", Version: "v1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "notes__search", Description: "Search the notes.", InputSchema: jsonObject},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found: " + string(req.Params.Arguments)}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "github__create_issue", Description: "Open an issue.", InputSchema: jsonObject},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no repository"}}}, nil
		})
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	return httptest.NewServer(mux)
}

var jsonObject = map[string]any{"type": "object"}

// A command fills in a Client with where to print and how to find the hub,
// then lists the hub's tools and calls one: a tool's error is printed on
// Stderr and the command exits 1.
func Example() {
	hub := exampleHub()
	defer hub.Close()
	c := &mcpterm.Client{
		Stdout: os.Stdout, Stderr: os.Stdout,
		Target: func() (hubclient.Target, error) {
			return hubclient.Target{Listen: strings.TrimPrefix(hub.URL, "http://")}, nil
		},
	}
	ctx := context.Background()
	if err := c.ListTools(ctx, hubclient.View{}, false); err != nil {
		fmt.Println(err)
	}
	if err := c.CallTool(ctx, hubclient.View{}, "notes__search", []string{"q=mcp"}, mcpterm.CallOptions{}); err != nil {
		fmt.Println(err)
	}
	err := c.CallTool(ctx, hubclient.View{}, "github__create_issue", nil, mcpterm.CallOptions{})
	fmt.Println(err)
	// Output:
	// NAME                  DESCRIPTION
	// github__create_issue  Open an issue.
	// notes__search         Search the notes.
	// 2 tools
	// found: {"q":"mcp"}
	// no repository
	// exit status 1
}
