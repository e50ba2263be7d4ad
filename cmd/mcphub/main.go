// Command mcphub is a local hub for Model Context Protocol servers: it keeps
// one registry of stdio and remote MCP servers, connects to each of them, and
// serves all their tools, prompts and resources behind one Streamable HTTP
// endpoint. Run `mcphub --help` for the tour.
package main

import (
	"os"
)

func main() {
	tuneRuntime()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
