package demo_test

import (
	"os"
	"strings"

	"github.com/mcphub/mcphub/demo"
)

// Example runs the demo server on an initialize request and a tools/list
// request, as a client sends them over stdio: one JSON-RPC message a line.
// Serve answers requests concurrently, so the answers may come in either
// order; it returns once the input ends and both are answered.
func Example() {
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"example","version":"1"}}}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
`)
	demo.Serve(in, os.Stdout, "1.2.3")
	// Unordered output:
	// {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"prompts":{},"resources":{}},"serverInfo":{"name":"mcphub-demo","version":"1.2.3"},"instructions":"A demo server built into mcphub: try the countdown tool to see progress."}}
	// {"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"echo","description":"Returns the text it is given.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}},{"name":"add","description":"Adds two numbers.","inputSchema":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}},{"name":"countdown","description":"Counts down from n (at most 100), one step every 100 ms, reporting progress.","inputSchema":{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":100}},"required":["n"]}}]}}
}
