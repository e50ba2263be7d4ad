package registry

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Load reads and parses the registry at path, expanding ${VAR} from the
// process environment. A file that does not parse or validate gives an Errors
// value; a file that cannot be read gives the *fs.PathError.
func Load(path string) (*Registry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	return Parse(path, data, os.LookupEnv)
}

// Parse parses and validates the text of a registry. path is used for error
// positions and to resolve relative cwd and token_file values; lookupEnv
// resolves ${VAR} (nil means os.LookupEnv). Every missing key gets its
// default. When anything is wrong, Parse returns a nil registry and an Errors
// value listing every problem with its line and column.
func Parse(path string, data []byte, lookupEnv func(string) (string, bool)) (*Registry, error) {
	reg, errs := parse(path, data, lookupEnv)
	if len(errs) > 0 {
		return nil, errs
	}
	return reg, nil
}

// parse does the work of Parse but also returns the registry it could build
// when there are errors; the registry is nil only when the text is not TOML.
func parse(path string, data []byte, lookup func(string) (string, bool)) (*Registry, Errors) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	p := &parser{file: path, lookup: lookup}
	if p.file == "" {
		p.file = "hub.toml"
	}
	if path != "" {
		if dir, err := filepath.Abs(filepath.Dir(path)); err == nil {
			p.dir = dir
		}
	}
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		return nil, Errors{p.syntaxError(err, data)}
	}
	p.lay = locate(data)
	reg := &Registry{Path: path}
	root := &table{p: p, m: raw}
	root.unknown(topKeys, nil)
	reg.Hub = p.hub(raw["hub"])
	reg.Store = p.store(raw["store"])
	reg.Servers = p.servers(raw["servers"])
	p.crossCheck(reg)
	p.views(reg, raw)
	p.checkAccess(reg)
	inheritance(reg, lookup)
	p.errs.sort()
	return reg, p.errs
}

func (p *parser) syntaxError(err error, data []byte) *Error {
	e := &Error{File: p.file, Line: 1, Col: 1, Msg: err.Error()}
	var pe toml.ParseError
	if errors.As(err, &pe) {
		// The library's Col is off by a line when Start is the first byte
		// of a line, so the position is computed from Start.
		e.Msg = pe.Message
		e.Line, e.Col = lineCol(data, pe.Position.Start)
		// The library quotes the unquoted text it found, which may be a
		// pasted secret; say what to do instead.
		if strings.HasPrefix(e.Msg, "expected value but found") {
			e.Msg = `expected a value; strings must be quoted, e.g. key = "text"`
		}
	}
	return e
}

// lineCol turns a byte offset into a 1-based line and byte column.
func lineCol(data []byte, off int) (int, int) {
	off = min(max(off, 0), len(data))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	return line, off - (bytes.LastIndexByte(data[:off], '\n') + 1) + 1
}

type parser struct {
	file   string
	dir    string // absolute directory of the registry file, if known
	lookup func(string) (string, bool)
	lay    *layout
	errs   Errors
	// tagsUnsure is set when a server's tags key did not parse or held an
	// invalid tag, so a profile's tag cannot be called unknown: that would
	// make a server's problem a profile's too.
	tagsUnsure bool
}

var (
	topKeys   = []string{"hub", "servers", "profiles", "overrides", "store"}
	storeKeys = []string{"url"}
	hubKeys   = []string{"listen", "auth", "token_env", "token_file", "separator", "request_timeout",
		"post_sse", "allowed_origins", "max_body_bytes", "max_response_bytes",
		"max_sessions", "max_sessions_per_server", "max_connections", "max_connections_per_address",
		"stream_buffer_bytes", "buffer_bytes", "event_retention", "event_retention_bytes", "store_max_bytes",
		"audit_log_bodies", "session_ttl", "tls_cert", "tls_key", "env_passthrough", "oauth", "access", "limits"}
	serverKeys = []string{"command", "args", "env", "cwd", "url", "transport", "headers",
		"enabled", "prefix", "share", "replicas", "protocol", "allow", "deny", "connect_timeout", "call_timeout",
		"env_passthrough", "inherit_env", "tags", "oauth"}
	// serverAliases are the names other clients' configs use.
	serverAliases = map[string]string{"type": "transport", "disabled": "enabled",
		"environment": "env", "arguments": "args", "cmd": "command", "serverUrl": "url",
		"server_url": "url", "endpoint": "url", "workdir": "cwd", "working_dir": "cwd",
		"dir": "cwd", "timeout": "call_timeout", "tools": "allow"}
)

