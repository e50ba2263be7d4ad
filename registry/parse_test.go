package registry

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// envOf returns a lookup function over a fixed map, so tests never depend
// on the real environment.
func slogText(b *strings.Builder, s *Server) {
	slog.New(slog.NewTextHandler(b, nil)).Info("x", "server", s)
}

func envOf(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func mustParse(t *testing.T, text string, env func(string) (string, bool)) *Registry {
	t.Helper()
	reg, err := Parse("/cfg/hub.toml", []byte(text), env)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return reg
}

func parseErrors(t *testing.T, text string, env func(string) (string, bool)) Errors {
	t.Helper()
	reg, err := Parse("hub.toml", []byte(text), env)
	if err == nil {
		t.Fatalf("Parse succeeded, want errors; servers: %v", reg.Servers)
	}
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Parse error %T is not Errors: %v", err, err)
	}
	return errs
}

func TestParseDefaults(t *testing.T) {
	reg := mustParse(t, "[servers.a]\ncommand = \"x\"\n[servers.r]\nurl = \"https://h/mcp\"\n", envOf())
	want := Hub{Listen: "127.0.0.1:7733", Auth: "none", TokenEnv: "MCPHUB_TOKEN",
		TokenFile: filepath.Join("/cfg", "token"), Separator: "__", RequestTimeout: 30 * time.Second,
		PostSSE: true, MaxBodyBytes: 4 << 20, MaxResponseBytes: 1 << 20, MaxSessions: 1000, MaxSessionsPerServer: 10,
		SessionTTL: 24 * time.Hour, MaxConnections: 4096, MaxConnectionsPerAddress: 2048,
		StreamBufferBytes: 8 << 20, BufferBytes: 256 << 20,
		EventRetention: 24 * time.Hour, EventRetentionBytes: 16 << 20, StoreMaxBytes: 1 << 30}
	if !reflect.DeepEqual(reg.Hub, want) {
		t.Errorf("hub defaults\n got %+v\nwant %+v", reg.Hub, want)
	}
	a := reg.Server("a")
	if a.Kind() != KindStdio || !a.Enabled || a.Prefix != "a" || a.Share != "server" ||
		a.ConnectTimeout != time.Minute || a.CallTimeout != 5*time.Minute || a.Transport != "" || a.Line != 1 {
		t.Errorf("stdio defaults: %#v", *a)
	}
	r := reg.Server("r")
	if r.Kind() != KindRemote || r.Transport != "auto" || r.Line != 3 {
		t.Errorf("remote defaults: kind %v transport %q line %d", r.Kind(), r.Transport, r.Line)
	}
	if reg.Server("nope") != nil || len(reg.Servers) != 2 || reg.Servers[0].Name != "a" {
		t.Errorf("Server lookup or order wrong: %v", reg.Servers)
	}
}

func TestParseEmptyFile(t *testing.T) {
	reg := mustParse(t, "", envOf())
	if len(reg.Servers) != 0 || reg.Hub.Listen != DefaultListen {
		t.Fatalf("empty file: %+v", reg)
	}
}

func TestParseExpansion(t *testing.T) {
	text := `[servers.a]
command = "x"
cwd = "~/src/${PROJ}"
env = { TOKEN = "${TOK}", LIT = "a$$b", DOLLAR = "pa$word", MIX = "${A}-${B}" }
[servers.rel]
command = "x"
cwd = "work"
[servers.r]
url = "https://h/mcp"
[servers.r.headers]
Authorization = "Bearer ${TOK}"
`
	reg := mustParse(t, text, envOf("HOME", "/home/u", "PROJ", "p", "TOK", "s3cret", "A", "1", "B", "2"))
	a := reg.Server("a")
	wantEnv := map[string]string{"TOKEN": "s3cret", "LIT": "a$b", "DOLLAR": "pa$word", "MIX": "1-2"}
	if !reflect.DeepEqual(a.Env, wantEnv) {
		t.Errorf("env = %v, want %v", a.Env, wantEnv)
	}
	if a.RawEnv["TOKEN"] != "${TOK}" || a.RawCwd != "~/src/${PROJ}" {
		t.Errorf("raw values lost: %v %q", a.RawEnv, a.RawCwd)
	}
	if a.Cwd != filepath.Join("/home/u", "src", "p") {
		t.Errorf("cwd = %q", a.Cwd)
	}
	if got := reg.Server("rel").Cwd; got != filepath.Join("/cfg", "work") {
		t.Errorf("relative cwd = %q, want it next to the registry", got)
	}
	r := reg.Server("r")
	if r.Headers["Authorization"] != "Bearer s3cret" || r.RawHeaders["Authorization"] != "Bearer ${TOK}" {
		t.Errorf("headers = %v raw %v", r.Headers, r.RawHeaders)
	}
	for _, out := range []string{a.String(), r.String(), (*a).GoString()} {
		if strings.Contains(out, "s3cret") || !strings.Contains(out, "=***") {
			t.Errorf("String leaks or hides keys: %s", out)
		}
	}
}

