package registry

import (
	"net"
	"net/url"
	"path"
	"slices"
	"strings"
)

// PointsAtHub reports whether an imported entry is the hub listening on
// listen (host:port) itself rather than an upstream: an HTTP entry whose
// URL reaches that address, on any path (/mcp, /{server}/mcp and the
// profile endpoints are all the hub), or a stdio entry that runs
// "mcphub stdio", directly or through mcp-remote. Client configs that
// `mcphub connect` wrote hold such an entry, and importing it would make
// the hub its own upstream.
func PointsAtHub(s ServerSpec, listen string) bool {
	if s.URL != "" {
		return urlReaches(s.URL, listen)
	}
	if isHubCommand(s.Command, s.Args) {
		return true
	}
	// npx mcp-remote URL bridges a stdio client to an HTTP server.
	if i := slices.Index(s.Args, "mcp-remote"); i >= 0 && i+1 < len(s.Args) {
		return urlReaches(s.Args[i+1], listen)
	}
	return false
}

// isHubCommand reports whether command args is "mcphub stdio": the
// command's base name, as either system spells paths, is mcphub or
// mcphub.exe, and its first argument is "stdio".
func isHubCommand(command string, args []string) bool {
	if len(args) == 0 || args[0] != "stdio" {
		return false
	}
	base := path.Base(strings.ReplaceAll(command, `\`, "/"))
	return base == "mcphub" || strings.EqualFold(base, "mcphub.exe")
}

// urlReaches reports whether an http(s) URL reaches a server listening on
// listen. The loopback spellings (127.0.0.1, localhost, ::1) are one host,
// and a server listening on every interface (0.0.0.0, ::, no host) is
// reached on loopback.
func urlReaches(raw, listen string) bool {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	lhost, lport, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if port != lport {
		return false
	}
	host := u.Hostname()
	if ip := net.ParseIP(lhost); lhost == "" || ip != nil && ip.IsUnspecified() {
		return isLoopbackName(host)
	}
	if isLoopbackName(lhost) {
		return isLoopbackName(host)
	}
	if a, b := net.ParseIP(lhost), net.ParseIP(host); a != nil && b != nil {
		return a.Equal(b)
	}
	return strings.EqualFold(strings.TrimSuffix(host, "."), strings.TrimSuffix(lhost, "."))
}

// isLoopbackName reports whether host is one of the ways a client on this
// machine names loopback.
func isLoopbackName(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.Equal(net.IPv4(127, 0, 0, 1)) || ip.Equal(net.IPv6loopback))
}
