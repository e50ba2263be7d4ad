package hub

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/internal/httphdr"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/registry"
)

// edge is the hub's HTTP part: it routes requests on http.ServeMux patterns
// (the merged /mcp, each enabled server's /{server}/mcp, the retired legacy
// routes, health and control), and checks everything HTTP before a message
// reaches a session: Host and Origin, the bearer token, the body's size and
// pace, Content-Type, Accept, MCP-Protocol-Version, and the JSON-RPC
// envelope. JSON-RPC codes and HTTP statuses are chosen here.
type edge struct {
	log *slog.Logger
	// auth is what every request must carry: the bearer token, none, or,
	// when auth is on but its token cannot be read, nothing will do. It is
	// swapped whole when the registry's [hub] auth settings change.
	auth     atomic.Pointer[authState]
	servers  *serverSet
	sessions *sessionSet
	control  control
	mux      *http.ServeMux
	// loopback: the hub listens on loopback only, so a Host header must
	// name loopback too. The listen address never changes while serving.
	loopback bool
	// cluster, on a replica of a team hub, finds the replica holding a
	// session; forwarder carries requests to it.
	cluster   Cluster
	forwarder http.RoundTripper
	// access identifies the callers without the hub's token; nil when
	// only the token is taken.
	access Access
	limitState
}

// control is what the edge's health and control routes ask of the hub.
type control interface {
	Status() api.Status
	Restart(name string) error
	Sessions() []api.SessionInfo
	EndSession(id string) bool
	closing() bool
	storeProblem() error
}

func newEdge(log *slog.Logger, token string, servers *serverSet, sessions *sessionSet, ctl control) *edge {
	e := &edge{log: log, servers: servers, sessions: sessions, control: ctl, mux: http.NewServeMux(),
		loopback: registry.LoopbackListen(servers.registry().Hub.Listen)}
	e.setAuth(token, "")
	// Each route also answers with a trailing slash.
	handle := func(pattern string, f http.HandlerFunc) {
		e.mux.HandleFunc(pattern, f)
		e.mux.HandleFunc(pattern+"/{$}", f)
	}
	handle("/mcp", func(w http.ResponseWriter, r *http.Request) { e.serveEndpoint(w, r, "") })
	handle("/{server}/mcp", e.serverRoute(e.serveEndpoint))
	handle("/profiles/{profile}/mcp", e.serveProfile)
	for _, legacy := range []string{"sse", "message", "messages"} {
		handle("/{server}/"+legacy, e.serverRoute(func(w http.ResponseWriter, _ *http.Request, server string) {
			httpError(w, http.StatusGone, "the legacy HTTP+SSE transport is not served: use /"+server+"/mcp with transport type \"http\" (Streamable HTTP)")
		}))
	}
	handle("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	handle("/readyz", e.serveReady)
	handle("/control/restart", e.serveRestart)
	handle("/control/sessions", e.serveSessions)
	handle("/control/env", e.serveEnv)
	handle("/control/catalog", e.serveCatalog)
	e.mux.HandleFunc(wellKnownResource+"/mcp", e.serveMetadata)
	e.mux.HandleFunc(wellKnownResource+"/{server}/mcp", e.serveMetadata)
	e.mux.HandleFunc(wellKnownResource+"/profiles/{profile}/mcp", e.serveMetadata)
	e.mux.HandleFunc("/", e.notFound)
	return e
}

// ServeHTTP runs the checks every request passes, then its route.
func (e *edge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.guardBody(w, r)
	if !e.checkOrigin(w, r) {
		return
	}
	if r.Method == http.MethodOptions {
		e.preflight(w, r)
		return
	}
	r, ok := e.checkAuth(w, r)
	if !ok {
		return
	}
	// ServeMux would serve //mcp or /x/../mcp as /mcp; a path that is not
	// already clean names no endpoint, so proxies and filters in front of
	// the hub see the same path the hub serves. A request-target that is
	// not a path (OPTIONS *, or GET *) names none either; ServeMux would
	// answer it with a bare 400.
	if p := r.URL.Path; !strings.HasPrefix(p, "/") || p != "/" && path.Clean(p) != strings.TrimSuffix(p, "/") {
		e.notFound(w, r)
		return
	}
	e.mux.ServeHTTP(w, r)
}

// serverRoute serves a route of an enabled server; any other name is
// answered 404.
func (e *edge) serverRoute(serve func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		server := r.PathValue("server")
		if e.servers.get(server) == nil {
			e.notFound(w, r)
			return
		}
		serve(w, r, server)
	}
}

