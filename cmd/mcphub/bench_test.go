package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/hub"
	"github.com/mcphub/mcphub/registry"
	"github.com/mcphub/mcphub/store"
)

// BenchmarkToolCall measures one tools/call end to end with the Go SDK
// client, directly against an SDK server and through an in-process hub to
// the same server (with and without the store), so the hub's own cost on
// the routing hot path shows as the difference.
func BenchmarkToolCall(b *testing.B) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer up.Close()

	run := func(b *testing.B, url, tool string) {
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		p := &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "hello"}}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if _, err := cs.CallTool(context.Background(), p); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("direct", func(b *testing.B) { run(b, up.URL, "echo") })
	for _, withStore := range []bool{false, true} {
		name := "hub/store=off"
		if withStore {
			name = "hub/store=on"
		}
		b.Run(name, func(b *testing.B) {
			reg, err := registry.Parse("", []byte("[servers.up]\nurl = \""+up.URL+"\"\ntransport = \"streamable-http\"\nprefix = \"\"\n"), nil)
			if err != nil {
				b.Fatal(err)
			}
			log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
			opts := hub.Options{Registry: reg, NewUpstream: newUpstream(log), Version: "bench", Logger: log}
			if withStore {
				db, err := store.Open(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				opts.Store = hubStore{db}
			}
			h := hub.New(opts)
			if err := h.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			ts := httptest.NewUnstartedServer(h)
			ts.Config = hub.NewServer(h, log) // the HTTP server serve uses
			ts.Start()
			defer ts.Close()
			deadline := time.Now().Add(10 * time.Second)
			for h.Status().Servers[0].State != hub.StateConnected && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			run(b, ts.URL+"/mcp", "echo")
		})
	}
}
