package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/mcphub/mcphub/client"
)

// greeter is about the smallest Streamable HTTP MCP server there is: every
// POST carries one JSON-RPC message and a request gets its response as JSON.
// It keeps no session and offers no standalone SSE stream (GET is refused
// with 405), both of which the spec allows.
func greeter(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
			Arguments       struct {
				Name string `json:"name"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if msg.ID == nil {
		// A notification, such as notifications/initialized.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var result string
	switch msg.Method {
	case "initialize":
		// The server agrees to the version the client offers.
		result = fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"greeter","version":"1.0.0"}}`,
			msg.Params.ProtocolVersion)
	case "tools/list":
		result = `{"tools":[{"name":"greet","inputSchema":{"type":"object","properties":{"name":{"type":"string"}}}}]}`
	case "tools/call":
		text, _ := json.Marshal("Hello, " + msg.Params.Arguments.Name + "!")
		result = fmt.Sprintf(`{"content":[{"type":"text","text":%s}]}`, text)
	default:
		// ping, and any other request, gets an empty result.
		result = `{}`
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
}

// A connection to one upstream server: Start connects and runs the MCP
// handshake, Call and ListAll send requests, and Close ends the session.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(greeter))
	defer srv.Close()

	conn := client.New(client.Config{
		Name:      "greeter",
		URL:       srv.URL + "/mcp",
		Transport: client.TransportStreamableHTTP,
	}, nil) // a nil Handler: the server sends nothing on its own
	defer conn.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := conn.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(conn.Initialize().ServerInfo.Name, conn.Transport())

	// ListAll follows nextCursor through every page.
	tools, err := conn.ListAll(ctx, "tools/list")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, raw := range tools {
		var tool struct{ Name string }
		json.Unmarshal(raw, &tool)
		fmt.Println("tool:", tool.Name)
	}

	res, err := conn.Call(ctx, "tools/call", json.RawMessage(`{"name":"greet","arguments":{"name":"Ada"}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(res))

	if err := conn.Close(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// greeter streamable-http
	// tool: greet
	// {"content":[{"type":"text","text":"Hello, Ada!"}]}
}
