// Package stdioface is mcphub's stdio face: what `mcphub stdio` runs for a
// client that can only start stdio servers (Claude Desktop and the like).
// It speaks MCP as newline-delimited JSON-RPC on the client's stdin and
// stdout and relays everything to a running hub's Streamable HTTP endpoint
// (/mcp, a server's /NAME/mcp or a profile's /profiles/NAME/mcp).
//
// It owns:
//
//   - the session relay (Relay, Options): one client.Conn to the hub at a
//     time, replaced by one that resumes the same hub session whenever
//     the hub restarts, so the client notices nothing; the client's
//     requests keep their ids, the hub's requests (sampling, elicitation,
//     roots) get ids of the face's own, and cancellations pass both ways;
//   - the stateless relay for clients of the 2026-07-28 revision, which
//     open no session: each request is one POST;
//   - the stdio framing: one JSON-RPC message per line, on both sides;
//   - finding the hub that serves a registry and starting `mcphub serve`
//     in the background when none answers (Finder, Probe, Run), with its
//     output in ServeLogName in the data directory.
//
// Run is the whole of `mcphub stdio` after the command has checked its
// flags and loaded the registry; the command passes in what it knows
// (Config): the registry, the data directory, the mcphub executable.
//
// It reaches the hub only over HTTP: through hubclient (the target, its
// token, the run file) and client (the Streamable HTTP connection). It may
// import hubclient, client, registry (to read hub.toml's token again),
// internal packages and x/sys (to detach a hub on Windows). It never
// imports hub, bridge or store: the hub is another process. It never
// imports cmd.
package stdioface
