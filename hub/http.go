package hub

import (
	"crypto/subtle"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// ServeHTTP routes every request: the merged endpoint /mcp, the per-server
// endpoints /{server}/mcp, the health endpoints, and the retired legacy
// routes. Every request first passes the Host/Origin and auth checks.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.guardBody(w, r)
	if !h.checkOrigin(w, r) {
		return
	}
	if r.Method == http.MethodOptions {
		h.preflight(w, r)
		return
	}
	if !h.checkAuth(w, r) {
		return
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case path == "/mcp":
		h.serveEndpoint(w, r, "")
	case path == "/healthz":
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	case path == "/readyz":
		h.serveReady(w, r)
	case path == "/control/restart":
		h.serveRestart(w, r)
	case path == "/control/sessions":
		h.serveSessions(w, r)
	default:
		server, rest, ok := strings.Cut(strings.TrimPrefix(path, "/"), "/")
		if !ok || h.server(server) == nil {
			httpError(w, http.StatusNotFound, "no such endpoint: the merged endpoint is /mcp and each enabled server has /{server}/mcp")
			return
		}
		switch rest {
		case "mcp":
			h.serveEndpoint(w, r, server)
		case "sse", "message", "messages":
			httpError(w, http.StatusGone, "the legacy HTTP+SSE transport is not served: use /"+server+"/mcp with transport type \"http\" (Streamable HTTP)")
		default:
			httpError(w, http.StatusNotFound, "no such endpoint: use /"+server+"/mcp")
		}
	}
}

// serveRestart is the local control endpoint behind `mcphub restart NAME`:
// POST /control/restart?server=NAME. It passes the same Host, Origin and
// auth checks as every other endpoint.
func (h *Hub) serveRestart(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		httpError(w, http.StatusMethodNotAllowed, "use POST /control/restart?server=NAME")
		return
	}
	name := r.URL.Query().Get("server")
	if err := h.Restart(name); err != nil {
		httpError(w, http.StatusNotFound, err.Error())
		return
	}
	h.log.Info("restart requested", "server", name)
	writeJSON(w, http.StatusAccepted, map[string]string{"status": "restarting", "server": name})
}

// checkOrigin enforces DNS-rebinding protection: when mcphub listens on
// loopback, the Host must be a loopback name; a present Origin must be a
// loopback origin or one listed in allowed_origins. It answers 403 itself.
func (h *Hub) checkOrigin(w http.ResponseWriter, r *http.Request) bool {
	if h.boundToLoopback() && !isLoopbackHost(r.Host) {
		h.log.Warn("refused a request with a non-loopback Host", "host", r.Host, "path", r.URL.Path)
		httpError(w, http.StatusForbidden, "Forbidden: invalid Host header")
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	if !h.originAllowed(origin) {
		h.log.Warn("refused a request from a foreign Origin", "origin", origin, "path", r.URL.Path)
		httpError(w, http.StatusForbidden, "Forbidden: invalid Origin header")
		return false
	}
	hdr := w.Header()
	hdr.Set("Access-Control-Allow-Origin", origin)
	hdr.Add("Vary", "Origin")
	hdr.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, MCP-Protocol-Version")
	return true
}

func (h *Hub) boundToLoopback() bool {
	host, _, err := net.SplitHostPort(h.registry().Hub.Listen)
	if err != nil {
		return true
	}
	return isLoopbackName(host)
}

func (h *Hub) originAllowed(origin string) bool {
	if slices.Contains(h.registry().Hub.AllowedOrigins, origin) {
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
func (h *Hub) preflight(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
	hdr.Set("Access-Control-Allow-Headers", "Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID")
	hdr.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

// checkAuth requires the bearer token when auth is on, comparing in
// constant time. It answers 401 itself.
func (h *Hub) checkAuth(w http.ResponseWriter, r *http.Request) bool {
	if h.opts.Token == "" {
		return true
	}
	// The scheme name is case-insensitive (RFC 9110 §11.1).
	scheme, got, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(h.opts.Token)) == 1 {
		return true
	}
	h.log.Warn("refused a request without a valid token", "path", r.URL.Path)
	w.Header().Set("WWW-Authenticate", `Bearer realm="mcphub"`)
	httpError(w, http.StatusUnauthorized, "Unauthorized: send Authorization: Bearer <token> (see mcphub token)")
	return false
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
