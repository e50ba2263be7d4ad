package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// goldenNotesServer is the golden hub's "notes" server: tools with text
// output, progress and a tool error, a resource, a resource template and
// prompts, all fixed so that the output of every command is too.
func goldenNotesServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1.0.0"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	type (
		noteIn struct {
			Title string `json:"title"`
			Body  string `json:"body"`
		}
		countIn struct {
			N int `json:"n"`
		}
		searchIn struct {
			Words string `json:"words"`
		}
		none struct{}
	)
	mcp.AddTool(s, &mcp.Tool{Name: "add_note", Description: "Adds a note with a title and a body.\nThe body may be Markdown; it is kept as written."},
		func(_ context.Context, _ *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: fmt.Sprintf("added note %q", in.Title)},
				&mcp.TextContent{Text: fmt.Sprintf("%d characters\n", len(in.Body))},
			}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "count", Description: "Counts to n, reporting progress at each step."},
		func(ctx context.Context, req *mcp.CallToolRequest, in countIn) (*mcp.CallToolResult, any, error) {
			tok := req.Params.GetProgressToken()
			for i := 1; i <= in.N; i++ {
				if tok != nil {
					req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok,
						Progress: float64(i), Total: float64(in.N), Message: fmt.Sprintf("step %d", i)})
				}
			}
			return textResult(fmt.Sprintf("counted to %d", in.N)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "search", Description: "Searches every note for the words given, in titles and bodies alike, and ranks the notes by how often and how close together the words appear."},
		func(_ context.Context, _ *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, any, error) {
			return textResult("no note has " + in.Words), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails, with a tool error."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the notes store is read-only"}}}, nil, nil
		})
	s.AddResource(&mcp.Resource{URI: "notes://index", Name: "index", Description: "Every note's title, one a line.", MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "notes://index", MIMEType: "text/plain", Text: "groceries\nideas\n"}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "notes://note/{title}", Name: "note", Description: "One note, by its title."},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			if title := strings.TrimPrefix(req.Params.URI, "notes://note/"); title == "missing" {
				return nil, &sdkjsonrpc.Error{Code: -32002, Message: fmt.Sprintf("no note is titled %q", title)}
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: "# a note"}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "summarize", Description: "Summarize one note.\nThe style defaults to plain.",
		Arguments: []*mcp.PromptArgument{{Name: "title", Required: true}, {Name: "style"}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "Summarize the note " + req.Params.Arguments["title"] + "."}},
			}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "daily", Description: "Plan the day from the open notes."},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Plan my day."}}}}, nil
		})
	return s
}

// goldenWeatherServer is the golden hub's second server: one tool.
func goldenWeatherServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1.0.0"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	type cityIn struct {
		City string `json:"city" jsonschema:"the city, in English"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "forecast", Title: "Forecast", Description: "Returns tomorrow's forecast for a city.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in cityIn) (*mcp.CallToolResult, any, error) {
			return textResult(in.City + ": sunny, 21°C"), nil, nil
		})
	return s
}

// goldenToolsHub is a hub in this process over the notes and weather
// servers, and the registry text that points the CLI at it.
func goldenToolsHub(t *testing.T) (addr, registryText string) {
	t.Helper()
	notes := startUpstream(t, "notes", upstreamOpts{server: goldenNotesServer()})
	weather := startUpstream(t, "weather", upstreamOpts{server: goldenWeatherServer()})
	servers := remoteServer("notes", notes.url, "") + remoteServer("weather", weather.url, "")
	h := startInproc(t, servers, hubConfig{})
	waitListed(t, h, "", "notes", "weather")
	addr = strings.TrimPrefix(h.url, "http://")
	return addr, fmt.Sprintf("[hub]\nlisten = %q\n\n%s", addr, servers)
}

// TestGoldenToolsResourcesPrompts runs the tools, resources and prompts
// commands against a hub in this process, as TestGoldenCLI runs the others,
// and compares what a user sees with testdata/golden/<case>.txt (-update
// rewrites them).
func TestGoldenToolsResourcesPrompts(t *testing.T) {
	addr, reg := goldenToolsHub(t)
	withHub := func(t *testing.T, e *goldenEnv) {
		e.addPort(addr)
		e.writeRegistry(t, reg)
	}
	cases := []goldenCase{
		{name: "tools-help", args: []string{"tools", "--help"}},
		{name: "tools-ls", args: []string{"tools", "ls"}, setup: withHub},
		{name: "tools-ls-server", args: []string{"tools", "ls", "notes"}, setup: withHub},
		{name: "tools-ls-json", args: []string{"tools", "ls", "weather", "--json"}, setup: withHub},
		{name: "tools-ls-unknown-server", args: []string{"tools", "ls", "github"}, setup: withHub},
		{name: "tools-ls-no-hub", args: []string{"tools", "ls"}, setup: func(t *testing.T, e *goldenEnv) {
			e.writeRegistry(t, fmt.Sprintf("[hub]\nlisten = %q\n", e.closedAddr(t)))
		}},
		{name: "tools-call-help", args: []string{"tools", "call", "--help"}},
		{name: "tools-call", args: []string{"tools", "call", "notes__add_note", "title=groceries", "body=milk, eggs"}, setup: withHub},
		{name: "tools-call-string-arg", args: []string{"tools", "call", "notes__search", "words=1e3"}, setup: withHub},
		{name: "tools-call-bad-arg", args: []string{"tools", "call", "notes__count", "n=three"}, setup: withHub},
		{name: "tools-call-progress", args: []string{"tools", "call", "notes__count", "n=3"}, setup: withHub},
		{name: "tools-call-args", args: []string{"tools", "call", "weather__forecast", "--args", `{"city": "Paris"}`}, setup: withHub},
		{name: "tools-call-error", args: []string{"tools", "call", "notes__fail"}, setup: withHub},
		{name: "tools-call-unknown", args: []string{"tools", "call", "nope"}, setup: withHub},
		{name: "tools-call-unknown-close", args: []string{"tools", "call", "add_note", "title=x"}, setup: withHub},
		{name: "resources-ls", args: []string{"resources", "ls"}, setup: withHub},
		{name: "resources-read", args: []string{"resources", "read", "notes://index"}, setup: withHub},
		{name: "resources-read-unknown", args: []string{"resources", "read", "note://index"}, setup: withHub},
		{name: "resources-read-template", args: []string{"resources", "read", "notes://note/missing"}, setup: withHub},
		{name: "resources-read-template-scheme", args: []string{"resources", "read", "notes://indx"}, setup: withHub},
		{name: "prompts-ls", args: []string{"prompts", "ls"}, setup: withHub},
		{name: "prompts-get", args: []string{"prompts", "get", "notes__summarize", "title=groceries"}, setup: withHub},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := goldenNewEnv(t)
			if tc.setup != nil {
				tc.setup(t, e)
			}
			goldenCheck(t, tc.name, goldenRun(e, tc.args))
		})
	}
}
