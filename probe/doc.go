// Package probe reaches one MCP server directly, as the hub would but
// without a hub in between: what mcphub probe and mcphub login do.
//
// It owns:
//
//   - turning probe's request (a server named as add names one, the tools
//     to call, a protocol revision, the sign-in settings) into a checked
//     Plan: the client configuration and the calls (request.go);
//   - running a probe: connecting, listing what the server offers
//     (Collect), calling the tools, and answering what the server asks
//     meanwhile (Run, run.go and handler.go), signing in in the browser
//     when the server asks for it, with --save's registry server and store;
//   - the probe's report, as text (Report.WriteText, Call.WriteText) or
//     JSON (Report.WriteJSON), byte for byte what mcphub probe printed
//     when it lived in cmd/mcphub (text.go);
//   - signing in to a registry's remote server for the hub: the sign-in
//     through a tokenless view of the store, so that the stored grant is
//     replaced only by a new one (SignIn), forgetting it (SignOut), with
//     the result login and logout print (Login), which registry server that is
//     (RemoteServer), and the registry's oauth key as the OAuth client's
//     settings (OAuthConfig), which the hub's upstreams use too (login.go).
//
// Telling a running hub about new tokens is the hub client's
// (hubclient.Target.ReconnectWithTokens); flags, help and the commands'
// own lines of output stay in cmd/mcphub.
//
// It may import client (the MCP connection), oauth (the sign-in),
// registry (hub.toml's server entries) and internal packages. It never
// imports hub, bridge, store, hubclient or cmd: a probe is one client of
// one server, and needs no hub running (rooms_test.go holds it to that).
package probe