func (p *parser) hub(raw any) Hub {
	h := Hub{Listen: DefaultListen, Auth: DefaultAuth, TokenEnv: DefaultTokenEnv,
		Separator: DefaultSeparator, RequestTimeout: DefaultRequestTimeout, PostSSE: true,
		MaxBodyBytes: DefaultMaxBodyBytes, MaxResponseBytes: DefaultMaxResponseBytes,
		MaxSessions: DefaultMaxSessions, MaxSessionsPerServer: DefaultMaxSessionsPerServer, SessionTTL: DefaultSessionTTL,
		MaxConnections: DefaultMaxConnections, MaxConnectionsPerAddress: DefaultMaxConnectionsPerAddress,
		StreamBufferBytes: DefaultStreamBufferBytes, BufferBytes: DefaultBufferBytes,
		EventRetention: DefaultEventRetention, EventRetentionBytes: DefaultEventRetentionBytes, StoreMaxBytes: DefaultStoreMaxBytes}
	h.TokenFile = filepath.Join(p.dir, "token")
	if p.dir == "" {
		h.TokenFile = filepath.Join(filepath.Dir(DefaultPath()), "token")
	}
	if raw == nil {
		return h
	}
	m, ok := raw.(map[string]any)
	if !ok {
		p.fail([]string{"hub"}, "", "hub must be a table; write [hub] followed by its keys")
		return h
	}
	t := &table{p: p, m: m, path: []string{"hub"}}
	t.unknown(hubKeys, nil)
	if t.str("listen", &h.Listen) {
		p.checkListen(t, h.Listen)
	}
	if t.str("auth", &h.Auth) && h.Auth != AuthNone && h.Auth != AuthToken {
		t.errf("auth", "%q is not an auth mode; use \"none\" or \"token\"", h.Auth)
	}
	if t.str("token_env", &h.TokenEnv) && h.TokenEnv != "" && !validEnvName(h.TokenEnv) {
		t.errf("token_env", "%q is not an environment variable name; use letters, digits and _ (e.g. \"MCPHUB_TOKEN\")", h.TokenEnv)
	}
	// An empty token_file means the default, as the example file shows it.
	var tf string
	if t.str("token_file", &tf) && tf != "" {
		h.TokenFile = p.resolvePath(expandHome(tf, p.lookup))
	}
	if t.str("separator", &h.Separator) && !validSeparator(h.Separator) {
		t.errf("separator", "%q is not a separator; use 1-4 characters of '_', '.' and '-' (default \"__\")", h.Separator)
	}
	t.duration("request_timeout", &h.RequestTimeout)
	t.boolean("post_sse", &h.PostSSE)
	if t.strs("allowed_origins", &h.AllowedOrigins) {
		for i, o := range h.AllowedOrigins {
			if msg := checkOrigin(o); msg != "" {
				t.errf("allowed_origins", "entry %d (%q) %s", i+1, o, msg)
			}
		}
	}
	t.integer("max_body_bytes", &h.MaxBodyBytes)
	t.integer("max_response_bytes", &h.MaxResponseBytes)
	t.count("max_sessions", &h.MaxSessions)
	t.count("max_sessions_per_server", &h.MaxSessionsPerServer)
	t.count("max_connections", &h.MaxConnections)
	t.count("max_connections_per_address", &h.MaxConnectionsPerAddress)
	t.integer("stream_buffer_bytes", &h.StreamBufferBytes)
	t.integer("buffer_bytes", &h.BufferBytes)
	t.duration("event_retention", &h.EventRetention)
	t.integer("event_retention_bytes", &h.EventRetentionBytes)
	t.integer("store_max_bytes", &h.StoreMaxBytes)
	t.boolean("audit_log_bodies", &h.AuditLogBodies)
	t.duration("session_ttl", &h.SessionTTL)
	t.globs("env_passthrough", &h.EnvPassthrough)
	if t.str("tls_cert", &h.TLSCert) && h.TLSCert != "" {
		h.TLSCert = p.resolvePath(expandHome(h.TLSCert, p.lookup))
	}
	if t.str("tls_key", &h.TLSKey) && h.TLSKey != "" {
		h.TLSKey = p.resolvePath(expandHome(h.TLSKey, p.lookup))
	}
	switch {
	case h.TLSCert != "" && h.TLSKey == "":
		t.errf("tls_cert", "is set but tls_key is not; set both (the certificate's PEM file and its key's) or neither")
	case h.TLSKey != "" && h.TLSCert == "":
		t.errf("tls_key", "is set but tls_cert is not; set both (the certificate's PEM file and its key's) or neither")
	}
	if raw, ok := m["oauth"]; ok {
		h.OAuth = p.hubOAuth(t, raw)
		// Sign-in with an identity provider is auth on: unless the file
		// says auth = "none" (refused below), it is token auth too.
		if h.OAuth != nil && !t.has("auth") {
			h.Auth = AuthToken
		}
		if h.Auth == AuthNone && t.has("auth") {
			t.errf("auth", `is "none", but [hub.oauth] asks callers to sign in; set auth = "token" (the hub's token, API keys and the provider's tokens are then accepted) or remove [hub.oauth]`)
		}
	}
	p.checkOAuthURL(t, &h)
	if raw, ok := m["limits"]; ok {
		h.Limits = p.hubLimits(t, raw)
	}
	if raw, ok := m["access"]; ok {
		h.Access = p.hubAccess(t, raw)
		if h.Access != nil && h.OAuth == nil {
			t.errf("access", "maps the identity provider's groups to profiles, but there is no [hub.oauth]; add [hub.oauth] with the provider's issuer, or remove [hub.access]")
		}
	}
	if msg := h.ExposureProblem(); msg != "" && t.has("listen") {
		t.errf("listen", "%s", msg)
	}
	return h
}

