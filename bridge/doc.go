// Package bridge shares one upstream connection safely among many downstream
// sessions: it remaps request ids and progress tokens, sends cancellation to
// the right upstream id, routes server-to-client requests back to the session
// whose call caused them, and supervises the connection (a remote server
// pinged when silent, restart with backoff, in-flight calls failed and never
// replayed, connection caps, timeouts and size guards). Given a StateStore it also keeps a server's upstream session
// and catalog across hub restarts, so calls in flight can be adopted and
// lists answered before the server reconnects.
//
// The files follow the jobs: bridge.go is the Server and its Config,
// link.go supervises one connection, health.go pings a remote one that
// has gone silent, backoff.go times its retries, calls.go maps ids and
// progress tokens, inbound.go routes what the upstream sends on its own,
// catalog.go keeps the server's lists, adopt.go finishes calls of an
// earlier run, persist.go writes to the StateStore and seams.go holds the
// connection and clock interfaces the rest is written against.
package bridge
