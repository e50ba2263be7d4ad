package main

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/registry"
)

// importRegistry points MCPHUB_CONFIG at a new registry that listens on
// listen, and returns its path.
func importRegistry(t *testing.T, listen string) string {
	t.Helper()
	freshHome(t)
	path := filepath.Join(t.TempDir(), "hub.toml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf("[hub]\nlisten = %q\n", listen)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MCPHUB_CONFIG", path)
	return path
}

// closedAddr is a loopback address nothing listens on, so that no hub
// answers there.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// writeSource writes a client config to import.
func writeSource(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func loadImported(t *testing.T, path string) *registry.Registry {
	t.Helper()
	reg, err := registry.LoadServing(path)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// The entries `mcphub connect` writes point at this hub, in any loopback
// spelling and on any path, or run "mcphub stdio": they are skipped with a
// note, from JSON and from a Codex config.toml alike.
func TestImportSkipsThisHub(t *testing.T) {
	addr := closedAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	path := importRegistry(t, addr)
	src := writeSource(t, "claude.json", fmt.Sprintf(`{"mcpServers": {
		"mcphub": {"type": "http", "url": "http://localhost:%[1]s/mcp", "headers": {"Authorization": "Bearer ${MCPHUB_TOKEN}"}},
		"hub-github": {"url": "http://[::1]:%[1]s/github/mcp"},
		"hub-stdio": {"command": "/usr/local/bin/mcphub", "args": ["stdio"]},
		"files": {"command": "npx", "args": ["-y", "server-files"]}
	}}`, port))
	code, out, errOut := runCLI(t, "import", src)
	if code != 0 {
		t.Fatalf("import: %d\n%s%s", code, out, errOut)
	}
	for _, name := range []string{"mcphub", "hub-github", "hub-stdio"} {
		if want := fmt.Sprintf("skipped %q: it points at this hub", name); !strings.Contains(errOut, want) {
			t.Errorf("no note %q in:\n%s", want, errOut)
		}
	}
	if !strings.Contains(out, "imported 1 servers") || !strings.Contains(out, "3 skipped") {
		t.Errorf("summary: %s", out)
	}
	reg := loadImported(t, path)
	if len(reg.Servers) != 1 || reg.Server("files") == nil {
		t.Errorf("the registry holds %d servers, want only files", len(reg.Servers))
	}

	toml := writeSource(t, "config.toml", fmt.Sprintf(`[mcp_servers.mcphub]
url = "http://127.0.0.1:%s/mcp"
bearer_token_env_var = "MCPHUB_TOKEN"

[mcp_servers.docs]
command = "docs-mcp"
`, port))
	code, out, errOut = runCLI(t, "import", toml)
	if code != 0 || !strings.Contains(errOut, `skipped "mcphub": it points at this hub`) || !strings.Contains(out, "added docs") {
		t.Fatalf("import config.toml: %d\n%s%s", code, out, errOut)
	}
	if reg := loadImported(t, path); reg.Server("mcphub") != nil || reg.Server("docs") == nil {
		t.Errorf("after the Codex import the registry holds %d servers", len(reg.Servers))
	}
}

// A server whose ${VAR} the running hub lacks is imported disabled, with
// the variable, the environment that was asked and the command that
// enables it; a server whose variables are set stays enabled.
func TestImportDisablesServersWithUnsetVariables(t *testing.T) {
	f := startInproc(t, "", hubConfig{})
	u, err := url.Parse(f.url)
	if err != nil {
		t.Fatal(err)
	}
	path := importRegistry(t, u.Host)
	t.Setenv("IMPORTTEST_SET", "1")
	src := writeSource(t, "mcp.json", `{"servers": {
		"github": {"type": "stdio", "command": "npx", "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${env:IMPORTTEST_UNSET_TOKEN}"}},
		"ok": {"command": "npx", "env": {"A": "${env:IMPORTTEST_SET}"}}
	}}`)
	code, out, errOut := runCLI(t, "import", src)
	if code != 0 {
		t.Fatalf("import: %d\n%s%s", code, out, errOut)
	}
	want := fmt.Sprintf(`imported "github" disabled: IMPORTTEST_UNSET_TOKEN is not set in the running hub (pid %d); set it where mcphub starts, then: mcphub enable github`, os.Getpid())
	if !strings.Contains(errOut, want) {
		t.Errorf("no note %q in:\n%s", want, errOut)
	}
	if strings.Contains(errOut, `"ok" disabled`) || !strings.Contains(out, "(1 disabled, 0 skipped, 0 failed)") {
		t.Errorf("output:\n%s%s", out, errOut)
	}
	reg := loadImported(t, path)
	if reg.Server("github").Enabled || !reg.Server("ok").Enabled {
		t.Errorf("github enabled %v, ok enabled %v; want false, true", reg.Server("github").Enabled, reg.Server("ok").Enabled)
	}
}

// A literal secret is written as a ${VAR} reference, named after its env
// key or its server and header, and the value appears neither in the output
// nor in the registry; --keep-secrets writes it as it is.
func TestImportReplacesLiteralSecrets(t *testing.T) {
	path := importRegistry(t, closedAddr(t))
	secrets := []string{"ghp_importtest_literal_1", "sk-importtest-2", "k-importtest-3"}
	t.Setenv("IMPTEST_SHARED_KEY", secrets[2])
	src := writeSource(t, "claude_desktop_config.json", fmt.Sprintf(`{"mcpServers": {
		"github": {"command": "npx", "env": {"IMPTEST_GH_TOKEN": %q, "KEYBOARD": "us"}},
		"imptest-linear": {"url": "https://mcp.linear.app/mcp", "headers": {"Authorization": "Bearer %s"}},
		"same": {"command": "y", "env": {"IMPTEST_SHARED_KEY": %q}}
	}}`, secrets[0], secrets[1], secrets[2]))
	code, out, errOut := runCLI(t, "import", src)
	if code != 0 {
		t.Fatalf("import: %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"servers.github.env.IMPTEST_GH_TOKEN: the literal secret now reads ${IMPTEST_GH_TOKEN}; set IMPTEST_GH_TOKEN where mcphub runs (its value is in " + src + ")",
		"servers.imptest-linear.headers.Authorization: the literal secret now reads ${IMPTEST_LINEAR_TOKEN}",
		`imported "github" disabled: IMPTEST_GH_TOKEN must hold the secret from ` + src,
		`imported "imptest-linear" disabled`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("no %q in:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, `"same" disabled`) {
		t.Errorf("same holds a secret this process has under its name, so it must stay enabled:\n%s", errOut)
	}
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if strings.Contains(out+errOut+string(text), s) {
			t.Errorf("the secret %q appears in the output or the registry:\n%s%s\n%s", s, out, errOut, text)
		}
	}
	if !strings.Contains(string(text), `Authorization = "Bearer ${IMPTEST_LINEAR_TOKEN}"`) || !strings.Contains(string(text), `KEYBOARD = "us"`) {
		t.Errorf("registry:\n%s", text)
	}
	reg := loadImported(t, path)
	if reg.Server("github").Enabled || reg.Server("imptest-linear").Enabled || !reg.Server("same").Enabled {
		t.Errorf("enabled: github %v, imptest-linear %v, same %v; want false, false, true",
			reg.Server("github").Enabled, reg.Server("imptest-linear").Enabled, reg.Server("same").Enabled)
	}

	code, out, errOut = runCLI(t, "import", "--force", "--keep-secrets", src)
	if code != 0 || strings.Contains(out+errOut, secrets[0]) || strings.Contains(errOut, "literal secret now reads") {
		t.Fatalf("import --keep-secrets: %d\n%s%s", code, out, errOut)
	}
	if text, _ := os.ReadFile(path); !strings.Contains(string(text), secrets[0]) {
		t.Errorf("--keep-secrets did not write the literal:\n%s", text)
	}
}

func TestImportHelpListsEveryClient(t *testing.T) {
	code, out, _ := runCLI(t, "import", "--help")
	if code != 0 {
		t.Fatalf("import --help exited %d", code)
	}
	for _, want := range []string{"Claude Desktop", "Claude Code", "Cursor", "VS Code", "Windsurf", "Gemini", "Zed", "Codex", "config.toml", "--keep-secrets"} {
		if !strings.Contains(out, want) {
			t.Errorf("import --help lacks %q", want)
		}
	}
}

// TestImportSkipsThisHubEverywhere: the hub is skipped on the address a
// running hub recorded in the data directory (serve --listen) as on the
// registry's, behind mcp-remote@latest, and as "mcphub --config THIS
// stdio"; "mcphub stdio" on another registry is another hub, imported.
func TestImportSkipsThisHubEverywhere(t *testing.T) {
	path := importRegistry(t, closedAddr(t))
	data := t.TempDir()
	t.Setenv("MCPHUB_DATA", data)
	served := closedAddr(t)
	info := fmt.Sprintf(`{"pid": 1, "listen": %q, "config": %q}`, served, path)
	if err := os.WriteFile(filepath.Join(data, hubclient.RunFileName), []byte(info), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "work.toml")
	src := writeSource(t, "claude.json", fmt.Sprintf(`{"mcpServers": {
		"bridge": {"command": "npx", "args": ["-y", "mcp-remote@latest", "http://%s/mcp"]},
		"served": {"type": "http", "url": "http://%s/github/mcp"},
		"flags": {"command": "mcphub", "args": ["--config", %q, "stdio", "--server", "x"]},
		"work": {"command": "mcphub", "args": ["--config", %q, "stdio"]}
	}}`, served, served, path, other))
	code, out, errOut := runCLI(t, "import", src)
	if code != 0 {
		t.Fatalf("import: %d\n%s%s", code, out, errOut)
	}
	for _, name := range []string{"bridge", "served", "flags"} {
		if want := fmt.Sprintf("skipped %q: it points at this hub", name); !strings.Contains(errOut, want) {
			t.Errorf("no note %q in:\n%s", want, errOut)
		}
	}
	if reg := loadImported(t, path); len(reg.Servers) != 1 || reg.Server("work") == nil {
		t.Errorf("the registry holds %d servers, want only work", len(reg.Servers))
	}
}

// TestImportSecretAvoidsRegistryVars: a literal secret does not take the
// name of a variable the registry refers to already for another server.
func TestImportSecretAvoidsRegistryVars(t *testing.T) {
	path := importRegistry(t, closedAddr(t))
	if err := registry.AddServer(path, registry.ServerSpec{Name: "old", Command: "x",
		Env: map[string]string{"IMPTEST_TAKEN_TOKEN": "${IMPTEST_TAKEN_TOKEN}"}}, false); err != nil {
		t.Fatal(err)
	}
	src := writeSource(t, "mcp.json", `{"mcpServers": {"new": {"command": "y", "env": {"IMPTEST_TAKEN_TOKEN": "tok-literal"}}}}`)
	code, out, errOut := runCLI(t, "import", src)
	if code != 0 {
		t.Fatalf("import: %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "servers.new.env.IMPTEST_TAKEN_TOKEN: the literal secret now reads ${IMPTEST_TAKEN_TOKEN_2}") {
		t.Errorf("the literal did not get a name of its own:\n%s", errOut)
	}
	if e := loadImported(t, path).Server("new"); e == nil || e.RawEnv["IMPTEST_TAKEN_TOKEN"] != "${IMPTEST_TAKEN_TOKEN_2}" {
		t.Errorf("new's env: %+v", e)
	}
}
