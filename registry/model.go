package registry

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/redact"
)

// Defaults for every key that hub.toml may leave out.
const (
	// DefaultListen is loopback on port 7733, mcphub's default port.
	DefaultListen = "127.0.0.1:7733"
	// DefaultAuth accepts local clients without a token.
	DefaultAuth = AuthNone
	// DefaultTokenEnv names the variable that holds the token for auth = "token".
	DefaultTokenEnv = "MCPHUB_TOKEN"
	// DefaultSeparator joins prefix and name, as in github__create_issue.
	DefaultSeparator = "__"
	// DefaultRequestTimeout bounds upstream requests other than calls.
	DefaultRequestTimeout = 30 * time.Second
	// DefaultMaxBodyBytes limits a request body to 4 MiB.
	DefaultMaxBodyBytes = 4 << 20
	// DefaultMaxResponseBytes limits one upstream response to 1 MiB.
	DefaultMaxResponseBytes = 1 << 20
	// DefaultMaxSessionsPerServer caps sessions on one /{server}/mcp.
	DefaultMaxSessionsPerServer = 10
	// DefaultSessionTTL keeps an idle session for a day.
	DefaultSessionTTL = 24 * time.Hour
	// DefaultMaxSessions caps the live sessions on /mcp.
	DefaultMaxSessions = 1000
	// DefaultMaxConnections caps the hub's open client connections.
	DefaultMaxConnections = 4096
	// DefaultMaxConnectionsPerAddress caps one client address's
	// connections. Every local client shares the loopback address, so it
	// leaves room for max_sessions sessions with a GET stream and a POST
	// each.
	DefaultMaxConnectionsPerAddress = 2048
	// DefaultStreamBufferBytes is the memory one SSE stream may hold for
	// its reader: 8 MiB.
	DefaultStreamBufferBytes = 8 << 20
	// DefaultBufferBytes is the memory all SSE streams together may hold:
	// 256 MiB.
	DefaultBufferBytes = 256 << 20
	// DefaultEventRetention keeps stored events as long as idle sessions.
	DefaultEventRetention = 24 * time.Hour
	// DefaultEventRetentionBytes keeps up to 16 MiB of events per session.
	DefaultEventRetentionBytes = 16 << 20
	// DefaultStoreMaxBytes keeps up to 1 GiB of events in the store.
	DefaultStoreMaxBytes = 1 << 30
	// DefaultConnectTimeout is generous because npx cold starts are slow.
	DefaultConnectTimeout = 60 * time.Second
	// DefaultCallTimeout bounds a tools/call.
	DefaultCallTimeout = 5 * time.Minute
)

// Values of hub.auth.
const (
	// AuthNone accepts every request that passes the Origin and Host checks.
	AuthNone = "none"
	// AuthToken requires "Authorization: Bearer <token>" on every request.
	AuthToken = "token"
)

// Values of a server's transport key.
const (
	// TransportAuto tries Streamable HTTP first and falls back to the legacy
	// HTTP+SSE transport.
	TransportAuto = "auto"
	// TransportStreamableHTTP speaks only Streamable HTTP.
	TransportStreamableHTTP = "streamable-http"
	// TransportSSE speaks only the legacy HTTP+SSE transport.
	TransportSSE = "sse"
)

// ProtocolAuto is the default of a server's protocol key: over Streamable
// HTTP the hub asks server/discover first and speaks 2026-07-28 to a server
// that offers it, and keeps a session beside it for session-era clients
// when the server keeps sessions too; over stdio it initializes a session
// and asks server/discover only when the server refuses initialize.
const ProtocolAuto = "auto"

// Values of a server's share key.
const (
	// ShareServer shares one upstream connection among all downstream
	// sessions; it is the default.
	ShareServer = "server"
	// ShareSession opens one upstream connection per downstream session, for
	// servers whose roots or sampling must belong to exactly one client.
	ShareSession = "session"
)