// store reads the [store] table: url, a postgres:// URL (or a ${NAME}
// reference to one), checked without expanding it.
func (p *parser) store(raw any) Store {
	var st Store
	if raw == nil {
		return st
	}
	m, ok := raw.(map[string]any)
	if !ok {
		p.fail([]string{"store"}, "", `store must be a table; write [store] followed by url = "postgres://…"`)
		return st
	}
	t := &table{p: p, m: m, path: []string{"store"}}
	t.unknown(storeKeys, nil)
	if t.str("url", &st.URL) && st.URL != "" && !strings.HasPrefix(st.URL, "${") &&
		!strings.HasPrefix(st.URL, "postgres://") && !strings.HasPrefix(st.URL, "postgresql://") {
		// The value is not quoted back: it may hold a password.
		t.errf("url", "is not a PostgreSQL URL; write postgres://user:password@host:port/database (a ${NAME} reference keeps the password out of the file), or leave [store] out to keep the store in SQLite in the data directory")
	}
	return st
}

func (p *parser) servers(raw any) []*Server {
	if raw == nil {
		return nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		p.fail([]string{"servers"}, "", "servers must be a table of servers; write [servers.NAME] tables")
		return nil
	}
	var out []*Server
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if s := p.server(name, m[name]); s != nil {
			out = append(out, s)
		}
	}
	return out
}

