package tokencount_test

import (
	"encoding/json"
	"fmt"
	"os"

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

// A report prints itself as mcphub tokens shows it: the servers' table,
// the clients' caps and the tokenizer it counted with.
func ExampleReport_WriteText() {
	rep := &tokencount.Report{Encoding: "o200k_base", Endpoint: "/mcp", Mode: "full",
		Total:   tokencount.Total{Tools: 3, Tokens: 180},
		Full:    tokencount.Total{Tools: 3, Tokens: 180},
		Servers: []tokencount.ServerCost{{Name: "github", Tools: 2, Tokens: 150}, {Name: "notes", Tools: 1, Tokens: 30}}}
	rep.WriteText(os.Stdout, false)
	// Output:
	// SERVER  TOOLS  TOKENS
	// github      2     150
	// notes       1      30
	// TOTAL       3     180
	//
	// fits every known client's tool cap (Cursor about 40, Windsurf 100, VS Code Copilot 128 per request)
	// counted with o200k_base; Claude and other models count with their own tokenizers, so these are estimates
}
