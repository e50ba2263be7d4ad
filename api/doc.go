// Package api holds the wire types of the hub's control API: what /readyz,
// /control/sessions, /control/catalog, /control/env and /control/restart
// answer, as JSON. The hub (package hub) builds and serves them; its
// clients (package hubclient, the CLI, a dashboard) decode them, without
// importing the hub.
//
// A field added here is added to every answer and every client at once;
// one renamed or removed breaks `--json` output that scripts read, so
// fields are only ever added. It imports only the standard library.
package api