// serveProfile serves a profile's endpoint; a name the registry has no
// profile of is answered 404 naming the ones it has.
func (e *edge) serveProfile(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("profile")
	reg := e.servers.registry()
	prof := reg.Profile(name)
	if prof == nil {
		names := make([]string, len(reg.Profiles))
		for i, p := range reg.Profiles {
			names[i] = p.Name
		}
		msg := fmt.Sprintf("no such endpoint: the registry has no profile %q", logValue(name))
		switch {
		case len(names) == 0:
			msg += "; profiles are [profiles.NAME] tables in " + reg.Path
		default:
			msg += "; its profiles are " + strings.Join(names, ", ")
		}
		httpError(w, http.StatusNotFound, msg)
		return
	}
	if !e.profileServed(w, name) {
		return
	}
	e.serveEndpoint(w, r, profileEndpoint(name))
}

// profileServed reports whether a profile the registry has is served,
// answering 503 itself when its table has a problem: what it would select
// is not what its author meant (a key of the wrong type reads as "every
// tool"), so it serves nothing until the file is fixed.
func (e *edge) profileServed(w http.ResponseWriter, name string) bool {
	reg := e.servers.registry()
	prof := reg.Profile(name)
	if prof == nil || prof.Problem == "" {
		return true
	}
	httpError(w, http.StatusServiceUnavailable, fmt.Sprintf("profile %s is not served until its table in %s is fixed (mcphub validate shows every problem):\n%s", name, reg.Path, prof.Problem))
	return false
}

// notFound answers a path no route serves, naming the right one.
func (e *edge) notFound(w http.ResponseWriter, r *http.Request) {
	server, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if server != "" && e.servers.get(server) != nil {
		httpError(w, http.StatusNotFound, "no such endpoint: use /"+server+"/mcp")
		return
	}
	httpError(w, http.StatusNotFound, "no such endpoint: the merged endpoint is /mcp and each enabled server has /{server}/mcp")
}

// serveReady answers /readyz: 200 with the status while serving, 503 while
// stopping or while the store cannot be reached.
//
// Only the hub's owner (its token, or anyone while auth is off) sees the
// status: servers, sessions, profiles; another caller gets the verdict
// alone.
func (e *edge) serveReady(w http.ResponseWriter, r *http.Request) {
	status := http.StatusOK
	st := e.control.Status()
	if e.control.closing() || st.StoreError != "" {
		status = http.StatusServiceUnavailable
	}
	if !callerOf(r.Context()).admin() {
		verdict := "ok"
		if status != http.StatusOK {
			verdict = "unavailable"
		}
		writeJSON(w, status, map[string]string{"status": verdict})
		return
	}
	writeJSON(w, status, st)
}

// serveSessions is the control endpoint behind `mcphub sessions`: GET lists,
// DELETE ?id=ID ends one.
func (e *edge) serveSessions(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		writeJSON(w, http.StatusOK, e.control.Sessions())
	case http.MethodDelete:
		id := r.URL.Query().Get("id")
		if !e.control.EndSession(id) {
			httpError(w, http.StatusNotFound, "no live session "+id)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, DELETE")
		httpError(w, http.StatusMethodNotAllowed, "use GET or DELETE")
	}
}

// serveRestart is the local control endpoint behind `mcphub restart NAME`:
// POST /control/restart?server=NAME. It passes the same Host, Origin and
// auth checks as every other endpoint.
func (e *edge) serveRestart(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		httpError(w, http.StatusMethodNotAllowed, "use POST /control/restart?server=NAME")
		return
	}
	name := r.URL.Query().Get("server")
	if err := e.control.Restart(name); err != nil {
		httpError(w, http.StatusNotFound, err.Error())
		return
	}
	e.log.Info("restart requested", "server", name)
	writeJSON(w, http.StatusAccepted, api.Restarted{Server: name, Status: "restarting"})
}

// serveEnv tells which of the variables named by the name parameters the
// hub's environment lacks, so that `mcphub add` can warn about a ${NAME}
// this hub cannot resolve. Values are never sent, only whether each is set.
func (e *edge) serveEnv(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		httpError(w, http.StatusMethodNotAllowed, "use GET /control/env?name=VAR")
		return
	}
	unset := []string{}
	for _, n := range r.URL.Query()["name"] {
		if _, ok := os.LookupEnv(n); !ok {
			unset = append(unset, n)
		}
	}
	writeJSON(w, http.StatusOK, api.EnvReport{PID: os.Getpid(), Unset: unset})
}

