package registry

import (
	"strings"
	"testing"
)

// TestValidationRules has one row per rule: the file, the line (and column)
// the first error must point at, its key and a piece of its message.
func TestValidationRules(t *testing.T) {
	const ok = "[servers.ok]\ncommand = \"x\"\n" // two lines of valid padding
	tests := []struct {
		name      string
		text      string
		line, col int
		key, msg  string
	}{
		// unknown keys, with suggestions
		{"unknown server key", ok + "[servers.a]\ncommand = \"x\"\ncomand = \"y\"\n", 5, 1, "servers.a.comand", "unknown key; did you mean command?"},
		{"unknown key from JSON configs", "[servers.a]\nurl = \"https://h\"\ntype = \"sse\"\n", 3, 1, "servers.a.type", "did you mean transport?"},
		{"unknown key wrong case", "[servers.a]\nCommand = \"x\"\n", 2, 1, "servers.a.Command", "did you mean command?"},
		{"unknown hub key", "[hub]\n  listen_address = \"x\"\n", 2, 3, "hub.listen_address", "valid keys here are listen, auth"},
		{"unknown table", "[server.a]\ncommand = \"x\"\n", 1, 1, "server", "did you mean servers?"},
		{"unknown dotted key", "[servers.a]\ncommand = \"x\"\nenv.A = \"1\"\nfoo.bar = 1\n", 4, 1, "servers.a.foo", "unknown key"},
		// server names and prefixes
		{"name pattern", ok + "[servers.GitHub]\ncommand = \"x\"\n", 3, 1, "servers.GitHub", `not valid; use 1-32 characters of a-z, 0-9 and '-', starting with a letter or digit (e.g. "github")`},
		{"quoted name", "[servers.\"my server\"]\ncommand = \"x\"\n", 1, 1, `servers."my server"`, `(e.g. "my-server")`},
		{"name too long", "[servers.a123456789012345678901234567890123]\ncommand = \"x\"\n", 1, 1, "", "not valid"},
		{"prefix pattern", "[servers.a]\ncommand = \"x\"\nprefix = \"a b\"\n", 3, 1, "servers.a.prefix", `use "" for no prefix, or 1-32 characters`},
		{"duplicate prefix", "[servers.a]\ncommand = \"x\"\n\n[servers.b]\ncommand = \"y\"\nprefix = \"a\"\n", 6, 1, "servers.b.prefix", `prefix "a" is also used by server "a" (line 1)`},
		{"duplicate prefix default", "[servers.b]\ncommand = \"y\"\nprefix = \"a\"\n[servers.a]\ncommand = \"x\"\n", 4, 1, "servers.a.prefix", `also used by server "b" (line 1)`},
		{"prefix contains separator", "[hub]\nseparator = \"-\"\n[servers.my-srv]\ncommand = \"x\"\n", 3, 1, "servers.my-srv.prefix", `contains the separator "-"`},
		// stdio or remote
		{"both command and url", ok + "[servers.github]\ncommand = \"npx\"\nurl = \"https://h\"\n", 3, 1, "servers.github", "both command and url are set; a server is either stdio (command) or remote (url)"},
		{"neither command nor url", ok + "[servers.a]\nenabled = true\n", 3, 1, "servers.a", "has neither command nor url"},
		{"empty command", "[servers.a]\ncommand = \"\"\n", 2, 1, "servers.a.command", "must not be empty"},
		{"args on remote", "[servers.a]\nurl = \"https://h\"\nargs = [\"x\"]\n", 3, 1, "servers.a.args", "args applies only to stdio servers (command)"},
		{"env on remote", "[servers.a]\nurl = \"https://h\"\n\n[servers.a.env]\nA = \"1\"\n", 4, 1, "servers.a.env", "env applies only to stdio servers"},
		{"cwd on remote", "[servers.a]\nurl = \"https://h\"\ncwd = \"/\"\n", 3, 1, "servers.a.cwd", "cwd applies only to stdio servers"},
		{"transport on stdio", "[servers.a]\ncommand = \"x\"\ntransport = \"sse\"\n", 3, 1, "servers.a.transport", "transport applies only to remote servers (url)"},
		{"headers on stdio", "[servers.a]\ncommand = \"x\"\nheaders = { A = \"b\" }\n", 3, 1, "servers.a.headers", "headers applies only to remote servers"},
		{"transport value", "[servers.a]\nurl = \"https://h\"\ntransport = \"websocket\"\n", 3, 1, "servers.a.transport", `use "auto" (the default), "streamable-http" or "sse"`},
		{"url scheme", "[servers.a]\nurl = \"ftp://h/x\"\n", 2, 1, "servers.a.url", `http:// or https:// URL with a host, e.g. "https://example.com/mcp"; its scheme is "ftp"`},
		{"url host", "[servers.a]\nurl = \"https:///mcp\"\n", 2, 1, "servers.a.url", "it has no host"},
		{"share value", "[servers.a]\ncommand = \"x\"\nshare = \"global\"\n", 3, 1, "servers.a.share", `use "server"`},
		// globs
		{"allow pattern", "[servers.a]\ncommand = \"x\"\nallow = [\"ok_*\", \"[bad\"]\n", 3, 1, "servers.a.allow", `"[bad" is not a valid pattern; use path.Match syntax`},
		{"deny empty pattern", "[servers.a]\ncommand = \"x\"\ndeny = [\"\"]\n", 3, 1, "servers.a.deny", "an empty pattern matches nothing"},
		// durations and numbers
		{"duration syntax", "[servers.a]\ncommand = \"x\"\nconnect_timeout = \"soon\"\n", 3, 1, "servers.a.connect_timeout", `"soon" is not a positive duration; use a Go duration such as "30s"`},
		{"duration zero", "[hub]\nrequest_timeout = \"0s\"\n", 2, 1, "hub.request_timeout", "not a positive duration"},
		{"duration negative", "[hub]\nsession_ttl = \"-1h\"\n", 2, 1, "hub.session_ttl", "not a positive duration"},
		{"duration type", "[servers.a]\ncommand = \"x\"\ncall_timeout = 30\n", 3, 1, "servers.a.call_timeout", "must be a duration string"},
		{"integer zero", "[hub]\nmax_body_bytes = 0\n", 2, 1, "hub.max_body_bytes", "must be a positive integer"},
		{"integer type", "[hub]\nmax_sessions_per_server = \"10\"\n", 2, 1, "hub.max_sessions_per_server", "must be a positive integer"},
		// hub
		{"auth value", "[hub]\nauth = \"password\"\n", 2, 1, "hub.auth", `use "none" or "token"`},
		{"token_env name", "[hub]\ntoken_env = \"1TOKEN\"\n", 2, 1, "hub.token_env", "not an environment variable name"},
		{"separator chars", "[hub]\nseparator = \"::\"\n", 2, 1, "hub.separator", "use 1-4 characters of '_', '.' and '-'"},
		{"separator length", "[hub]\nseparator = \"_____\"\n", 2, 1, "hub.separator", "1-4 characters"},
		{"origin trailing slash", "[hub]\nallowed_origins = [\"https://a.example\", \"https://b.example/\"]\n", 2, 1, "hub.allowed_origins", `entry 2 ("https://b.example/") has a trailing slash`},
		{"origin wildcard", "[hub]\nallowed_origins = [\"*\"]\n", 2, 1, "hub.allowed_origins", "is not an origin; an origin is scheme://host[:port]"},
		{"origin path", "[hub]\nallowed_origins = [\"https://a.example/app\"]\n", 2, 1, "hub.allowed_origins", "has a path"},
		{"listen not host:port", "[hub]\nlisten = \"7733\"\n", 2, 1, "hub.listen", `"7733" is not host:port; use e.g. "127.0.0.1:7733"`},
		{"listen port", "[hub]\nlisten = \"127.0.0.1:99999\"\n", 2, 1, "hub.listen", "no valid port"},
		{"listen public without auth", "[hub]\nlisten = \"0.0.0.0:7733\"\n", 2, 1, "hub.listen", `reachable from other machines, which needs token auth and TLS; set auth = "token" (see mcphub token) and tls_cert and tls_key`},
		{"listen public without TLS", "[hub]\nauth = \"token\"\nlisten = \"0.0.0.0:7733\"\n", 3, 1, "hub.listen", `needs token auth and TLS; set tls_cert and tls_key (a PEM certificate and its key) in [hub], or listen on 127.0.0.1`},
		{"listen public without token", "[hub]\nlisten = \"0.0.0.0:7733\"\ntls_cert = \"c.pem\"\ntls_key = \"k.pem\"\n", 2, 1, "hub.listen", `needs token auth and TLS; set auth = "token" (see mcphub token) in [hub]`},
		{"tls cert without key", "[hub]\ntls_cert = \"c.pem\"\n", 2, 1, "hub.tls_cert", "tls_key is not; set both"},
		{"tls key without cert", "[hub]\ntls_key = \"k.pem\"\n", 2, 1, "hub.tls_key", "tls_cert is not; set both"},
		{"hub not a table", "hub = 1\n", 1, 1, "hub", "hub must be a table"},
		// types
		{"args not array", "[servers.a]\ncommand = \"x\"\nargs = \"-y\"\n", 3, 1, "servers.a.args", `must be an array of strings, like ["a", "b"], not a string`},
		{"args element", "[servers.a]\ncommand = \"x\"\nargs = [\"a\", 1]\n", 3, 1, "servers.a.args", "entry 2 must be a string, not an integer"},
		{"enabled type", "[servers.a]\ncommand = \"x\"\nenabled = \"yes\"\n", 3, 1, "servers.a.enabled", "must be true or false, not a string"},
		{"env type", "[servers.a]\ncommand = \"x\"\nenv = \"A=1\"\n", 3, 1, "servers.a.env", "must be a table of strings"},
		{"env value type", "[servers.a]\ncommand = \"x\"\n[servers.a.env]\nPORT = 80\n", 4, 1, "servers.a.env.PORT", "must be a string, not an integer"},
		{"server not a table", "[servers]\na = \"npx\"\n", 2, 1, "servers.a", "a server must be a table"},
		{"servers not a table", "servers = [\"a\"]\n", 1, 1, "servers", "servers must be a table"},
		// env and headers
		{"unset variable", ok + "[servers.github]\ncommand = \"npx\"\n\n[servers.github.env]\nGITHUB_TOKEN = \"${GITHUB_TOKEN}\"\n", 7, 1, "servers.github.env.GITHUB_TOKEN", "${GITHUB_TOKEN} is not set in mcphub's environment"},
		{"unset variable inline", "[servers.a]\ncommand = \"x\"\nenv = { OK = \"1\", T = \"x${NOPE}\" }\n", 3, 19, "servers.a.env.T", "${NOPE} is not set"},
		{"unset variable in cwd", "[servers.a]\ncommand = \"x\"\ncwd = \"${WORK}/x\"\n", 3, 1, "servers.a.cwd", "${WORK} is not set"},
		{"unset variable in header", "[servers.a]\nurl = \"https://h\"\n[servers.a.headers]\nAuthorization = \"Bearer ${TOKEN}\"\n", 4, 1, "servers.a.headers.Authorization", "${TOKEN} is not set"},
		{"unclosed reference", "[servers.a]\ncommand = \"x\"\n[servers.a.env]\nT = \"${TOKEN\"\n", 4, 1, "servers.a.env.T", `"${" at character 1 has no closing "}"`},
		{"bad variable name", "[servers.a]\ncommand = \"x\"\nenv.T = \"${input:tok}\"\n", 3, 1, "servers.a.env.T", `"${input:...}" at character 1 is a VS Code prompt`},
		{"env name", "[servers.a]\ncommand = \"x\"\nenv = { \"A=B\" = \"1\" }\n", 3, 9, `servers.a.env."A=B"`, "contain no '='"},
		{"header name", "[servers.a]\nurl = \"https://h\"\nheaders = { \"Bad Header\" = \"1\" }\n", 3, 13, `servers.a.headers."Bad Header"`, "not an HTTP header name"},
		{"reserved header", "[servers.a]\nurl = \"https://h\"\nheaders.mcp-session-id = \"1\"\n", 3, 1, "servers.a.headers.mcp-session-id", "mcphub sets this header itself"},
		{"framing header", "[servers.a]\nurl = \"https://h\"\nheaders.Transfer-Encoding = \"chunked\"\n", 3, 1, "servers.a.headers.Transfer-Encoding", `"Transfer-Encoding": mcphub sets this header itself`},
		{"header twice", "[servers.a]\nurl = \"https://h\"\nheaders = { X-Key = \"1\", x-key = \"2\" }\n", 3, 26, "servers.a.headers.x-key", "the same header as X-Key"},
		{"upgrade header", "[servers.a]\nurl = \"https://h\"\nheaders.Upgrade = \"h2c\"\n", 3, 1, "servers.a.headers.Upgrade", "mcphub sets this header itself"},
		{"header line break", "[servers.a]\nurl = \"https://h\"\nheaders.X = \"a\\nb\"\n", 3, 1, "servers.a.headers.X", "line break"},
		// positions in other layouts
		{"dotted under [servers]", "[servers]\na.command = \"x\"\na.share = \"all\"\n", 3, 1, "servers.a.share", `use "server"`},
		{"inline server table", "servers.a = { command = \"x\", share = \"all\" }\n", 1, 30, "servers.a.share", `use "server"`},
		{"quoted header and key", "[servers.\"a\"]\n\"command\" = \"x\"\n\"share\" = \"all\"\n", 3, 1, "servers.a.share", `use "server"`},
		{"after multi-line string", "[servers.a]\ncommand = \"x\"\nargs = [\"\"\"\nshare = 1\n\"\"\"]\nshare = \"all\"\n", 6, 1, "servers.a.share", `use "server"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := envOf("A", "1")
			errs := parseErrors(t, tt.text, env)
			e := errs[0]
			for _, x := range errs {
				if tt.key != "" && x.Key == tt.key {
					e = x
					break
				}
			}
			if e.Line != tt.line || (tt.col != 0 && e.Col != tt.col) || !strings.Contains(e.Msg, tt.msg) || (tt.key != "" && e.Key != tt.key) {
				t.Errorf("got  %v\nwant line %d col %d key %q msg containing %q", errs, tt.line, tt.col, tt.key, tt.msg)
			}
			if e.File != "hub.toml" {
				t.Errorf("file = %q", e.File)
			}
		})
	}
}

func TestAllErrorsReportedSorted(t *testing.T) {
	text := "[hub]\nauth = \"x\"\nseparator = \"!\"\n[servers.a]\nurl = \"ftp://h\"\nshare = \"x\"\n[servers.B]\ncommand = \"x\"\n"
	errs := parseErrors(t, text, envOf())
	if len(errs) != 5 {
		t.Fatalf("want 5 errors, got %d:\n%v", len(errs), errs)
	}
	for i := 1; i < len(errs); i++ {
		if errs[i].Line < errs[i-1].Line {
			t.Fatalf("not sorted by line:\n%v", errs)
		}
	}
}

func TestErrorsNeverShowValues(t *testing.T) {
	text := "[servers.a]\nurl = \"https://h\"\n[servers.a.headers]\nX = \"${SECRET}\\n\"\nmcp-session-id = \"${SECRET}\"\n"
	errs := parseErrors(t, text, envOf("SECRET", "hunter2"))
	if strings.Contains(errs.Error(), "hunter2") {
		t.Fatalf("a value leaked: %v", errs)
	}
}

func TestSuggest(t *testing.T) {
	tests := map[string]string{"comand": "command", "enviroment": "", "environment": "env", "urls": "url",
		"connect-timeout": "connect_timeout", "callTimeout": "call_timeout", "xyz": "", "Deny": "deny"}
	for in, want := range tests {
		if got := suggest(in, serverKeys, serverAliases); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNormalizeName(t *testing.T) {
	tests := map[string]string{"GitHub": "github", "my server": "my-server", "--a__b--": "a-b",
		"Ünïcode!": "n-code", "!!!": "", strings.Repeat("ab", 20): strings.Repeat("ab", 16),
		strings.Repeat("a", 31) + "-b": strings.Repeat("a", 31)}
	for in, want := range tests {
		if got := normalizeName(in); got != want {
			t.Errorf("normalizeName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSuggestServerNames checks the did-you-mean guesses for server names:
// a close name is suggested, but not when two are equally close, and not
// for names so short that any other would do.
func TestSuggestServerNames(t *testing.T) {
	names := []string{"a", "github", "gitlab", "Notion"}
	for _, c := range []struct{ typed, want string }{
		{"githb", "github"},
		{"gitlb", "gitlab"},
		{"gitlub", ""}, // github and gitlab are both one edit away
		{"GitHub", "github"},
		{"notoin", "Notion"}, // a transposition is one edit
		{"gixxxb", ""},       // three edits in six characters: too far
		{"notio", "Notion"},
		{"b", ""},
		{"", ""},
		{"slack", ""},
	} {
		if got := suggest(c.typed, names, nil); got != c.want {
			t.Errorf("suggest(%q) = %q, want %q", c.typed, got, c.want)
		}
	}
}