// Values of a stdio server's replicas key, which matters on a team hub
// (replicas sharing a PostgreSQL store).
const (
	// ReplicasEach runs the server's process on every replica; it is the
	// default.
	ReplicasEach = "each"
	// ReplicasOne runs one process cluster-wide, on one replica at a time;
	// the others reach it through that replica.
	ReplicasOne = "one"
)

// Registry is one parsed and validated hub.toml.
type Registry struct {
	// Path is the file the registry was read from, as given.
	Path string
	// Hub holds the [hub] settings, with defaults filled in.
	Hub Hub
	// Servers holds every [servers.NAME] entry, sorted by name, including
	// disabled ones.
	Servers []*Server
	// Profiles holds every [profiles.NAME] table, sorted by name.
	Profiles []*Profile
	// Overrides are the [overrides."SERVER__TOOL"] tables: changes to
	// tools in /mcp and every profile, by qualified name (see Profile).
	Overrides map[string]*ToolOverride
	// Store is the [store] table: where sessions and events are kept.
	Store Store
}

// Store is the [store] table. Without a URL the hub keeps its store in
// SQLite in the data directory; a team's replicas share a PostgreSQL
// database named by URL.
type Store struct {
	// URL is the database URL as written, ${NAME} references unexpanded
	// (it may hold a password): postgres://user:password@host:port/db.
	// StoreURL expands it.
	URL string
}

