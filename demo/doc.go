// Package demo is mcphub's built-in demo MCP server, which the default
// registry runs (mcphub demo) so that a fresh hub has something real to
// serve: the tools echo, add and countdown (which reports progress and can
// be cancelled), the prompt greet and the resource demo://readme, over
// newline-delimited JSON-RPC on any reader and writer.
//
// It imports only the standard library and internal/jsonrpc; it never
// imports the hub, the bridge, the client or cmd/, as it is an upstream
// server like any other, reached only through its stdio.
package demo
