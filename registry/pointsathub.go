package registry

import (
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Self is what tells a hub apart from the servers an entry may name.
type Self struct {
	// Listens are the addresses (host:port) the hub listens on: its
	// registry's [hub] listen and, when it was started with serve
	// --listen, the address it recorded in its data directory. Empty and
	// repeated ones are allowed.
	Listens []string
	// Config is the path of the hub's registry file. An "mcphub stdio"
	// entry that reads another registry (its --config, else the
	// MCPHUB_CONFIG of its env, else DefaultPath) runs another hub. With
	// "" every "mcphub stdio" entry is taken for this hub.
	Config string
}

// PointsAtHub reports whether an entry is the hub described by self rather
// than an upstream: an HTTP entry whose URL reaches one of self.Listens, on
// any path (/mcp, /{server}/mcp and the profile endpoints are all the hub);
// a stdio entry running "mcphub stdio" on the hub's registry, with or
// without global flags (--config, --data-dir) before stdio; or one running
// mcp-remote (any @version) with a URL that reaches the hub. Client configs
// that `mcphub connect` wrote hold such an entry, and serving it would make
// the hub its own upstream.
func PointsAtHub(s ServerSpec, self Self) bool {
	if s.URL != "" {
		return self.reaches(s.URL)
	}
	if config, ok := hubCommand(s.Command, s.Args); ok {
		return self.sameRegistry(s, config)
	}
	if u := mcpRemoteURL(s.Args); u != "" {
		return self.reaches(u)
	}
	return false
}

// reaches reports whether raw reaches one of the addresses the hub listens
// on.
func (h Self) reaches(raw string) bool {
	for _, l := range h.Listens {
		if l != "" && urlReaches(raw, l) {
			return true
		}
	}
	return false
}

// sameRegistry reports whether a "mcphub stdio" entry that names config
// (its --config, "" when it gives none) relays to a hub of h's
// registry.
func (h Self) sameRegistry(s ServerSpec, config string) bool {
	if h.Config == "" {
		return true
	}
	if config == "" {
		config = DefaultPath()
		if v, ok := s.Env["MCPHUB_CONFIG"]; ok {
			if lit, unset, err := expand(v, func(string) (string, bool) { return "", false }); err == nil && len(unset) == 0 && lit != "" {
				config = lit
			}
		}
	}
	dir := ""
	if filepath.IsAbs(s.Cwd) && !strings.Contains(s.Cwd, "$") {
		dir = s.Cwd
	}
	return SamePath(absPath(config, dir), absPath(h.Config, ""))
}

// absPath is p made absolute: against dir when p is relative and dir is
// set, else against the working directory.
func absPath(p, dir string) string {
	if !filepath.IsAbs(p) && dir != "" {
		p = filepath.Join(dir, p)
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}

// SamePath reports whether two absolute paths name one file: the same
// text once cleaned, or, when both exist, the same file by the system's
// account (a symlink, a case-insensitive file system). A client's entry,
// the run file and the hub may spell one registry or command two ways.
func SamePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// hubValueFlags are mcphub's flags that take a value as the next argument
// when it is not given with =: the global ones, which may come before the
// subcommand, and stdio's own.
var hubValueFlags = []string{"--config", "--data-dir", "--server", "--log-level"}

// hubCommand reports whether command args runs "mcphub stdio": the
// command's base name, as either system spells paths, is mcphub or
// mcphub.exe, and its first argument that is neither a flag nor a flag's
// value is "stdio". config is the value of its --config flag, wherever it
// stands, or "" without one.
func hubCommand(command string, args []string) (config string, ok bool) {
	base := path.Base(strings.ReplaceAll(command, `\`, "/"))
	if base != "mcphub" && !strings.EqualFold(base, "mcphub.exe") {
		return "", false
	}
	sub := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			if sub == "" {
				sub = a
			}
			continue
		}
		name, value, hasValue := strings.Cut(a, "=")
		isValueFlag := false
		for _, f := range hubValueFlags {
			if name == f {
				isValueFlag = true
			}
		}
		if isValueFlag && !hasValue && i+1 < len(args) {
			i++
			value, hasValue = args[i], true
		}
		if name == "--config" && hasValue {
			config = value
		}
	}
	return config, sub == "stdio"
}

// mcpRemoteURL is the URL an mcp-remote bridge connects to: the first
// http(s) URL among the arguments after "mcp-remote" or
// "mcp-remote@VERSION" (npx -y mcp-remote@latest URL, with flags anywhere
// between); "" when args runs no mcp-remote.
func mcpRemoteURL(args []string) string {
	for i, a := range args {
		if a != "mcp-remote" && !strings.HasPrefix(a, "mcp-remote@") {
			continue
		}
		for _, b := range args[i+1:] {
			if u, err := url.Parse(b); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
				return b
			}
		}
		return ""
	}
	return ""
}

// urlReaches reports whether an http(s) URL reaches a server listening on
// listen. The loopback spellings (127.0.0.1, localhost, ::1) are one host,
// and a server listening on every interface (0.0.0.0, ::, no host) is
// reached on any loopback address.
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
		return isLoopbackName(host) || isLoopbackIP(host)
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

// isLoopbackIP reports whether host is an address of the loopback
// network (127.0.0.0/8 or ::1), which a server listening on every
// interface answers on.
func isLoopbackIP(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
