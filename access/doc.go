// Package access decides who may use a hub that is shared: it identifies
// the callers that do not carry the hub's own token and says what each may
// reach.
//
//   - API keys (keys.go): made by mcphub keys create, shown once, kept in
//     the store only as a keyed hash under a public id, each limited to its
//     profiles, revocable, expiring; every process on the store refuses a
//     revoked key from its next request.
//   - Sign-in with the team's identity provider (oauth.go): the hub is an
//     OAuth 2.1 protected resource (RFC 9728). A client without a token is
//     told where the hub's metadata is; the metadata names the provider;
//     each access token is checked locally against the provider's keys
//     (go-oidc's remote key set: cached, fetched again for an unknown key
//     id) for signature, issuer, audience and expiry.
//   - Groups (gate.go): [hub.access] maps the values of one claim of a
//     token to the profiles its caller may use.
//
// The Gate is the hub's Access: New → Apply (each registry) → Close. No
// key, token or claim value reaches a log or an error: callers are named
// by key name or by a pseudonym of their subject.
package access