// checkOrigin enforces DNS-rebinding protection: when mcphub listens on
// loopback, the Host must be a loopback name; a present Origin must be a
// loopback origin or one listed in allowed_origins. It answers 403 itself.
func (e *edge) checkOrigin(w http.ResponseWriter, r *http.Request) bool {
	if e.loopback && !isLoopbackHost(r.Host) {
		e.log.Warn("refused a request with a non-loopback Host", "host", r.Host, "path", r.URL.Path)
		httpError(w, http.StatusForbidden, "Forbidden: invalid Host header")
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	if !e.originAllowed(origin) {
		e.log.Warn("refused a request from a foreign Origin", "origin", origin, "path", r.URL.Path)
		httpError(w, http.StatusForbidden, "Forbidden: invalid Origin header")
		return false
	}
	hdr := w.Header()
	hdr.Set("Access-Control-Allow-Origin", origin)
	hdr.Add("Vary", "Origin")
	hdr.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, MCP-Protocol-Version")
	return true
}

func (e *edge) originAllowed(origin string) bool {
	if slices.Contains(e.servers.registry().Hub.AllowedOrigins, origin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return isLoopbackName(u.Hostname())
}

// isLoopbackHost checks a Host header value (host or host:port).
func isLoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return isLoopbackName(strings.Trim(host, "[]"))
}

func isLoopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// preflight answers a CORS preflight from an allowed origin.
func (e *edge) preflight(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
	allow := "Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID, Mcp-Method, Mcp-Name"
	// A 2026-07-28 tools/call carries Mcp-Param-{Name} headers whose names
	// only the tool knows: those the browser asks for are allowed.
	for _, v := range r.Header.Values("Access-Control-Request-Headers") {
		for _, h := range strings.Split(v, ",") {
			if h = strings.TrimSpace(h); len(h) > len("Mcp-Param-") && strings.EqualFold(h[:len("Mcp-Param-")], "Mcp-Param-") && httphdr.ValidName(h) {
				allow += ", " + h
			}
		}
	}
	hdr.Set("Access-Control-Allow-Headers", allow)
	hdr.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

// authState is the edge's auth in force: token "" with no problem is auth
// off; problem set is auth on without a readable token, which refuses
// every request rather than let any through.
type authState struct {
	token   string
	problem string
}

// setAuth puts an auth state in force for the requests that come next.
func (e *edge) setAuth(token, problem string) {
	e.auth.Store(&authState{token: token, problem: problem})
}

// checkAuth identifies the caller when auth is on: the hub's bearer token
// (compared in constant time), or what Access makes of another credential
// (an API key, a sign-in's access token), or, without one, another replica
// by the cluster's secret. It returns the request with its caller, or
// answers 401, 403 or 503 itself.
func (e *edge) checkAuth(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	a := e.auth.Load()
	if a.problem != "" {
		// The reason (which file, which variable) is in the hub's log,
		// written once when it arose; an unauthenticated caller is not
		// told where the token lives.
		httpError(w, http.StatusServiceUnavailable, "mcphub's auth is on but it has no token to check requests against; see the hub's log (mcphub logs)")
		return r, false
	}
	if a.token == "" {
		return r, true
	}
	// The metadata of a protected resource is public (RFC 9728): it is
	// how a client learns where to sign in. Only a clean path is let
	// through, which is all the routes serve.
	if p := r.URL.Path; strings.HasPrefix(p, wellKnownResource+"/") && path.Clean(p) == p {
		return r, true
	}
	// The scheme name is case-insensitive (RFC 9110 §11.1).
	scheme, got, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	got = strings.TrimSpace(got)
	if !strings.EqualFold(scheme, "Bearer") {
		got = ""
	}
	if got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) == 1 {
		return withCaller(r, Caller{ID: "token"}), true
	}
	// Another replica of a team hub, with the cluster's secret, on an MCP
	// endpoint: a request it forwards carries its client's credential
	// (checked like any, as its client is who the endpoint is served to),
	// and its own connection to a replicas = "one" server's replica
	// carries none. The control routes always want the token.
	if got == "" && strings.HasSuffix(r.URL.Path, "/mcp") && e.fromReplica(r) {
		return withCaller(r, Caller{ID: "replica"}), true
	}
	c, ok := e.identify(w, r, got)
	if !ok {
		return r, false
	}
	// The control API (restart, sessions, env, catalog) is the hub
	// owner's: its token. Health and a bare readiness stay open to every
	// caller (serveReady shows them no more).
	if strings.HasPrefix(r.URL.Path, "/control/") {
		e.log.Warn("refused a request", "path", r.URL.Path, "caller", c.ID, "why", "the control API takes the hub's token only")
		httpError(w, http.StatusForbidden, "Forbidden: the control API takes the hub's token only (mcphub token on the hub's machine shows it)")
		return r, false
	}
	return withCaller(r, c), true
}

// httpError answers with a status and a JSON-RPC error body without an id,
// as the spec allows for transport-level errors.
func httpError(w http.ResponseWriter, status int, msg string) {
	code := -32000
	switch status {
	case http.StatusNotFound:
		code = -32001
	case http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusNotAcceptable, http.StatusRequestTimeout:
		code = jsonrpc.CodeInvalidRequest
	}
	writeRPCError(w, status, nil, jsonrpc.NewError(code, msg))
}

// writeRPCError answers with a status and a JSON-RPC error response.
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, e *jsonrpc.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(jsonrpc.NewErrorResponse(id, e).Encode())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
