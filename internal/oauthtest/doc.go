// Package oauthtest is a fake OAuth 2.1 authorization server for tests,
// and a fake MCP server (a protected resource) that checks its tokens,
// both on loopback.
//
// The tests of the oauth room (the authorization client itself) and of
// the client room (a connection that signs in through it) drive the same
// scripted servers: AuthServer serves RFC 8414 metadata, dynamic client
// registration, the authorization endpoint (which redirects at once, as a
// user who consents would) and the token endpoint (code exchange with
// PKCE and RFC 8707 resource, refresh with rotation), and can be told to
// refuse or fail; Resource answers 401 with a resource_metadata challenge
// (RFC 9728) until a request carries a token its authorization server
// issued, and records the Bearer of every request. Headless completes the
// browser step the way a headless client does, and MemStore keeps grants
// in memory.
//
// It is test support only: no production package imports it. It imports
// the standard library, plus go-sdk's auth package for the type Headless
// returns; never the oauth room (whose own tests import this package),
// nor client/, hub/ or cmd/.
package oauthtest
