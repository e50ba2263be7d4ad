package clientconf

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/registry"
)

func TestImportClaudeDesktop(t *testing.T) {
	data := `{
  "mcpServers": {
    "GitHub Server": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_literal$1", "PORT": 3000}
    },
    "remote": {"url": "https://r.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
    "cursor-sse": {"url": "https://c.example/sse", "type": "sse"},
    "via-mcp-remote": {"command": "npx", "args": ["mcp-remote", "https://m.example/mcp"]},
    "old": {"command": "x", "disabled": true, "alwaysAllow": ["a"]},
    "broken": {"args": ["x"]}
  },
  "globalShortcut": "ignored"
}`
	specs, notes, err := importKeeping([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	want := []registry.ServerSpec{
		{Name: "cursor-sse", URL: "https://c.example/sse", Transport: "sse"},
		{Name: "github-server", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-github"},
			Env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_literal$$1", "PORT": "3000"}},
		{Name: "old", Command: "x", Disabled: true},
		{Name: "remote", URL: "https://r.example/mcp", Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}},
		{Name: "via-mcp-remote", Command: "npx", Args: []string{"mcp-remote", "https://m.example/mcp"}},
	}
	if !reflect.DeepEqual(specs, want) {
		t.Errorf("specs\n got %+v\nwant %+v", specs, want)
	}
	assertNotes(t, notes,
		`server "GitHub Server": renamed to "github-server"`,
		`server "broken": has neither command nor url; skipped`,
		`server "old": field "alwaysAllow" has no mcphub equivalent; ignored`,
		`server "via-mcp-remote": runs mcp-remote; mcphub can connect to https://m.example/mcp itself`)
}

func TestImportVSCode(t *testing.T) {
	data := `// .vscode/mcp.json
{
  "inputs": [{"type": "promptString", "id": "github-token", "password": true}],
  "servers": {
    "github": {
      "type": "stdio",
      "command": "docker",
      "args": ["run", "-i", "--rm", "ghcr.io/github/github-mcp-server"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${input:github-token}", "HOME_DIR": "${userHome}/x", "P": "${env:PATH}"},
      "envFile": "${workspaceFolder}/.env", /* not supported */
    },
    "api": {"type": "http", "url": "https://api.example/mcp", "headers": {"X-Key": "${env:API_KEY}"}},
    "legacy": {"type": "sse", "url": "https://l.example/sse"},
    "ws": {"type": "websocket", "url": "wss://w.example"},
  },
}`
	specs, notes, err := importKeeping([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	want := []registry.ServerSpec{
		{Name: "api", URL: "https://api.example/mcp", Transport: "streamable-http", Headers: map[string]string{"X-Key": "${API_KEY}"}},
		{Name: "github", Command: "docker", Args: []string{"run", "-i", "--rm", "ghcr.io/github/github-mcp-server"},
			Env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}", "HOME_DIR": "${HOME}/x", "P": "${PATH}"}},
		{Name: "legacy", URL: "https://l.example/sse", Transport: "sse"},
	}
	if !reflect.DeepEqual(specs, want) {
		t.Errorf("specs\n got %+v\nwant %+v", specs, want)
	}
	assertNotes(t, notes,
		`server "github": envFile is not supported`,
		`server "github": env.GITHUB_PERSONAL_ACCESS_TOKEN uses VS Code input ${input:github-token}; it now reads ${GITHUB_TOKEN}`,
		`server "ws": type "websocket" is not stdio, http or sse; skipped`)
}

func TestImportVSCodeSettings(t *testing.T) {
	data := `{
  "editor.fontSize": 14,
  "mcp": {"servers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${workspaceFolder}"], "cwd": "${workspaceFolder}"}}}
}`
	specs, notes, err := importKeeping([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 1 || specs[0].Name != "fs" || specs[0].Cwd != "${workspaceFolder}" {
		t.Fatalf("specs = %+v", specs)
	}
	assertNotes(t, notes,
		`server "fs": command or args contain "${workspaceFolder}"; mcphub does not expand variables there`,
		`server "fs": cwd uses ${workspaceFolder}, which only an editor knows`)
}

func TestImportNamesAndErrors(t *testing.T) {
	specs, notes, err := importKeeping([]byte(`{"mcpServers": {"A B": {"command": "x"}, "a-b": {"command": "y"}, "!!!": {"command": "z"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	if !reflect.DeepEqual(names, []string{"a-b", "a-b-2", "server"}) {
		t.Errorf("names = %v", names)
	}
	assertNotes(t, notes, `server "A B": renamed to "a-b"`, `server "a-b": renamed to "a-b-2"`)
	for _, bad := range []string{`[]`, `{"foo": {}}`, `not json`, `{"mcpServers": []}`} {
		if _, _, err := importKeeping([]byte(bad)); err == nil {
			t.Errorf("importKeeping(%s) succeeded", bad)
		}
	}
}

// TestImportedSpecsAreAddable checks that what import produces can be
// written by registry.AddServer and read back.
func TestImportedSpecsAreAddable(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "x")
	t.Setenv("API_KEY", "x")
	data := `{"servers": {"github": {"command": "npx", "env": {"T": "${input:github-token}", "L": "a$b"}},
	  "api": {"type": "http", "url": "https://api.example/mcp", "headers": {"X-Key": "${env:API_KEY}"}}}}`
	specs, _, err := importKeeping([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "hub.toml")
	for _, s := range specs {
		s.CallTimeout = time.Minute
		if err := registry.AddServer(path, s, false); err != nil {
			t.Fatal(err)
		}
	}
	reg, err := registry.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := reg.Server("github").Env["L"]; got != "a$b" {
		t.Errorf("literal $ = %q", got)
	}
}

func TestStripJSONC(t *testing.T) {
	in := `{"a": "// not a comment", /* c */ "b": [1, 2,], // x
"c": "/* nor this */", "d": "q\"uote,}",}`
	want := `{"a": "// not a comment",  "b": [1, 2], 
"c": "/* nor this */", "d": "q\"uote,}"}`
	if got := string(stripJSONC([]byte(in))); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func assertNotes(t *testing.T, notes []string, want ...string) {
	t.Helper()
	all := strings.Join(notes, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("no note containing %q in:\n%s", w, all)
		}
	}
}

func TestImportClientShapes(t *testing.T) {
	for _, tc := range []struct {
		client, data string
		want         []registry.ServerSpec
		notes        []string
	}{
		{"Windsurf", `{"mcpServers": {"w": {"serverUrl": "https://w.example/mcp", "headers": {"X-Tenant": "t"}, "disabledTools": ["drop*"]},
		  "s": {"command": "uvx", "args": ["srv"], "disabled": true}}}`,
			[]registry.ServerSpec{{Name: "s", Command: "uvx", Args: []string{"srv"}, Disabled: true},
				{Name: "w", URL: "https://w.example/mcp", Headers: map[string]string{"X-Tenant": "t"}, Deny: []string{`drop\*`}}}, nil},
		{"Gemini", `{"theme": "x", "mcpServers": {
		  "stream": {"httpUrl": "https://h.example/mcp", "timeout": 30000, "includeTools": ["a", "b"], "trust": true},
		  "legacy": {"url": "https://l.example/sse", "excludeTools": ["c"]},
		  "local": {"command": "node", "args": ["s.js"], "cwd": "./srv"}}}`,
			[]registry.ServerSpec{{Name: "legacy", URL: "https://l.example/sse", Transport: "sse", Deny: []string{"c"}},
				{Name: "local", Command: "node", Args: []string{"s.js"}, Cwd: "./srv"},
				{Name: "stream", URL: "https://h.example/mcp", Transport: "streamable-http", Allow: []string{"a", "b"}, CallTimeout: 30 * time.Second}},
			[]string{`server "stream": field "trust" has no mcphub equivalent`}},
		{"Cursor url stays auto", `{"mcpServers": {"c": {"url": "https://c.example/mcp"}}}`,
			[]registry.ServerSpec{{Name: "c", URL: "https://c.example/mcp"}}, nil},
		{"Claude Code", `{"numStartups": 3, "mcpServers": {"api": {"type": "http", "url": "https://a.example/mcp"}, "x": {"type": "stdio", "command": "x"}}}`,
			[]registry.ServerSpec{{Name: "api", URL: "https://a.example/mcp", Transport: "streamable-http"}, {Name: "x", Command: "x"}}, nil},
		{"Zed", `// Zed settings
		{"theme": "One Dark", "context_servers": {
		  "remote": {"url": "https://z.example/mcp", "headers": {"X-Tenant": "t"}},
		  "new": {"command": "npx", "args": ["-y", "srv"], "env": {"A": "1"}, "enabled": false},
		  "old": {"source": "custom", "command": {"path": "/usr/bin/srv", "args": ["--stdio"], "env": {"B": "2"}}, "settings": {}},
		  "ext": {"source": "extension", "settings": {"k": 1}},
		},}`,
			[]registry.ServerSpec{{Name: "new", Command: "npx", Args: []string{"-y", "srv"}, Env: map[string]string{"A": "1"}, Disabled: true},
				{Name: "old", Command: "/usr/bin/srv", Args: []string{"--stdio"}, Env: map[string]string{"B": "2"}},
				{Name: "remote", URL: "https://z.example/mcp", Headers: map[string]string{"X-Tenant": "t"}}},
			[]string{`server "ext": is provided by a Zed extension`, `server "old": field "settings" has no mcphub equivalent`}},
	} {
		t.Run(tc.client, func(t *testing.T) {
			res, err := Import([]byte(tc.data), ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res.Specs, tc.want) {
				t.Errorf("specs\n got %+v\nwant %+v", res.Specs, tc.want)
			}
			assertNotes(t, res.Notes, tc.notes...)
			path := filepath.Join(t.TempDir(), "hub.toml")
			for _, s := range res.Specs {
				if err := registry.AddServer(path, s, false); err != nil {
					t.Errorf("AddServer(%s): %v", s.Name, err)
				}
			}
		})
	}
}

// FuzzImport feeds arbitrary bytes to the importer, as JSON
// and, when that fails, as TOML: no panics, valid unique names, and specs
// that registry.AddServer can encode.
func FuzzImport(f *testing.F) {
	for _, s := range []string{
		`{"mcpServers": {"a": {"command": "x", "env": {"GITHUB_TOKEN": "ghp_1"}}}}`,
		`{"servers": {"a": {"type": "http", "url": "http://127.0.0.1:7733/mcp", "headers": {"Authorization": "Bearer x"}}}}`,
		`{"context_servers": {"z": {"command": {"path": "p", "args": ["a"]}}}}`,
		`{"mcpServers": {"g": {"httpUrl": "https://h/mcp", "includeTools": ["a*"], "timeout": 5}}}`,
		`{"mcp": {"servers": {"v": {"command": "c", "env": {"K": "${input:k}"}}}}} // c`,
		"[mcp_servers.a]\ncommand = \"x\"\n", `{"mcpServers": {"A B": null, "!": []}}`,
		`{"projects": {"/p": {"mcpServers": {"a": {"command": "mcphub", "args": ["--config", "x", "stdio"]}}}}, "mcpServers": {"a": {"url": "http://u:p@h/mcp"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := Import(data, ImportOptions{Hub: registry.Self{Listens: []string{registry.DefaultListen}}, LookupEnv: envOf("GITHUB_TOKEN", "ghp_1")})
		if err != nil {
			return
		}
		checkImported(t, res)
	})
}

// checkImported checks what every import must give: valid unique names and
// specs the registry can encode.
func checkImported(t *testing.T, res ImportResult) {
	t.Helper()
	seen := map[string]bool{}
	for _, s := range res.Specs {
		if msg := registry.CheckServerName(s.Name); msg != "" || seen[s.Name] {
			t.Fatalf("bad or repeated name %q: %s", s.Name, msg)
		}
		seen[s.Name] = true
		if (s.Command == "") == (s.URL == "") {
			t.Fatalf("spec %q is neither stdio nor remote: %+v", s.Name, s)
		}
		_, _ = registry.EncodeServer(s)
	}
	for _, sec := range res.Secrets {
		if !registry.ValidEnvName(sec.Var) {
			t.Fatalf("secret variable %q is not a valid name", sec.Var)
		}
	}
}

// TestImportClaudeCodeProjects: ~/.claude.json lists servers at the top and
// per project; all are imported, and a name used already keeps the
// top-level entry, then the first project's, with a note for each skipped
// one.
func TestImportClaudeCodeProjects(t *testing.T) {
	data := `{"numStartups": 3, "mcpServers": {"api": {"type": "http", "url": "https://a.example/mcp"}},
	  "projects": {
	    "/home/u/zeta": {"allowedTools": [], "mcpServers": {"db": {"command": "db-mcp", "args": ["zeta"]}, "api": {"command": "other"}}},
	    "/home/u/empty": {"mcpServers": {}},
	    "/home/u/none": {"history": []},
	    "/home/u/alpha": {"mcpServers": {"db": {"command": "db-mcp", "args": ["alpha"]}, "lint": {"command": "lint-mcp"}}}
	  }}`
	res, err := Import([]byte(data), ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []registry.ServerSpec{
		{Name: "api", URL: "https://a.example/mcp", Transport: "streamable-http"},
		{Name: "db", Command: "db-mcp", Args: []string{"zeta"}},
		{Name: "lint", Command: "lint-mcp"},
	}
	if !reflect.DeepEqual(res.Specs, want) {
		t.Errorf("specs\n got %+v\nwant %+v", res.Specs, want)
	}
	assertNotes(t, res.Notes,
		`server "api" of project /home/u/zeta: skipped; its name is taken by the top-level entry`,
		`server "db" of project /home/u/alpha: skipped; its name is taken by the entry of project /home/u/zeta`)

	// Projects alone are a config too.
	res, err = Import([]byte(`{"projects": {"/p": {"mcpServers": {"x": {"command": "x"}}}}}`), ImportOptions{})
	if err != nil || len(res.Specs) != 1 || res.Specs[0].Name != "x" {
		t.Errorf("projects only: %+v, %v", res.Specs, err)
	}
	res, err = Import([]byte(`{"mcpServers": null, "projects": {"/p": {"mcpServers": {"x": {"command": "x"}}}}}`), ImportOptions{})
	if err != nil || len(res.Specs) != 1 {
		t.Errorf("null top-level list with projects: %+v, %v", res.Specs, err)
	}
	if _, err := Import([]byte(`{"projects": {"/p": {"history": []}}}`), ImportOptions{}); err == nil {
		t.Errorf("a file with projects but no servers was accepted")
	}
}

// TestImportByteOrderMark: a UTF-8 byte order mark before JSON or TOML is
// ignored.
func TestImportByteOrderMark(t *testing.T) {
	for _, tc := range []struct {
		data   string
		asTOML bool
	}{
		{"\xef\xbb\xbf{\"mcpServers\": {\"a\": {\"command\": \"x\"}}}", false},
		{"\xef\xbb\xbf// comment\n{\"servers\": {\"a\": {\"command\": \"x\"}}}", false},
		{"\xef\xbb\xbf[mcp_servers.a]\ncommand = \"x\"\n", true},
		{"\xef\xbb\xbf[mcp_servers.a]\ncommand = \"x\"\n", false},
	} {
		res, err := Import([]byte(tc.data), ImportOptions{TOML: tc.asTOML})
		if err != nil || len(res.Specs) != 1 || res.Specs[0].Command != "x" {
			t.Errorf("import %q (TOML %v): %+v, %v", tc.data, tc.asTOML, res.Specs, err)
		}
	}
}