func (p *parser) server(name string, raw any) *Server {
	path := []string{"servers", name}
	if msg := checkName(name); msg != "" {
		p.fail(path, name, "%s", msg)
	}
	m, ok := raw.(map[string]any)
	if !ok {
		p.fail(path, name, "a server must be a table; write [servers.%s] followed by its keys", name)
		return nil
	}
	s := &Server{Name: name, Enabled: true, Prefix: name, Share: ShareServer, Replicas: ReplicasEach,
		ConnectTimeout: DefaultConnectTimeout, CallTimeout: DefaultCallTimeout}
	s.Line, _ = p.lay.pos(path)
	t := &table{p: p, m: m, path: path, server: name}
	t.unknown(serverKeys, serverAliases)

	t.boolean("enabled", &s.Enabled)
	t.str("command", &s.Command)
	t.strs("args", &s.Args)
	t.strMap("env", &s.RawEnv)
	t.str("cwd", &s.RawCwd)
	t.str("url", &s.URL)
	t.str("transport", &s.Transport)
	t.strMap("headers", &s.RawHeaders)
	if t.str("prefix", &s.Prefix) {
		if msg := checkPrefix(s.Prefix); msg != "" {
			t.errf("prefix", "%s", msg)
		}
	}
	if t.str("protocol", &s.Protocol) {
		if err := CheckProtocol(s.Protocol); err != nil {
			t.errf("protocol", "%v", err)
		}
	}
	if s.Protocol == "" {
		s.Protocol = ProtocolAuto
	}
	if t.str("share", &s.Share) && s.Share != ShareServer && s.Share != ShareSession {
		t.errf("share", "%q is not a share mode; use \"server\" (one connection for all sessions) or \"session\" (one per session)", s.Share)
	}
	if t.str("replicas", &s.Replicas) && s.Replicas != ReplicasEach && s.Replicas != ReplicasOne {
		t.errf("replicas", "%q is not a replicas mode; use \"each\" (a process on every replica of a team hub) or \"one\" (one process cluster-wide)", s.Replicas)
	}
	t.globs("allow", &s.Allow)
	t.globs("deny", &s.Deny)
	t.globs("env_passthrough", &s.EnvPassthrough)
	t.boolean("inherit_env", &s.InheritEnv)
	p.tags(t, s)
	p.oauth(t, s)
	t.duration("connect_timeout", &s.ConnectTimeout)
	t.duration("call_timeout", &s.CallTimeout)

	p.checkKind(t, s)
	s.Env = p.expandMap(t, "env", s.RawEnv, s.Enabled)
	s.Headers = p.expandMap(t, "headers", s.RawHeaders, s.Enabled)
	p.checkEnv(t, s)
	p.checkHeaders(t, s)
	if s.RawCwd != "" {
		cwd := p.expandOne(t, []string{"cwd"}, s.RawCwd, s.Enabled)
		s.Cwd = p.resolvePath(expandHome(cwd, p.lookup))
	}
	if s.URL != "" && s.Transport == "" {
		s.Transport = TransportAuto
	}
	return s
}

// resolvePath makes a relative path relative to the registry's directory,
// because the hub's working directory is an accident of how it was started.
func (p *parser) resolvePath(v string) string {
	if v == "" || filepath.IsAbs(v) || p.dir == "" {
		return v
	}
	return filepath.Join(p.dir, v)
}

func (p *parser) expandMap(t *table, key string, raw map[string]string, enabled bool) map[string]string {
	if raw == nil {
		return nil
	}
	out := make(map[string]string, len(raw))
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		out[k] = p.expandOne(t, []string{key, k}, raw[k], enabled)
	}
	return out
}

// expandOne expands one value. An unset variable is an error only for an
// enabled server: disabling a server is how a user parks one whose secret is
// not available here.
func (p *parser) expandOne(t *table, sub []string, raw string, enabled bool) string {
	v, unset, err := expand(raw, p.lookup)
	path := append(slices.Clone(t.path), sub...)
	if err != nil {
		p.fail(path, t.server, "%s", err.Error())
		return ""
	}
	if enabled {
		for _, name := range unset {
			e := p.fail(path, t.server, "${%s} is not set in mcphub's environment; export it where mcphub starts, or set enabled = false", name)
			e.unset = true
		}
	}
	return v
}

func (p *parser) fail(path []string, server, format string, args ...any) *Error {
	line, col := p.lay.pos(path)
	e := &Error{File: p.file, Line: line, Col: col, Key: toml.Key(path).String(),
		Msg: fmt.Sprintf(format, args...), server: server}
	p.errs = append(p.errs, e)
	return e
}

