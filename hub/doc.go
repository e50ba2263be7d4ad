// Package hub is mcphub as an MCP server: the Streamable HTTP endpoints (/mcp,
// the merged view of every server with namespaced names, and /{server}/mcp, one
// server passed through with its own names), downstream sessions and their SSE
// streams with event ids, the Accept/Origin/Host/auth/protocol-version checks,
// the merged catalog, routing of every MCP method, list_changed coalescing and
// applying registry changes.
//
// hub defines the small interfaces it needs (Upstream, SessionStore,
// EventStore, …) with standard-library types only; cmd/mcphub plugs concrete
// implementations into them. It is the only place where errors become JSON-RPC
// codes or HTTP statuses.
package hub
