package registry

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
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
	specs, notes, err := ImportClientConfig([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	want := []ServerSpec{
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
	specs, notes, err := ImportClientConfig([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	want := []ServerSpec{
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
	specs, notes, err := ImportClientConfig([]byte(data))
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
	specs, notes, err := ImportClientConfig([]byte(`{"mcpServers": {"A B": {"command": "x"}, "a-b": {"command": "y"}, "!!!": {"command": "z"}}}`))
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
		if _, _, err := ImportClientConfig([]byte(bad)); err == nil {
			t.Errorf("ImportClientConfig(%s) succeeded", bad)
		}
	}
}

// TestImportedSpecsAreAddable checks that what import produces can be
// written by AddServer and read back.
func TestImportedSpecsAreAddable(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "x")
	t.Setenv("API_KEY", "x")
	data := `{"servers": {"github": {"command": "npx", "env": {"T": "${input:github-token}", "L": "a$b"}},
	  "api": {"type": "http", "url": "https://api.example/mcp", "headers": {"X-Key": "${env:API_KEY}"}}}}`
	specs, _, err := ImportClientConfig([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "hub.toml")
	for _, s := range specs {
		s.CallTimeout = time.Minute
		if err := AddServer(path, s, false); err != nil {
			t.Fatal(err)
		}
	}
	reg, err := Load(path)
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