// table reads typed keys out of one decoded TOML table, reporting every type
// mismatch at the key's own position.
type table struct {
	p      *parser
	m      map[string]any
	path   []string
	server string
}

func (t *table) has(key string) bool { _, ok := t.m[key]; return ok }

func (t *table) errf(key string, format string, args ...any) *Error {
	return t.at([]string{key}, format, args...)
}

// at reports a problem at a path below the table.
func (t *table) at(sub []string, format string, args ...any) *Error {
	return t.p.fail(append(slices.Clone(t.path), sub...), t.server, format, args...)
}

func (t *table) str(key string, dst *string) bool {
	v, ok := t.m[key]
	if !ok {
		return false
	}
	s, ok := v.(string)
	if !ok {
		t.errf(key, "must be a string, not %s", typeName(v))
		return false
	}
	*dst = s
	return true
}

func (t *table) strs(key string, dst *[]string) bool {
	v, ok := t.m[key]
	if !ok {
		return false
	}
	arr, ok := v.([]any)
	if !ok {
		t.errf(key, "must be an array of strings, like [\"a\", \"b\"], not %s", typeName(v))
		return false
	}
	out := make([]string, 0, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			t.errf(key, "entry %d must be a string, not %s", i+1, typeName(e))
			return false
		}
		out = append(out, s)
	}
	*dst = out
	return true
}

func (t *table) strMap(key string, dst *map[string]string) bool {
	v, ok := t.m[key]
	if !ok {
		return false
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.errf(key, "must be a table of strings, like %s = { NAME = \"value\" }, not %s", key, typeName(v))
		return false
	}
	out := make(map[string]string, len(m))
	good := true
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s, ok := m[k].(string)
		if !ok {
			t.at([]string{key, k}, "must be a string, not %s", typeName(m[k]))
			good = false
			continue
		}
		out[k] = s
	}
	*dst = out
	return good
}

func (t *table) boolean(key string, dst *bool) bool {
	v, ok := t.m[key]
	if !ok {
		return false
	}
	b, ok := v.(bool)
	if !ok {
		t.errf(key, "must be true or false, not %s", typeName(v))
		return false
	}
	*dst = b
	return true
}

// integer reads a positive integer.
func (t *table) integer(key string, dst *int64) bool {
	v, ok := t.m[key]
	if !ok {
		return false
	}
	n, ok := v.(int64)
	if !ok || n <= 0 {
		t.errf(key, "must be a positive integer (e.g. %s = 1048576), not %s", key, describe(v))
		return false
	}
	*dst = n
	return true
}

// count reads a positive integer that counts things, capped at MaxInt32.
func (t *table) count(key string, dst *int) bool {
	var n int64
	if !t.integer(key, &n) {
		return false
	}
	*dst = int(min(n, math.MaxInt32))
	return true
}

// duration reads a positive Go duration string such as "30s".
func (t *table) duration(key string, dst *time.Duration) bool {
	v, ok := t.m[key]
	if !ok {
		return false
	}
	s, ok := v.(string)
	if !ok {
		t.errf(key, "must be a duration string such as \"30s\", \"5m\" or \"1h\", not %s", typeName(v))
		return false
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.errf(key, "%q is not a positive duration; use a Go duration such as \"30s\", \"5m\" or \"1h\"", s)
		return false
	}
	*dst = d
	return true
}

// unknown reports every key not in known, suggesting the closest known one.
func (t *table) unknown(known []string, aliases map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(t.m)) {
		if slices.Contains(known, k) {
			continue
		}
		msg := "unknown key"
		if s := suggest(k, known, aliases); s != "" {
			msg += "; did you mean " + s + "?"
		} else {
			msg += "; valid keys here are " + strings.Join(known, ", ")
		}
		t.errf(k, "%s", msg)
	}
}

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	case []map[string]any:
		return "an array of tables"
	default:
		return "a date or time"
	}
}

// describe names a value's type, or shows a number, for messages about
// values that are not secret.
func describe(v any) string {
	if n, ok := v.(int64); ok {
		return fmt.Sprint(n)
	}
	return typeName(v)
}
