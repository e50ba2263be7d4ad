package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// ndjsonUpstream is a server of the 2026-07-28 revision only whose tool
// "stream" answers with a newline-delimited application/json body: a
// progress notification, then, once relayed lets it go on, the result.
func ndjsonUpstream(t *testing.T, relayed <-chan struct{}) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m, err := jsonrpc.Decode(body)
		if r.Method != http.MethodPost || err != nil || !m.IsRequest() {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		line := func(msg *jsonrpc.Message) {
			w.Write(append(msg.Encode(), '\n'))
			http.NewResponseController(w).Flush()
		}
		result := `{"resultType":"complete"}`
		switch m.Method {
		case "server/discover":
			result = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"ndjson","version":"1"}},"ttlMs":0,"cacheScope":"private"}`
		case "subscriptions/listen":
			<-r.Context().Done()
			return
		case "tools/list":
			result = `{"resultType":"complete","tools":[{"name":"stream","inputSchema":{"type":"object"}}],"ttlMs":0,"cacheScope":"private"}`
		case "tools/call":
			token, _ := jsonrpc.MetaMember(m.Params, "progressToken")
			if token == nil {
				line(jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "the call came without a progress token")))
				return
			}
			line(jsonrpc.NewNotification("notifications/progress", json.RawMessage(`{"progressToken":`+string(token)+`,"progress":1,"total":2}`)))
			select {
			case <-relayed:
			case <-r.Context().Done():
				return
			}
			line(jsonrpc.NewResponse(m.ID, json.RawMessage(`{"resultType":"complete","content":[{"type":"text","text":"streamed"}]}`)))
			return
		}
		line(jsonrpc.NewResponse(m.ID, json.RawMessage(result)))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// TestNDJSONThroughHub: a stateless upstream that streams a call's answer
// as newline-delimited JSON (a progress line, then the result) reaches a
// 2026-07-28 client and a session-era client alike through /mcp: the
// progress as it comes (the upstream writes the result only once the
// client has it), then the result.
func TestNDJSONThroughHub(t *testing.T) {
	relayed := make(chan struct{}, 1)
	f := startInproc(t, fmt.Sprintf("[servers.nd]\nurl = %q\n", ndjsonUpstream(t, relayed)), hubConfig{})
	for _, era := range []string{jsonrpc.Version20260728, sessionVersion} {
		t.Run(era, func(t *testing.T) {
			progress := make(chan float64, 4)
			opts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				progress <- req.Params.Progress
				select {
				case relayed <- struct{}{}:
				default:
				}
			}}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "ndjson", Version: "0"}, opts).
				Connect(ctx, &mcp.StreamableClientTransport{Endpoint: f.url + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: era})
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer cs.Close()
			params := &mcp.CallToolParams{Name: "nd__stream", Arguments: map[string]any{}}
			params.SetProgressToken("nd-" + era)
			res, err := cs.CallTool(ctx, params)
			if err != nil || res.IsError || len(res.Content) != 1 {
				t.Fatalf("nd__stream: %v %+v", err, res)
			}
			if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "streamed" {
				t.Errorf("nd__stream answered %+v", res.Content[0])
			}
			select {
			case p := <-progress:
				if p != 1 {
					t.Errorf("progress %v, want 1", p)
				}
			default:
				t.Error("no progress reached the client")
			}
			if cs.InitializeResult().ProtocolVersion != era {
				t.Errorf("the client speaks %q", cs.InitializeResult().ProtocolVersion)
			}
		})
	}
}
