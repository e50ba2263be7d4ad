package tokencount_test

import (
	"encoding/json"
	"fmt"

	"github.com/mcphub/mcphub/api"

	"github.com/mcphub/mcphub/internal/tokencount"
)

// Example counts what the tools of a hub's /mcp cost a model, by server,
// from the catalog the hub gave (GET /control/catalog), and says which
// clients' caps the tools exceed.
func Example() {
	enc, ok := tokencount.LookupEncoding("o200k_base")
	if !ok {
		fmt.Println("no such encoding; mcphub offers", tokencount.EncodingNames())
		return
	}
	counter := enc.NewCounter() // decodes the vocabulary: once a run
	add := json.RawMessage(`{"name":"notes__add","description":"Adds a note.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}}`)
	forecast := json.RawMessage(`{"name":"weather__forecast","description":"Returns tomorrow's forecast for a city.","inputSchema":{"type":"object","properties":{"city":{"type":"string"}}}}`)
	rep, err := counter.Report(&api.Catalog{
		Endpoint: "/mcp",
		Mode:     "full",
		Listed:   []json.RawMessage{add, forecast},
		Tools: []api.CatalogTool{
			{Server: "notes", Item: add},
			{Server: "weather", Item: forecast},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range rep.Servers {
		fmt.Printf("%s: %d tool, %d tokens\n", s.Name, s.Tools, s.Tokens)
	}
	fmt.Printf("a client of %s is given %d tools costing %d tokens (%s)\n", rep.Endpoint, rep.Total.Tools, rep.Total.Tokens, rep.Encoding)
	for _, c := range tokencount.ToolCaps {
		fmt.Printf("%s: %s\n", c.Client, c.Wording(true))
	}
	fmt.Println("caps exceeded:", len(rep.Exceeds))
	// Output:
	// weather: 1 tool, 33 tokens
	// notes: 1 tool, 29 tokens
	// a client of /mcp is given 2 tools costing 62 tokens (o200k_base)
	// Cursor: about 40 tools
	// Windsurf: 100 tools
	// VS Code Copilot: 128 tools per request
	// caps exceeded: 0
}
