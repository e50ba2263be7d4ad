package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mcphub/mcphub/registry"
)

// Caller is who sends a request, as the edge identified it.
type Caller struct {
	// ID names the caller in logs and messages: "token" (the hub's
	// token), "key:NAME" (an API key), "user:…" (a pseudonym of a
	// signed-in user), "replica" (another replica of a team hub), "" with
	// auth off. Never a secret or a claim's value.
	ID string
	// Principal, when set, is what binds the sessions the caller opens
	// and draws from its rate bucket, in place of ID: one that no other
	// caller is ever given, such as a key's id where a new key may take a
	// revoked one's name.
	Principal string
	// Limited callers reach only Profiles' endpoints (see permit); the
	// others reach every endpoint.
	Limited  bool
	Profiles []string
	// Rate and ConcurrentCalls are the caller's own limits (an API key's);
	// zero for the registry's [hub.limits].
	Rate            registry.Rate
	ConcurrentCalls int
}

// SlotKeeper counts each caller's tool calls in progress across a team
// hub's replicas (the store's cluster implements it); a hub alone counts
// its own.
type SlotKeeper interface {
	// AcquireSlot takes one of subject's max slots; ok is false when all
	// are taken. release gives it back and may be called more than once.
	AcquireSlot(subject string, max int) (release func(), ok bool, err error)
}

// Limiter is where the callers' rate limits are kept: a token bucket per
// caller, shared by every replica of a team hub (the store implements it).
type Limiter interface {
	// Take draws a token from subject's bucket (filling at perSecond, up
	// to burst), or says how long until one is there.
	Take(subject string, perSecond float64, burst int) (time.Duration, error)
}

// Access identifies the callers that do not carry the hub's own token: API
// keys and access tokens of the team's identity provider. The access room
// implements it.
type Access interface {
	// Identify names the caller of a request from its bearer credential
	// ("" when it sent none). An error may say more through methods the
	// edge maps to statuses: Challenge() string (401, with that
	// WWW-Authenticate value), Forbidden() bool (403); any other error is
	// a check that could not be made (503).
	Identify(r *http.Request, bearer string) (Caller, error)
	// Metadata serves /.well-known/oauth-protected-resource/… (RFC 9728);
	// it answers 404 when the hub takes no sign-in.
	Metadata() http.Handler
}

// wellKnownResource is where the protected resource metadata of each
// endpoint is served: this prefix and the endpoint's path (RFC 9728 §3.1).
const wellKnownResource = "/.well-known/oauth-protected-resource"

// principal is what binds the caller's sessions and limits.
func (c Caller) principal() string {
	if c.Principal != "" {
		return c.Principal
	}
	return c.ID
}

// admin reports whether the caller may use the control API and see the
// hub's whole status: the hub's own token, or anyone while auth is off.
func (c Caller) admin() bool { return c.ID == "token" || c.ID == "" }

type callerKey struct{}

// withCaller returns r with its caller in its context.
func withCaller(r *http.Request, c Caller) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), callerKey{}, c))
}

// callerOf returns the caller the edge identified for a request's context.
func callerOf(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// errNotPermitted is a limited caller asking for an endpoint outside its
// profiles.
type errNotPermitted struct{ msg string }

func (e *errNotPermitted) Error() string { return e.msg }

// permit maps the endpoint a caller asked for to the one it is served:
// a limited caller with one profile is served that profile on /mcp; a
// profile's endpoint needs the profile; a server's own endpoint needs a
// profile that passes the whole server (selects it with no tool globs).
func permit(reg *registry.Registry, c Caller, endpoint string) (string, error) {
	if !c.Limited {
		return endpoint, nil
	}
	var have []string // its profiles the registry has
	for _, p := range c.Profiles {
		if reg.Profile(p) != nil {
			have = append(have, p)
		}
	}
	may := "it may use no profile of this hub"
	if len(have) > 0 {
		urls := make([]string, len(have))
		for i, p := range have {
			urls[i] = "/profiles/" + p + "/mcp"
		}
		may = "it may use " + strings.Join(urls, ", ")
	}
	who := c.ID
	switch {
	case endpoint == "":
		if len(have) == 1 {
			return profileEndpoint(have[0]), nil
		}
		return "", &errNotPermitted{fmt.Sprintf("Forbidden: %s may not use /mcp, which serves every server; %s", who, may)}
	case !serverEndpoint(endpoint):
		name, _ := endpointProfile(endpoint)
		if slices.Contains(have, name) {
			return endpoint, nil
		}
		return "", &errNotPermitted{fmt.Sprintf("Forbidden: %s may not use profile %s; %s", who, name, may)}
	}
	// A server's own endpoint shows the server as it is, without a
	// profile's tool filter or the overrides (fixed arguments) a profile
	// lays over it: never a limited caller's.
	return "", &errNotPermitted{fmt.Sprintf("Forbidden: %s may not use /%s/mcp, which passes %s through without its profiles' filters and overrides; %s", who, endpoint, endpoint, may)}
}

// identify names the caller of a request when the hub's auth is on and the
// request does not carry the hub's token: another replica, or whoever
// Access says. It answers a refusal itself.
func (e *edge) identify(w http.ResponseWriter, r *http.Request, bearer string) (Caller, bool) {
	if e.access == nil {
		e.log.Warn("refused a request", "path", r.URL.Path, "why", "no valid token")
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcphub"`)
		httpError(w, http.StatusUnauthorized, "Unauthorized: send Authorization: Bearer <token> (see mcphub token)")
		return Caller{}, false
	}
	c, err := e.access.Identify(r, bearer)
	if err == nil {
		return c, true
	}
	var challenge interface{ Challenge() string }
	var forbidden interface{ Forbidden() bool }
	isChallenge, isForbidden := errors.As(err, &challenge), errors.As(err, &forbidden) && forbidden.Forbidden()
	switch {
	case isChallenge || isForbidden:
		// A request without a credential is how every OAuth client
		// starts (it learns where to sign in from the 401): logged, but
		// not as a warning.
		level := slog.LevelWarn
		if bearer == "" {
			level = slog.LevelInfo
		}
		e.log.Log(r.Context(), level, "refused a request", "path", r.URL.Path, "why", err.Error())
		if isChallenge && challenge.Challenge() != "" {
			w.Header().Set("WWW-Authenticate", challenge.Challenge())
		}
		if isForbidden {
			httpError(w, http.StatusForbidden, "Forbidden: "+err.Error())
			return Caller{}, false
		}
		httpError(w, http.StatusUnauthorized, "Unauthorized: "+err.Error())
	default:
		if e.throttle(&e.checkLogged) {
			e.log.Error("could not check a request's credentials (logged at most every 10 s)", "path", r.URL.Path, "err", err)
		}
		retryLater(w, "Service Unavailable: the hub could not check the request's credentials; retry shortly (the hub's log says why)")
	}
	return Caller{}, false
}

// serveMetadata answers the protected resource metadata of an endpoint
// the hub serves: /mcp, an enabled server's, a profile's.
func (e *edge) serveMetadata(w http.ResponseWriter, r *http.Request) {
	endpoint := strings.TrimPrefix(strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, wellKnownResource), "/mcp"), "/")
	known := endpoint == ""
	if name, ok := strings.CutPrefix(endpoint, "profiles/"); ok {
		known = e.servers.registry().Profile(name) != nil
	} else if endpoint != "" {
		known = e.servers.get(endpoint) != nil
	}
	if e.access == nil || !known || !strings.HasSuffix(r.URL.Path, "/mcp") {
		e.notFound(w, r)
		return
	}
	e.access.Metadata().ServeHTTP(w, r)
}
