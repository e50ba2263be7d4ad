package oauth

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Config lets a connection to a remote server sign in with OAuth 2.1
// as the MCP authorization spec describes.
type Config struct {
	// Store keeps the grant between runs; nil keeps it in memory only.
	Store TokenStore
	// Fetch runs the interactive step of a sign-in: it sends the user to
	// the authorization URL and returns the code, state and iss the
	// authorization server redirected to RedirectURL with. nil means the
	// connection never signs in: it uses the stored grant, refreshes it,
	// and a refusal a refresh cannot fix comes back as the server sent it
	// (client reports it as an AuthRequiredError).
	// Fetch must return once its context ends: Close waits for it.
	Fetch auth.AuthorizationCodeFetcher
	// RedirectURL is where the authorization server sends the user back
	// to; required with Fetch.
	RedirectURL string
	// ClientID and ClientSecret name a client registered beforehand with
	// the authorization server; Issuer, when set, is that server's issuer,
	// and the client is then never presented to another one.
	ClientID     string
	ClientSecret string
	Issuer       string
	// ClientMetadataURL is mcphub's client ID metadata document (an https
	// URL with a path), used as the client id where the authorization
	// server supports such documents.
	ClientMetadataURL string
	// Scopes, when set, replace the scopes the server's challenge or
	// metadata name for the first sign-in; a step-up still adds the ones
	// its challenge asks for.
	Scopes []string
	// OnChange is told when a grant is saved or dropped. It must not block.
	OnChange func()
	// OnRefreshFailed is told when the authorization server refused to
	// refresh the token for good (invalid_grant, say): the token is
	// dropped, and the server needs a new sign-in. It must not block.
	OnRefreshFailed func(err error)
}

// Options tie an Authorizer to the connection it serves.
type Options struct {
	// URL is the MCP server's URL: the key its grant is stored under
	// (see CanonicalResource), the one origin its token is sent to, and
	// where discovery starts.
	URL string
	// Config says how the connection signs in.
	Config Config
	// Base carries the connection's requests; the requests to
	// authorization servers use its proxy and TLS settings when it is an
	// *http.Transport. nil means http.DefaultTransport.
	Base http.RoundTripper
	// Logger is told what the Authorizer does (never a secret); nil means
	// slog.Default().
	Logger *slog.Logger
	// Context is the connection's life: when it ends, the refresher stops
	// and a sign-in in progress gives up. nil means until Close.
	Context context.Context
	// Go runs f on a goroutine the connection waits for when it closes,
	// or says why it cannot (it is closing). nil means goroutines of the
	// Authorizer's own, which Close waits for.
	Go func(f func()) error
	// Scrub masks the connection's own secrets (configured header values,
	// the URL's query) in the errors and logs of a sign-in; nil masks
	// only the OAuth secrets.
	Scrub func(string) string
}
