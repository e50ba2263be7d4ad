package registry

import (
	"cmp"
	"fmt"
	"maps"
	"net"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/mcphub/mcphub/internal/httphdr"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/textdist"
)

// checkKind enforces "either stdio or remote" and the keys that belong to
// only one of them.
func (p *parser) checkKind(t *table, s *Server) {
	cmd, remote := t.has("command"), t.has("url")
	switch {
	case cmd && remote:
		p.fail(t.path, s.Name, "both command and url are set; a server is either stdio (command) or remote (url)")
	case !cmd && !remote:
		p.fail(t.path, s.Name, `has neither command nor url; set command = "..." for a stdio server or url = "https://..." for a remote one`)
	case cmd:
		if _, isStr := t.m["command"].(string); isStr && s.Command == "" {
			t.errf("command", `must not be empty; name the program to run, e.g. "npx"`)
		}
		for _, k := range []string{"transport", "headers", "oauth"} {
			if t.has(k) {
				t.errf(k, "%s applies only to remote servers (url); remove it, or replace command with url", k)
			}
		}
		if strings.ContainsRune(s.Command, 0) || slices.ContainsFunc(s.Args, func(a string) bool { return strings.ContainsRune(a, 0) }) {
			t.errf("args", "command and args must not contain NUL characters")
		}
	default:
		if _, isStr := t.m["url"].(string); isStr {
			if msg := checkURL(s.URL); msg != "" {
				t.errf("url", "%s", msg)
			}
		}
		for _, k := range []string{"args", "env", "cwd", "env_passthrough", "inherit_env", "replicas"} {
			if t.has(k) {
				t.errf(k, "%s applies only to stdio servers (command); remove it, or replace url with command", k)
			}
		}
		switch s.Transport {
		case "", TransportAuto, TransportStreamableHTTP, TransportSSE:
		default:
			t.errf("transport", `%q is not a transport; use "auto" (the default), "streamable-http" or "sse"`, s.Transport)
		}
		if s.Transport == TransportSSE && jsonrpc.EraOf(s.Protocol) == jsonrpc.EraStateless {
			t.errf("protocol", `%s is not spoken over the legacy HTTP+SSE transport; use transport = "streamable-http" (or "auto")`, s.Protocol)
		}
	}
}

func checkURL(raw string) string {
	const want = `must be an http:// or https:// URL with a host, e.g. "https://example.com/mcp"`
	u, err := url.Parse(raw)
	if err != nil {
		return want
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Sprintf("%s; its scheme is %q", want, u.Scheme)
	}
	if u.Host == "" {
		return want + "; it has no host"
	}
	return ""
}

func (p *parser) checkEnv(t *table, s *Server) {
	for k, v := range s.Env {
		path := append(slices.Clone(t.path), "env", k)
		if k == "" || strings.ContainsAny(k, "=\x00") {
			p.fail(path, s.Name, "an environment variable name must be non-empty and contain no '=' or NUL")
		}
		if strings.ContainsRune(v, 0) {
			p.fail(path, s.Name, "the value contains a NUL character, which an environment variable cannot hold")
		}
	}
}

func (p *parser) checkHeaders(t *table, s *Server) {
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		path := append(slices.Clone(t.path), "headers", k)
		if err := httphdr.Check(k, s.Headers[k]); err != nil {
			p.fail(path, s.Name, "%v", err)
		}
		for other := range s.Headers {
			if other < k && strings.EqualFold(other, k) {
				p.fail(path, s.Name, "the same header as %s (names ignore case); keep one", other)
			}
		}
	}
}

// crossCheck applies the rules that involve more than one server.
func (p *parser) crossCheck(reg *Registry) {
	// A server whose entry is fine claims its prefix before one that has a
	// problem already, so a failed entry never fails a good one with it.
	failed := map[string]bool{}
	for _, e := range p.errs {
		failed[e.server] = true
	}
	byLine := slices.Clone(reg.Servers)
	slices.SortStableFunc(byLine, func(a, b *Server) int {
		if c := cmp.Compare(b2i(failed[a.Name]), b2i(failed[b.Name])); c != 0 {
			return c
		}
		return cmp.Compare(a.Line, b.Line)
	})
	sep := reg.Hub.Separator
	seen := map[string]*Server{}
	for _, s := range byLine {
		at := []string{"servers", s.Name, "prefix"}
		if s.Prefix != "" && sep != "" && strings.Contains(s.Prefix, sep) {
			p.fail(at, s.Name, "prefix %q contains the separator %q, which makes namespaced names ambiguous; set a prefix without it or change hub.separator", s.Prefix, sep)
		}
		if !s.Enabled || s.Prefix == "" {
			continue
		}
		if o := seen[s.Prefix]; o != nil {
			p.fail(at, s.Name, "prefix %q is also used by server %q (line %d); give one of them a different prefix", s.Prefix, o.Name, o.Line)
			continue
		}
		seen[s.Prefix] = s
	}
}

