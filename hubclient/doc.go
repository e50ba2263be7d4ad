// Package hubclient finds a running mcphub hub and talks to it, over HTTP
// only: the client side of the hub's control API and of its MCP endpoints,
// which the CLI commands, the stdio face and (later) a dashboard share, the
// way tailscale's CLI reaches its daemon through client/local.
//
// It owns:
//
//   - finding the hub: the run file a serving hub keeps in its data
//     directory (RunInfo, LockDataDir, LiveRunInfo), the registry's listen
//     address, and which of the two to ask (Locator), as a Target;
//   - the hub's bearer token, as the registry gives it (Token);
//   - the control API: the hub's status, sessions, restarts, environment
//     check and catalog (Target.Status, Sessions, EndSession, Restart, Env,
//     Catalog), with the hub's refusals as sentences (HubError);
//   - the MCP session a terminal client holds on /mcp, a server's own
//     /{server}/mcp or a profile's /profiles/{profile}/mcp (Open,
//     Session): every result handed back as the hub sent it, failures
//     turned into sentences, an interrupted request cancelled on the hub,
//     and tool and prompt arguments typed from key=value pairs
//     (ToolArguments, PromptArguments);
//   - what the CLI reads off the hub and how it words it: status, list and
//     sessions as text (WriteStatus, ServerList, WriteSessions), a
//     catalog's token costs (Target.CountTokens, ProfileCosts), a client's
//     endpoint and the hub that import must not import into itself
//     (Locator.Endpoint, Self, ForImport), and a server's reconnection
//     after a sign-in (Target.ReconnectWithTokens).
//
// What it says is meant to be shown as it is: its errors name the hub's
// address and the mcphub command that helps, and never hold a token or a
// body the hub did not mean for the user.
//
// It may import api (the wire types), registry (hub.toml), client (the MCP
// connection), internal packages and uritemplate (to tell a resource a
// template covers). It never imports hub: the hub is another process,
// reached by HTTP, and what the two share is in api. It never imports cmd.
package hubclient
