package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The reference upstream: the fastest honest MCP server, built on the
// official Go SDK, with an echo tool (the call-latency workload) and a tool
// that streams progress (the notification workload).

type echoIn struct {
	Text string `json:"text"`
}

type progressIn struct {
	N int `json:"n"`
}

func newReferenceServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcphub-bench-upstream", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Returns its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "progress", Description: "Sends n progress notifications as fast as it can."},
		func(ctx context.Context, req *mcp.CallToolRequest, in progressIn) (*mcp.CallToolResult, any, error) {
			tok := req.Params.GetProgressToken()
			for i := 1; i <= in.N && tok != nil; i++ {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: float64(in.N)}); err != nil {
					return nil, nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.N)}}}, nil, nil
		})
	return s
}

// runUpstream serves the reference server over stdio, or over Streamable
// HTTP at addr.
func runUpstream(addr string) error {
	s := newReferenceServer()
	if addr == "" {
		return s.Run(context.Background(), &mcp.StdioTransport{})
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	log.SetOutput(os.Stderr)
	return http.ListenAndServe(addr, h)
}