func TestRedactedURL(t *testing.T) {
	reg := mustParse(t, "[servers.r]\nurl = \"https://u:pw@h.example/mcp?api_key=k3y&x=1\"\n", envOf())
	s := reg.Server("r")
	var b strings.Builder
	slogText(&b, s)
	for _, out := range []string{s.String(), b.String()} {
		if strings.Contains(out, "k3y") || strings.Contains(out, "pw") || !strings.Contains(out, "api_key=***") {
			t.Errorf("URL not redacted: %s", out)
		}
	}
}

func TestDisabledServerMayReferenceUnsetVars(t *testing.T) {
	reg := mustParse(t, "[servers.a]\ncommand = \"x\"\nenabled = false\nenv = { T = \"${NOPE}\" }\n", envOf())
	if reg.Server("a").Enabled {
		t.Fatal("enabled")
	}
	// A malformed reference is still an error when disabled.
	errs := parseErrors(t, "[servers.a]\ncommand = \"x\"\nenabled = false\nenv = { T = \"${NOPE\" }\n", envOf())
	if !strings.Contains(errs[0].Msg, "no closing") {
		t.Fatal(errs)
	}
}

func TestSyntaxErrors(t *testing.T) {
	tests := []struct {
		name, text string
		line, col  int
		msg        string
	}{
		{"unclosed header", "[hub]\nlisten = \"x:1\"\n[servers.a\n", 3, 11, "expected"},
		{"unclosed string", "[servers.a]\ncommand = \"npx\n", 2, 15, "newline"},
		{"unquoted value", "[hub]\nlisten = localhost\n", 2, 10, "strings must be quoted"},
		{"duplicate key", "[servers.a]\ncommand = \"x\"\ncommand = \"y\"\n", 3, 1, "already been defined"},
		{"duplicate table", "[servers.a]\n[servers.a]\n", 2, 2, "already been defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := parseErrors(t, tt.text, envOf())
			if len(errs) != 1 {
				t.Fatalf("want 1 error, got %v", errs)
			}
			e := errs[0]
			if e.Line != tt.line || e.Col != tt.col || !strings.Contains(e.Msg, tt.msg) {
				t.Errorf("got %d:%d %q, want %d:%d containing %q", e.Line, e.Col, e.Msg, tt.line, tt.col, tt.msg)
			}
		})
	}
}

func TestUnquotedSecretIsNotEchoed(t *testing.T) {
	errs := parseErrors(t, "[servers.a]\ncommand = \"x\"\nenv = { T = abcdef123456 }\n", envOf())
	if strings.Contains(errs.Error(), "abcdef") {
		t.Fatalf("syntax error echoes the value: %v", errs)
	}
}