// Server returns the server called name, or nil when there is none.
func (r *Registry) Server(name string) *Server {
	if r == nil {
		return nil
	}
	for _, s := range r.Servers {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Hub is the [hub] table: how mcphub itself listens and behaves.
type Hub struct {
	// Listen is the host:port of the HTTP endpoint.
	Listen string
	// Auth is AuthNone or AuthToken.
	Auth string
	// TokenEnv names the environment variable that holds the bearer token;
	// when it is unset or empty the token is read from TokenFile.
	TokenEnv string
	// TokenFile is the path of a file holding the token, with "~" expanded;
	// it defaults to "token" next to the registry file.
	TokenFile string
	// Separator joins a server's prefix and a tool name in the merged view.
	Separator string
	// RequestTimeout bounds upstream requests other than calls.
	RequestTimeout time.Duration
	// PostSSE lets the hub answer a POST with an SSE stream.
	PostSSE bool
	// AllowedOrigins lists extra allowed Origin values, besides loopback ones.
	AllowedOrigins []string
	// MaxBodyBytes limits a request body.
	MaxBodyBytes int64
	// MaxResponseBytes limits one upstream response.
	MaxResponseBytes int64
	// MaxSessions caps the live downstream sessions on /mcp, and on each
	// profile's endpoint.
	MaxSessions int
	// MaxSessionsPerServer caps the live downstream sessions on one
	// /{server}/mcp.
	MaxSessionsPerServer int
	// MaxConnections caps the open client connections of the hub, and
	// MaxConnectionsPerAddress those of one client address.
	MaxConnections, MaxConnectionsPerAddress int
	// StreamBufferBytes bounds the events one SSE stream holds in memory
	// for its reader, BufferBytes those of all streams together.
	StreamBufferBytes, BufferBytes int64
	// EventRetention and EventRetentionBytes bound the stored events of a
	// session by age and by size; StoreMaxBytes bounds all stored events.
	EventRetention                     time.Duration
	EventRetentionBytes, StoreMaxBytes int64
	// AuditLogBodies adds request and response bodies to the audit log.
	AuditLogBodies bool
	// SessionTTL is how long an idle downstream session is kept.
	SessionTTL time.Duration
	// EnvPassthrough lists more names (path.Match globs, such as "AWS_*")
	// of mcphub's environment that every stdio server gets besides the safe
	// set the client package documents.
	EnvPassthrough []string
	// OAuth, when set, lets callers sign in with the team's identity
	// provider ([hub.oauth]); Access then says what each may reach
	// ([hub.access]).
	OAuth  *HubOAuth
	Access *Access
	// Limits are each caller's limits by default ([hub.limits]).
	Limits Limits
	// TLSCert and TLSKey are the paths of a PEM certificate (chain) and
	// its key, with "~" expanded; when set the hub serves HTTPS (and
	// HTTP/2). Both or neither.
	TLSCert, TLSKey string
}

// URL is the address of path on a hub with these settings: https when it
// serves TLS.
func (h Hub) URL(path string) string {
	if h.TLSCert != "" {
		return "https://" + h.Listen + path
	}
	return "http://" + h.Listen + path
}

// ExposureProblem says what a hub listening on h.Listen lacks to be safe
// from other machines, with the fix; "" when it listens on loopback only,
// or has both token auth and TLS (without TLS the token itself would cross
// the network in the clear).
func (h Hub) ExposureProblem() string {
	if LoopbackListen(h.Listen) {
		return ""
	}
	var missing []string
	if h.Auth != AuthToken {
		missing = append(missing, `auth = "token" (see mcphub token)`)
	}
	if h.TLSCert == "" || h.TLSKey == "" {
		missing = append(missing, "tls_cert and tls_key (a PEM certificate and its key)")
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("%q is reachable from other machines, which needs token auth and TLS; set %s in [hub], or listen on 127.0.0.1", h.Listen, strings.Join(missing, " and "))
}

// Kind says how mcphub reaches a server.
type Kind string

// The two kinds of server.
const (
	// KindStdio is a child process spoken to over stdin and stdout.
	KindStdio Kind = "stdio"
	// KindRemote is an HTTP endpoint.
	KindRemote Kind = "remote"
)

// Server is one [servers.NAME] table, with defaults filled in and ${VAR}
// references expanded. Its String, GoString and LogValue methods never show
// env or header values, so a *Server is safe to print and to log.
type Server struct {
	// Name is the table name, 1-32 characters of a-z, 0-9 and '-'.
	Name string

	// Command is the program of a stdio server; empty for a remote one.
	Command string
	// Args are passed to Command as they are written (no expansion).
	Args []string
	// Env holds the expanded values added to the child's environment.
	Env map[string]string
	// Cwd is the expanded working directory; relative paths are resolved
	// against the registry file's directory. Empty means the hub's own.
	Cwd string

	// EnvPassthrough lists more names (globs) of mcphub's environment this
	// server gets, as its entry writes them; InheritEnv passes the whole
	// environment but the registry's secrets.
	EnvPassthrough []string
	InheritEnv     bool
	// EnvAllow and EnvDeny are what the child's inherited environment is
	// built from: EnvAllow is EnvPassthrough with [hub] env_passthrough;
	// EnvDeny names what it must never inherit, the hub's token variable
	// and, with InheritEnv, every variable the registry gives to servers
	// (see SecretEnvNames). Env, the entry's own values, always passes.
	EnvAllow, EnvDeny []string

	// URL is the endpoint of a remote server; empty for a stdio one.
	URL string
	// Transport is TransportAuto, TransportStreamableHTTP or TransportSSE
	// for a remote server, and empty for a stdio one.
	Transport string
	// Headers holds the expanded HTTP headers sent to a remote server.
	Headers map[string]string

	// OAuth holds a remote server's sign-in settings; nil when its entry
	// has none.
	OAuth *OAuth

	// RawEnv, RawHeaders and RawCwd are the values as written in the file,
	// before expansion; they are what an edit may write back.
	RawEnv     map[string]string
	RawHeaders map[string]string
	RawCwd     string

	// Enabled is false when the server is listed but not started.
	Enabled bool
	// Prefix namespaces the server's names in the merged view; it defaults
	// to Name, and "" means unprefixed.
	Prefix string
	// Share is ShareServer or ShareSession.
	Share string
	// Replicas is ReplicasEach or ReplicasOne (stdio servers only).
	Replicas string
	// Protocol is ProtocolAuto (the era is found when connecting) or the
	// protocol revision to speak: a session-era one, or 2026-07-28.
	Protocol string
	// Allow and Deny are tool-name globs in path.Match syntax.
	Allow, Deny []string
	// Tags are labels profiles choose servers by.
	Tags []string
	// ConnectTimeout bounds starting or connecting and initializing.
	ConnectTimeout time.Duration
	// CallTimeout bounds tools/call and other long requests.
	CallTimeout time.Duration

	// Line is the line of the server's table header (or of its first key).
	Line int

	// Problem, when set, says why the hub cannot serve this entry (each
	// problem as file:line:col: key: message, one per line). Only
	// ParseServing and LoadServing keep such a server; Parse refuses the
	// file instead.
	Problem string
	// problemID is Problem without positions, which Hash covers so that an
	// edit elsewhere in the file that only moves the entry does not count
	// as a change of it.
	problemID string
}

// CheckProtocol checks a protocol key's value: ProtocolAuto or a revision
// mcphub speaks.
func CheckProtocol(v string) error {
	if v == ProtocolAuto || slices.Contains(jsonrpc.Versions, v) {
		return nil
	}
	return fmt.Errorf("%q is not a protocol revision mcphub speaks; use %q (the default) or one of %s", v, ProtocolAuto, strings.Join(jsonrpc.Versions, ", "))
}

// ProtocolVersion is the revision the server is pinned to, "" for auto.
func (s *Server) ProtocolVersion() string {
	if s.Protocol == ProtocolAuto {
		return ""
	}
	return s.Protocol
}

// Kind reports whether the server is a stdio or a remote server.
func (s *Server) Kind() Kind {
	if s.URL != "" {
		return KindRemote
	}
	return KindStdio
}

// Hash is a digest of the fields that need a new connection when they change:
// command, args, expanded env, what the child inherits (EnvAllow, EnvDeny,
// InheritEnv), cwd, url, transport, expanded headers, oauth, share,
// connect_timeout and Problem. Enabled, prefix, allow, deny and call_timeout are not
// part of it, because the hub applies them to a running connection. The hash
// covers secret values, so compare it; do not show it.
func (s *Server) Hash() string {
	h := sha256.New()
	put := func(v string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(v)))
		h.Write(n[:])
		h.Write([]byte(v))
	}
	putMap := func(m map[string]string) {
		put(fmt.Sprint(len(m)))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			put(k)
			put(m[k])
		}
	}
	put("mcphub-server-v1")
	put(s.Command)
	put(fmt.Sprint(len(s.Args)))
	for _, a := range s.Args {
		put(a)
	}
	putMap(s.Env)
	put(s.Cwd)
	put(s.URL)
	put(s.Transport)
	putMap(s.Headers)
	put(s.Share)
	put(s.Replicas)
	put(s.Protocol)
	put(s.ConnectTimeout.String())
	put(fmt.Sprint(s.InheritEnv))
	if o := s.OAuth; o != nil {
		put("oauth")
		put(o.ClientID)
		put(o.ClientSecret)
		put(o.ClientMetadataURL)
		put(fmt.Sprint(len(o.Scopes)))
		for _, sc := range o.Scopes {
			put(sc)
		}
	}
	for _, l := range [][]string{s.EnvAllow, s.EnvDeny} {
		put(fmt.Sprint(len(l)))
		for _, v := range l {
			put(v)
		}
	}
	switch {
	case s.problemID != "":
		put(s.problemID)
	default:
		put(s.Problem)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// AllowsTool reports whether a tool of this server is exposed: no deny glob
// matches it, and either there are no allow globs or one of them matches.
// The globs were checked when the registry was parsed.
func (s *Server) AllowsTool(name string) bool {
	return !matchesAny(s.Deny, name) && (len(s.Allow) == 0 || matchesAny(s.Allow, name))
}

// String describes the server on one line with env and header values
// replaced by ***, and the URL's password and query values redacted.
func (s Server) String() string {
	var b strings.Builder
	b.WriteString(s.Name)
	if !s.Enabled {
		b.WriteString(" (disabled)")
	}
	if s.URL != "" {
		fmt.Fprintf(&b, ": %s %s", s.Transport, redact.URL(s.URL))
		writeRedacted(&b, "headers", s.Headers)
	} else {
		b.WriteString(": ")
		b.WriteString(s.Command)
		for _, a := range s.Args {
			b.WriteByte(' ')
			b.WriteString(a)
		}
		writeRedacted(&b, "env", s.Env)
		if s.Cwd != "" {
			fmt.Fprintf(&b, " cwd=%s", s.Cwd)
		}
	}
	return b.String()
}

// GoString keeps %#v from printing env and header values.
func (s Server) GoString() string { return "registry.Server{" + s.String() + "}" }

// LogValue makes slog print the server without secret values.
func (s Server) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("name", s.Name), slog.String("kind", string(s.Kind()))}
	if s.URL != "" {
		attrs = append(attrs, slog.String("url", redact.URL(s.URL)))
	} else {
		attrs = append(attrs, slog.String("command", s.Command))
	}
	return slog.GroupValue(attrs...)
}

