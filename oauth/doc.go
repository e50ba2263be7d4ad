// Package oauth is mcphub's MCP authorization client (OAuth 2.1, as the
// MCP specification's authorization chapter describes it): what lets a
// connection to a remote server carry an access token, keep it fresh and
// get a new one when the server asks.
//
// Discovery (protected resource metadata, then the authorization
// server's), registration (a pre-registered client, a client ID metadata
// document, or dynamic registration), the authorization code flow with
// PKCE and the code exchange are go-sdk's auth.AuthorizationCodeHandler.
// This package keeps what go-sdk leaves to its user:
//
//   - the Grant, stored under the server's CanonicalResource in a
//     TokenStore (the OS keychain in mcphub, see internal/keychain), and
//     the registration it holds, presented again only to the same
//     authorization server (grant.go, persist.go);
//   - the refresher, which renews the token ahead of its expiry for the
//     connection's life and drops it when the authorization server
//     refuses for good (refresh.go);
//   - the Authorizer's Transport, which attaches the token to the server's
//     origin only, and answers a refusal that asks for sign-in (401, or
//     403 insufficient_scope) by adopting a newer stored token or signing
//     in, once for all the requests refused meanwhile (transport.go,
//     signin.go);
//   - the guard on the requests to authorization servers, whose addresses
//     the MCP server chooses (dial.go), and what they teach go-sdk does
//     not tell (recorder.go);
//   - the browser side of a sign-in: the one-shot Loopback listener the
//     authorization server redirects to, and the OS browser opener
//     (loopback.go, browser*.go).
//
// client/ builds an Authorizer for each remote server with OAuth
// configured and sends the connection's requests through its Transport;
// cmd/mcphub's login and probe commands give it a Loopback to sign in
// with, the hub a Config without one (it refreshes, and reports that
// sign-in is needed).
//
// It imports x/oauth2, go-sdk's auth and oauthex, x/sync/singleflight and
// mcphub's internal packages; it never imports hub/, bridge/, client/ or
// cmd/ (rooms_test.go holds it to that).
package oauth
