package stdioface_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/stdioface"
)

// A stdio client's initialize goes to the hub's Streamable HTTP endpoint,
// and the hub's answer comes back as one line on the client's stdout. When
// stdin ends, the face deletes the hub session and Relay returns nil.
// (`mcphub stdio` calls Run, which finds or starts the hub and then does
// the same.)
func ExampleRelay() {
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/healthz":
			io.WriteString(w, "ok")
		case r.Method == http.MethodPost:
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			json.NewDecoder(r.Body).Decode(&req)
			if req.Method != "initialize" {
				w.WriteHeader(http.StatusAccepted) // notifications/initialized
				return
			}
			// The face's connection numbers its own initialize.
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Mcp-Session-Id", "s1")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"mcphub","version":"1"}}}`, req.ID)
		case r.Method == http.MethodDelete:
			fmt.Println("hub: session", r.Header.Get("Mcp-Session-Id"), "deleted")
		default:
			w.WriteHeader(http.StatusMethodNotAllowed) // no GET stream
		}
	}))
	defer hub.Close()

	at := hubclient.Target{Listen: strings.TrimPrefix(hub.URL, "http://")}
	var stdout bytes.Buffer
	err := stdioface.Relay(context.Background(), stdioface.Options{
		Find: func(ctx context.Context) (hubclient.Target, error) { return at, stdioface.Probe(ctx, at) },
		Hub:  at,
		Path: "/mcp",
		In:   strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"desktop","version":"1"}}}` + "\n"),
		Out:  &stdout,
	})
	fmt.Println("relay:", err)
	fmt.Print("client: ", stdout.String())
	// Output:
	// hub: session s1 deleted
	// relay: <nil>
	// client: {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"mcphub","version":"1"}}}
}
