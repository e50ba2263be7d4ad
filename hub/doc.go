// Package hub is mcphub as an MCP server: the Streamable HTTP endpoints (/mcp,
// the merged view of every server with namespaced names, and /{server}/mcp, one
// server passed through with its own names), downstream sessions and their SSE
// streams with event ids, the merged catalog, routing of every MCP method,
// list_changed coalescing and applying registry changes.
//
// Hub composes parts that each own one job, one lock and their own tests:
//
//	edge.go, endpoint.go      edge: http.ServeMux routes; Host/Origin/auth,
//	                          body, Accept and version checks; JSON-RPC codes
//	                          and HTTP statuses are chosen here
//	sessions.go, session.go,  sessionSet: live sessions and their caps, their
//	stream.go, reply.go,      streams, JSON/SSE/lazy replies, restore after a
//	lazy.go, restore.go       restart
//	router.go, params.go      router: the method table (method → the params
//	                          members it decodes, once → handler)
//	notify.go                 fanout: list_changed, upstream notifications and
//	                          requests outside a call, log levels
//	servers.go, catalog.go    serverSet: registry in force, upstreams, catalogs
//	persist.go                persister: the Store behind a batching writer
//	                          that holds writes while the store is away
//	cluster.go                a replica of a team hub: forwarding to the
//	                          replica holding a session, taking over the
//	                          sessions (and calls) of one that stopped
//
// hub defines the small interfaces it needs (Upstream, Store, Cluster) with
// standard-library types only; cmd/mcphub plugs concrete implementations into
// them.
package hub