func TestErrorFormatAndUnwrap(t *testing.T) {
	text := "[servers.github]\ncommand = \"npx\"\nurl = \"https://x\"\n\n[servers.b]\ncomand = \"x\"\n"
	_, err := Parse("hub.toml", []byte(text), envOf())
	want := "hub.toml:1:1: servers.github: both command and url are set; a server is either stdio (command) or remote (url)\n" +
		"hub.toml:5:1: servers.b: has neither command nor url; set command = \"...\" for a stdio server or url = \"https://...\" for a remote one\n" +
		"hub.toml:6:1: servers.b.comand: unknown key; did you mean command?"
	if err == nil || err.Error() != want {
		t.Fatalf("got\n%v\nwant\n%s", err, want)
	}
	var one *Error
	if !errors.As(err, &one) || one.Line != 1 {
		t.Errorf("errors.As(*Error) = %v", one)
	}
	noKey := &Error{File: "f", Line: 2, Col: 3, Msg: "m"}
	if noKey.Error() != "f:2:3: m" {
		t.Errorf("key omitted: %q", noKey.Error())
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hub.toml")
	if _, err := Load(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	if err := os.WriteFile(path, []byte("[servers.a]\ncommand = \"x\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reg, err := Load(path)
	if err != nil || reg.Path != path || reg.Server("a") == nil {
		t.Fatalf("Load: %v %+v", err, reg)
	}
}

func TestExampleFileIsValid(t *testing.T) {
	data, err := os.ReadFile("../hub.toml.example")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := Parse("hub.toml.example", data, envOf("GITHUB_TOKEN", "ghp_fake", "HOME", "/home/u"))
	if err != nil {
		t.Fatalf("hub.toml.example does not validate:\n%v", err)
	}
	// It documents every key, so every key must be present in it.
	for _, k := range append(append(append([]string{}, hubKeys...), serverKeys...), storeKeys...) {
		if !strings.Contains(string(data), "\n"+k+" = ") && !strings.Contains(string(data), "."+k+"]\n") {
			t.Errorf("hub.toml.example does not show key %q", k)
		}
	}
	if !strings.Contains(string(data), "7733") || reg.Server("github").Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "ghp_fake" {
		t.Error("example lost its port or its env expansion")
	}
	if _, err := Parse("hub.toml.example", data, envOf()); err == nil {
		t.Error("example validates without GITHUB_TOKEN; the test above proves nothing")
	}
}

func TestDefaultRegistryIsValid(t *testing.T) {
	reg, err := Parse("hub.toml", DefaultRegistry(), envOf())
	if err != nil {
		t.Fatal(err)
	}
	d := reg.Server("demo")
	if d == nil || d.Command != "mcphub" || !reflect.DeepEqual(d.Args, []string{"demo"}) || len(reg.Servers) != 1 {
		t.Fatalf("default registry: %v", reg.Servers)
	}
}

func TestAllowsTool(t *testing.T) {
	tests := []struct {
		allow, deny []string
		tool        string
		want        bool
	}{
		{nil, nil, "anything", true},
		{[]string{"create_*"}, nil, "create_issue", true},
		{[]string{"create_*"}, nil, "list_issues", false},
		{nil, []string{"delete_*"}, "delete_repo", false},
		{[]string{"*"}, []string{"delete_*"}, "delete_repo", false},
		{[]string{"get_?"}, nil, "get_x", true},
	}
	for _, tt := range tests {
		s := &Server{Allow: tt.allow, Deny: tt.deny}
		if got := s.AllowsTool(tt.tool); got != tt.want {
			t.Errorf("allow %v deny %v: AllowsTool(%q) = %v", tt.allow, tt.deny, tt.tool, got)
		}
	}
}

func TestHashCoversConnectionFieldsOnly(t *testing.T) {
	base := func() *Server {
		return &Server{Name: "a", Command: "x", Args: []string{"1"}, Env: map[string]string{"K": "v"},
			Enabled: true, Prefix: "a", Share: "server", ConnectTimeout: time.Minute, CallTimeout: time.Minute}
	}
	h := base().Hash()
	same := []func(*Server){
		func(s *Server) { s.Enabled = false },
		func(s *Server) { s.Prefix = "" },
		func(s *Server) { s.Allow = []string{"x"} },
		func(s *Server) { s.Deny = []string{"x"} },
		func(s *Server) { s.CallTimeout = time.Hour },
		func(s *Server) { s.RawEnv = map[string]string{"K": "${V}"}; s.Line = 9 },
	}
	differ := []func(*Server){
		func(s *Server) { s.Command = "y" },
		func(s *Server) { s.Args = []string{"1", "2"} },
		func(s *Server) { s.Args = []string{"12"} },
		func(s *Server) { s.Env["K"] = "w" },
		func(s *Server) { s.Cwd = "/" },
		func(s *Server) { s.URL = "https://h" },
		func(s *Server) { s.Transport = "sse" },
		func(s *Server) { s.Headers = map[string]string{"A": "b"} },
		func(s *Server) { s.Share = "session" },
		func(s *Server) { s.Protocol = "2026-07-28" },
		func(s *Server) { s.ConnectTimeout = time.Hour },
	}
	for i, f := range same {
		s := base()
		f(s)
		if s.Hash() != h {
			t.Errorf("same[%d] changed the hash", i)
		}
	}
	for i, f := range differ {
		s := base()
		f(s)
		if s.Hash() == h {
			t.Errorf("differ[%d] kept the hash", i)
		}
	}
}

// TestProtocolKey: protocol is "auto" by default, takes a revision mcphub
// speaks, and refuses anything else at its position.
func TestProtocolKey(t *testing.T) {
	reg := mustParse(t, "[servers.a]\ncommand = \"x\"\n[servers.b]\ncommand = \"x\"\nprotocol = \"2025-11-25\"\n", envOf())
	if a, b := reg.Server("a"), reg.Server("b"); a.Protocol != ProtocolAuto || a.ProtocolVersion() != "" || b.ProtocolVersion() != "2025-11-25" || b.Spec().Protocol != "2025-11-25" || a.Spec().Protocol != "" {
		t.Errorf("a %q, b %q", a.Protocol, b.Protocol)
	}
	errs := parseErrors(t, "[servers.a]\ncommand = \"x\"\nprotocol = \"2027-01-01\"\n", envOf())
	if msg := errs.Error(); !strings.Contains(msg, "hub.toml:3:") || !strings.Contains(msg, "2026-07-28") {
		t.Errorf("error = %s", msg)
	}
	errs = parseErrors(t, "[servers.a]\nurl = \"https://h/sse\"\ntransport = \"sse\"\nprotocol = \"2026-07-28\"\n", envOf())
	if msg := errs.Error(); !strings.Contains(msg, "hub.toml:4:") || !strings.Contains(msg, "legacy HTTP+SSE") {
		t.Errorf("2026-07-28 over sse: %s", msg)
	}
}

func TestSpecRoundTrip(t *testing.T) {
	reg := mustParse(t, `[servers.a]
command = "x"
env = { T = "${TOK}" }
prefix = ""
call_timeout = "10m"
`, envOf("TOK", "v"))
	sp := reg.Server("a").Spec()
	if sp.Env["T"] != "${TOK}" || sp.Prefix == nil || *sp.Prefix != "" || sp.CallTimeout != 10*time.Minute ||
		sp.ConnectTimeout != 0 || sp.Transport != "" || sp.Share != "" {
		t.Fatalf("Spec = %+v", sp)
	}
}

func TestExpand(t *testing.T) {
	env := envOf("A", "1", "EMPTY", "")
	tests := []struct {
		in, out string
		unset   []string
		err     string
	}{
		{"plain", "plain", nil, ""},
		{"${A}${A}", "11", nil, ""},
		{"$${A}", "${A}", nil, ""},
		{"a$b$", "a$b$", nil, ""},
		{"${EMPTY}x", "x", nil, ""},
		{"${X}-${Y}", "-", []string{"X", "Y"}, ""},
		{"${A", "", nil, "no closing"},
		{"${}", "", nil, "does not start a valid variable reference"},
		{"${1A}", "", nil, "does not start a valid variable reference"},
		{"${X}:pa${ss-w0rd}", "", []string{"X"}, "character 8 does not start"},
		{"${X}${Y", "", []string{"X"}, "no closing"},
		{"${env:TOKEN}", "", nil, "write ${TOKEN}"},
	}
	for _, tt := range tests {
		out, unset, err := expand(tt.in, env)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("expand(%q) err = %v, want %q", tt.in, err, tt.err)
			}
			if err != nil && strings.Contains(err.Error(), "w0rd") {
				t.Errorf("expand(%q) err = %v quotes the value", tt.in, err)
			}
			if !reflect.DeepEqual(unset, tt.unset) {
				t.Errorf("expand(%q) unset = %v, want the references before the bad one, %v", tt.in, unset, tt.unset)
			}
			continue
		}
		if err != nil || out != tt.out || !reflect.DeepEqual(unset, tt.unset) {
			t.Errorf("expand(%q) = %q %v %v, want %q %v", tt.in, out, unset, err, tt.out, tt.unset)
		}
	}
}
