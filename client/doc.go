// Package client is mcphub as an MCP client of one upstream server, over stdio
// (a child process), Streamable HTTP or the legacy HTTP+SSE transport: JSON-RPC
// correlation, the protocol-era probe, the upstream session id, the background
// notification stream with reconnect and Last-Event-ID, server-to-client
// requests and clean shutdown.
package client
