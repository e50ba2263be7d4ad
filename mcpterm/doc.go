// Package mcpterm is the terminal MCP client of a running mcphub hub: what
// `mcphub tools`, `prompts` and `resources` do once their flags are read.
// It lists tools, prompts and resources (a table with a count line, or the
// items as the hub sent them), calls a tool with arguments typed from
// key=value pairs and a progress line on the terminal, gets a prompt and
// reads a resource, and prints what comes back as a user reads it. It notes
// the servers a list lacks, and turns Ctrl-C into a cancellation on the hub
// and exit status 130.
//
// It owns the flow of those commands and their output; the session itself
// (finding the hub, opening /mcp, a server's or a profile's endpoint,
// failures as sentences) is hubclient's, which the stdio face shares. A
// Client is what a command hands it: where to print, and how to find the
// hub when a command needs it.
//
// It may import hubclient, api (the hub's status), registry (the profiles
// a --profile flag completes), internal packages, go-sdk's mcp (the
// content types of a result), and golang.org/x/term and x/sys (the
// terminal). It never imports hub or bridge: the hub is another process,
// reached through hubclient over HTTP. It never imports cmd, nor cobra: the
// commands' wiring stays in cmd/mcphub.
package mcpterm
