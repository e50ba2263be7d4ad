package main

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkToolCall measures one tools/call end to end with the Go SDK
// client, directly against an SDK server and through an in-process hub to
// the same server (with and without the store), so the hub's own cost on
// the routing hot path shows as the difference.
func BenchmarkToolCall(b *testing.B) {
	up := startUpstream(b, "up", upstreamOpts{})
	run := func(b *testing.B, url string) {
		cs := connectSDK(b, url, sdkOpts{})
		p := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if _, err := cs.CallTool(context.Background(), p); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("direct", func(b *testing.B) { run(b, up.url) })
	for _, mode := range []struct {
		name  string
		store storeMode
	}{{"hub/store=off", noStore}, {"hub/store=on", fullStore}} {
		b.Run(mode.name, func(b *testing.B) {
			// The HTTP server serve uses, logging only warnings.
			h := startInproc(b, remoteServer("up", up.url, `prefix = ""`),
				hubConfig{store: mode.store, server: true, warnOnly: true, connect: 10 * time.Second})
			run(b, h.url+"/mcp")
		})
	}
}