func (p *parser) checkListen(t *table, v string) {
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		t.errf("listen", `%q is not host:port; use e.g. "127.0.0.1:7733"`, v)
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		t.errf("listen", `%q has no valid port; use a port from 0 to 65535, e.g. "127.0.0.1:7733"`, v)
	}
}

// LoopbackListen reports whether a listen address is reachable only from
// this machine. Addresses that do not parse count as loopback here, because
// checkListen reports them already.
func LoopbackListen(v string) bool {
	host, _, err := net.SplitHostPort(v)
	if err != nil {
		return true
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func validSeparator(s string) bool {
	return len(s) >= 1 && len(s) <= 4 && strings.Trim(s, "_.-") == ""
}

func checkOrigin(o string) string {
	const want = `an origin is scheme://host[:port], e.g. "https://app.example.com"`
	u, err := url.Parse(o)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "" {
		return "is not an origin; " + want
	}
	if u.Path == "/" && u.RawQuery == "" && u.Fragment == "" && u.User == nil {
		return "has a trailing slash; " + want
	}
	if u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil || u.ForceQuery {
		return "has a path, query or user; " + want
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "has an invalid port; " + want
		}
	}
	return ""
}

// checkName checks a server name and, when it is wrong, suggests one.
func checkName(name string) string { return checkNameOf("server", name) }

// checkNameOf checks the name of a server or a profile (what says which).
func checkNameOf(what, name string) string {
	if validName(name) {
		return ""
	}
	msg := fmt.Sprintf("%s name %q is not valid; use 1-32 characters of a-z, 0-9 and '-', starting with a letter or digit", what, name)
	if n := normalizeName(name); n != "" {
		msg += fmt.Sprintf(" (e.g. %q)", n)
	}
	return msg
}

func validName(name string) bool {
	if len(name) < 1 || len(name) > 32 || name[0] == '-' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// normalizeName maps any string to a valid server name: lowercase, runs of
// other characters become one '-', trimmed, at most 32 characters. It
// returns "" when nothing usable is left.
func normalizeName(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	n := strings.TrimRight(b.String(), "-")
	if len(n) > 32 {
		n = strings.TrimRight(n[:32], "-")
	}
	return n
}

func checkPrefix(p string) string {
	if p == "" {
		return ""
	}
	ok := len(p) <= 32
	for i := 0; ok && i < len(p); i++ {
		c := p[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
	}
	if !ok {
		return fmt.Sprintf(`prefix %q is not valid; use "" for no prefix, or 1-32 characters of A-Z, a-z, 0-9, _ and -`, p)
	}
	return ""
}

func checkGlob(pat string) string {
	if pat == "" {
		return `an empty pattern matches nothing; use "*" for every tool or remove the entry`
	}
	if _, err := path.Match(pat, ""); err != nil {
		return fmt.Sprintf("%q is not a valid pattern; use path.Match syntax: * matches any run of characters, ? one character, [abc] a set", pat)
	}
	return ""
}

// suggest finds the known key a user most likely meant: "" when none is
// close enough, or when two are equally close (a guess could send the user,
// or a remove, to the wrong one). A name is close when fewer than a third of
// its characters, and fewer than all of them, differ.
func suggest(k string, known []string, aliases map[string]string) string {
	if a, ok := aliases[k]; ok {
		return a
	}
	for _, kn := range known {
		if strings.EqualFold(k, kn) {
			return kn
		}
	}
	best, bestD, tied := "", min(max(1, len(k)/3)+1, len(k)), false
	for _, kn := range known {
		switch d := textdist.Distance(strings.ToLower(k), strings.ToLower(kn)); {
		case d < bestD:
			best, bestD, tied = kn, d, false
		case d == bestD && best != "":
			tied = true
		}
	}
	if tied {
		return ""
	}
	return best
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
