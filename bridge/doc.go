// Package bridge shares one upstream connection safely among many downstream
// sessions: it remaps request ids and progress tokens, sends cancellation to
// the right upstream id, routes server-to-client requests back to the session
// whose call caused them, and supervises the connection (restart with backoff,
// in-flight calls failed and never replayed, connection caps, timeouts and
// size guards).
package bridge
