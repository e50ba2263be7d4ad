// Command mcphub-idp is the identity provider of mcphub's tests: the example
// OpenID provider of github.com/zitadel/oidc/v3, with the example's storage,
// login form and clients unchanged, configured as a team's provider looks to
// an MCP resource server:
//
//   - every client gets JWT access tokens (RFC 9068), which a resource server
//     checks against the provider's JWKS, where the example hands out opaque
//     ones to some clients;
//   - a token's aud holds the resource indicators (RFC 8707) of the token
//     request, then the client id, so a token asked for one MCP endpoint is
//     refused by another;
//   - a token carries the user's "groups" (from the users file) and the
//     granted "scope", space-separated; clients may ask for any scope.
//
// It listens on 127.0.0.1 only, keeps everything in memory (a restart
// forgets every grant and signs with a new key) and names itself
// http://127.0.0.1:PORT/ (with the trailing slash). Environment, as the
// example reads it:
//
//	PORT          the port (default 9998)
//	REDIRECT_URI  the clients' redirect URIs, comma-separated (default
//	              http://127.0.0.1/callback,http://localhost/callback; the
//	              public client "native" takes a loopback one on any port)
//	USERS_FILE    a JSON object of users by id, as the example reads it, plus
//	              "Groups": [...] per user (default: the example's two users,
//	              with no groups)
//
// Clients: "native" (public, PKCE), "web" and "api" (secret "secret").
// scripts/setup builds it into .cache/bin/mcphub-idp and scripts/idp runs it;
// by hand:
//
//	cd internal/testkit/idp && PORT=9998 USERS_FILE=users.json go run .
//
// It is a module of its own so that mcphub's go.mod does not carry zitadel's
// dependencies.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/zitadel/oidc/v3/example/server/config"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/op"
)

func main() {
	cfg := config.FromEnvVars(&config.Config{
		Port:        "9998",
		RedirectURI: []string{"http://127.0.0.1/callback", "http://localhost/callback"},
	})
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	issuer := "http://127.0.0.1:" + cfg.Port + "/"

	storage.RegisterClients(
		storage.NativeClient("native", cfg.RedirectURI...),
		storage.WebClient("web", "secret", cfg.RedirectURI...),
		storage.WebClient("api", "secret", cfg.RedirectURI...),
	)
	users, groups, err := loadUsers(cfg.UsersFile, issuer)
	if err != nil {
		logger.Error("users file", "error", err)
		os.Exit(1)
	}
	s := &jwtStorage{Storage: storage.NewStorage(users), groups: groups}
	server := &http.Server{
		Addr:    "127.0.0.1:" + cfg.Port,
		Handler: withResource(exampleop.SetupServer(issuer, s, logger, false)),
	}
	logger.Info("listening", "issuer", issuer)
	if err := server.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		logger.Error("server terminated", "error", err)
		os.Exit(1)
	}
}

// loadUsers reads the users file twice: once as the example reads it, once
// for the groups the example's User has no field for.
func loadUsers(file, issuer string) (storage.UserStore, map[string][]string, error) {
	if file == "" {
		return storage.NewUserStore(issuer), nil, nil
	}
	users, err := storage.StoreFromFile(file)
	if err != nil {
		return nil, nil, err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	var extra map[string]struct{ Groups []string }
	if err := json.Unmarshal(data, &extra); err != nil {
		return nil, nil, err
	}
	groups := map[string][]string{}
	for id, u := range extra {
		groups[id] = u.Groups
	}
	return users, groups, nil
}

// resourceKey is the context key of the token request's resource parameters.
type resourceKey struct{}

// withResource puts the token request's resource parameters into its
// context: op.Storage is never shown the request, and the example's auth
// request does not keep the authorization request's resource.
func withResource(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/oauth/token" {
			if err := r.ParseForm(); err == nil && len(r.PostForm["resource"]) > 0 {
				r = r.WithContext(context.WithValue(r.Context(), resourceKey{}, r.PostForm["resource"]))
			}
		}
		next.ServeHTTP(w, r)
	})
}

func resources(ctx context.Context) []string {
	r, _ := ctx.Value(resourceKey{}).([]string)
	return r
}

// jwtStorage is the example's storage with the changes listed at the top.
type jwtStorage struct {
	*storage.Storage
	groups map[string][]string // by user id
}

// jwtClient is one of the example's clients that gets JWT access tokens and
// may ask for any scope (the example allows only its own custom_scope
// besides OpenID's).
type jwtClient struct{ op.Client }

func (jwtClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }
func (jwtClient) IsScopeAllowed(string) bool          { return true }

func (s *jwtStorage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	return jwtClient{c}, nil
}

// audRequest is a code's auth request whose audience is the token request's
// resources, then the client id.
type audRequest struct {
	op.AuthRequest
	resources []string
}

func (r audRequest) GetAudience() []string {
	return append(append([]string{}, r.resources...), r.AuthRequest.GetAudience()...)
}

// audRefresh is a refresh token's request whose audience is the token
// request's resources, then the client id: the resources the token was
// first issued for are not kept.
type audRefresh struct {
	op.RefreshTokenRequest
	resources []string
}

func (r audRefresh) GetAudience() []string {
	return append(append([]string{}, r.resources...), r.GetClientID())
}

func (s *jwtStorage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	r, err := s.Storage.AuthRequestByCode(ctx, code)
	if err != nil || len(resources(ctx)) == 0 {
		return r, err
	}
	return audRequest{r, resources(ctx)}, nil
}

func (s *jwtStorage) TokenRequestByRefreshToken(ctx context.Context, token string) (op.RefreshTokenRequest, error) {
	r, err := s.Storage.TokenRequestByRefreshToken(ctx, token)
	if err != nil || len(resources(ctx)) == 0 {
		return r, err
	}
	return audRefresh{r, resources(ctx)}, nil
}

// unwrap hands the example's storage its own request types, which it
// type-switches on.
func unwrap(r op.TokenRequest) op.TokenRequest {
	switch w := r.(type) {
	case audRequest:
		return w.AuthRequest
	case audRefresh:
		return w.RefreshTokenRequest
	}
	return r
}

func (s *jwtStorage) CreateAccessToken(ctx context.Context, r op.TokenRequest) (string, time.Time, error) {
	return s.Storage.CreateAccessToken(ctx, unwrap(r))
}

func (s *jwtStorage) CreateAccessAndRefreshTokens(ctx context.Context, r op.TokenRequest, current string) (string, string, time.Time, error) {
	return s.Storage.CreateAccessAndRefreshTokens(ctx, unwrap(r), current)
}

// GetPrivateClaimsFromRequest adds groups and scope to the example's claims
// of a JWT access token. (op prefers it to GetPrivateClaimsFromScopes; only
// the request has all the granted scopes.)
func (s *jwtStorage) GetPrivateClaimsFromRequest(ctx context.Context, r op.TokenRequest, restricted []string) (map[string]any, error) {
	claims, err := s.Storage.GetPrivateClaimsFromScopes(ctx, r.GetSubject(), clientID(r), restricted)
	if err != nil {
		return nil, err
	}
	if claims == nil {
		claims = map[string]any{}
	}
	if g := s.groups[r.GetSubject()]; len(g) > 0 {
		claims["groups"] = g
	}
	if sc := r.GetScopes(); len(sc) > 0 {
		claims["scope"] = strings.Join(sc, " ")
	}
	return claims, nil
}

// clientID is the client a token request is for; the two request types say
// it alike, op.TokenRequest does not.
func clientID(r op.TokenRequest) string {
	if c, ok := r.(interface{ GetClientID() string }); ok {
		return c.GetClientID()
	}
	return ""
}