func writeRedacted(b *strings.Builder, label string, m map[string]string) {
	if len(m) == 0 {
		return
	}
	fmt.Fprintf(b, " %s{%s}", label, redact.Keys(m))
}

// Spec returns the server as the user wrote it: unexpanded env, headers and
// cwd, and only the settings that differ from their defaults.
func (s *Server) Spec() ServerSpec {
	sp := ServerSpec{
		Name:     s.Name,
		Command:  s.Command,
		Args:     slices.Clone(s.Args),
		Env:      maps.Clone(s.RawEnv),
		Cwd:      s.RawCwd,
		URL:      s.URL,
		Headers:  maps.Clone(s.RawHeaders),
		Disabled: !s.Enabled,
		Allow:    slices.Clone(s.Allow),
		Deny:     slices.Clone(s.Deny),
		Tags:     slices.Clone(s.Tags),

		EnvPassthrough: slices.Clone(s.EnvPassthrough),
		InheritEnv:     s.InheritEnv,
	}
	if o := s.OAuth; o != nil {
		sp.OAuth = &OAuth{ClientID: o.ClientID, RawClientSecret: o.RawClientSecret, Scopes: slices.Clone(o.Scopes), ClientMetadataURL: o.ClientMetadataURL}
	}
	if s.Transport != TransportAuto {
		sp.Transport = s.Transport
	}
	if s.Share != ShareServer {
		sp.Share = s.Share
	}
	if s.Protocol != ProtocolAuto {
		sp.Protocol = s.Protocol
	}
	if s.Prefix != s.Name {
		p := s.Prefix
		sp.Prefix = &p
	}
	if s.ConnectTimeout != DefaultConnectTimeout {
		sp.ConnectTimeout = s.ConnectTimeout
	}
	if s.CallTimeout != DefaultCallTimeout {
		sp.CallTimeout = s.CallTimeout
	}
	return sp
}

// ServerSpec is a server as the user gives it to AddServer or as
// clientconf.Import reads it: raw values (a "${TOKEN}" stays unexpanded),
// and zero values meaning "leave the key out and use the default".
type ServerSpec struct {
	// Name is the server's table name.
	Name string
	// Command, Args, Env and Cwd describe a stdio server.
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string
	// EnvPassthrough and InheritEnv choose what of mcphub's environment a
	// stdio server inherits (see Server).
	EnvPassthrough []string
	InheritEnv     bool
	// URL, Transport and Headers describe a remote server.
	URL       string
	Transport string
	Headers   map[string]string
	// OAuth is written as the oauth table when set (its RawClientSecret).
	OAuth *OAuth
	// Disabled writes enabled = false.
	Disabled bool
	// Prefix is nil for the default (the name); a pointer to "" means
	// unprefixed.
	Prefix *string
	// Share, Protocol, Allow, Deny, Tags, ConnectTimeout and CallTimeout
	// are written when they are set.
	Share          string
	Protocol       string
	Allow, Deny    []string
	Tags           []string
	ConnectTimeout time.Duration
	CallTimeout    time.Duration
}
