package clientconf

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/registry"
)

const codexConfig = `model = "o4"

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]
cwd = "/srv/docs"
env_vars = ["HTTPS_PROXY", { name = "CORP_CA", source = "remote" }]
startup_timeout_sec = 20
tool_timeout_sec = 90.5
enabled_tools = ["search", "get*"]
required = true

[mcp_servers.docs.env]
GITHUB_TOKEN = "ghp_literal"
LOG = "debug"

[mcp_servers.linear]
url = "https://mcp.linear.app/mcp"
bearer_token_env_var = "LINEAR_API_KEY"
http_headers = { "X-Tenant" = "acme" }
env_http_headers = { "X-Org" = "LINEAR_ORG", "X-Bad" = "not a name" }
disabled_tools = ["delete_issue"]

[mcp_servers.old]
command = "old-server"
enabled = false
startup_timeout_ms = 1500

[mcp_servers.mcphub]
url = "http://127.0.0.1:7733/mcp"
bearer_token_env_var = "MCPHUB_TOKEN"

[mcp_servers.mcphub-stdio]
command = "mcphub"
args = ["stdio"]

[mcp_servers.inline]
url = "https://i.example/mcp"
bearer_token = "sk-inline"
`

func TestImportCodexTOML(t *testing.T) {
	for _, asTOML := range []bool{true, false} {
		res, err := Import([]byte(codexConfig), ImportOptions{TOML: asTOML, Hub: registry.Self{Listens: []string{"127.0.0.1:7733"}}})
		if err != nil {
			t.Fatalf("TOML %v: %v", asTOML, err)
		}
		want := []registry.ServerSpec{
			{Name: "docs", Command: "npx", Args: []string{"-y", "docs-mcp"}, Cwd: "/srv/docs",
				Env:            map[string]string{"GITHUB_TOKEN": "${GITHUB_TOKEN}", "LOG": "debug"},
				EnvPassthrough: []string{"HTTPS_PROXY", "CORP_CA"}, Allow: []string{"search", `get\*`},
				ConnectTimeout: 20 * time.Second, CallTimeout: 90500 * time.Millisecond},
			{Name: "inline", URL: "https://i.example/mcp", Headers: map[string]string{"Authorization": "Bearer ${INLINE_TOKEN}"}},
			{Name: "linear", URL: "https://mcp.linear.app/mcp", Deny: []string{"delete_issue"}, Headers: map[string]string{
				"Authorization": "Bearer ${LINEAR_API_KEY}", "X-Tenant": "acme", "X-Org": "${LINEAR_ORG}"}},
			{Name: "old", Command: "old-server", Disabled: true, ConnectTimeout: 1500 * time.Millisecond},
		}
		if !reflect.DeepEqual(res.Specs, want) {
			t.Errorf("TOML %v: specs\n got %+v\nwant %+v", asTOML, res.Specs, want)
		}
		if !reflect.DeepEqual(res.HubEntries, []string{"mcphub", "mcphub-stdio"}) {
			t.Errorf("hub entries = %v", res.HubEntries)
		}
		assertNotes(t, res.Notes,
			`server "docs": field "required" has no mcphub equivalent; ignored`,
			`server "docs": env_vars "CORP_CA" comes from the remote environment`,
			`server "linear": env_http_headers.X-Bad does not name a variable; ignored`)
		if vars := stringsOf(res.Secrets); !strings.Contains(vars, "GITHUB_TOKEN") || !strings.Contains(vars, "INLINE_TOKEN") {
			t.Errorf("secrets = %+v", res.Secrets)
		}
		path := filepath.Join(t.TempDir(), "hub.toml")
		for _, s := range res.Specs {
			if err := registry.AddServer(path, s, false); err != nil {
				t.Errorf("AddServer(%s): %v", s.Name, err)
			}
		}
	}
}

func TestImportCodexErrors(t *testing.T) {
	if _, err := Import([]byte("model = \"o4\"\n"), ImportOptions{TOML: true}); !errors.Is(err, errNoCodexServers) {
		t.Errorf("a TOML file without [mcp_servers]: %v", err)
	}
	if _, err := Import([]byte("mcp_servers = 3\n"), ImportOptions{}); err == nil {
		t.Error("mcp_servers that is not a table was accepted")
	}
	_, err := Import([]byte("{not json\n"), ImportOptions{})
	if err == nil || !strings.Contains(err.Error(), "not a JSON object") || !strings.Contains(err.Error(), "TOML") {
		t.Errorf("neither JSON nor TOML: %v", err)
	}
	res, err := Import([]byte("[mcp_servers]\na = 1\n[mcp_servers.b]\nhttp_headers = 2\nurl = \"https://b/mcp\"\n"), ImportOptions{TOML: true})
	if err != nil || len(res.Specs) != 1 {
		t.Fatalf("specs %+v, %v", res.Specs, err)
	}
	assertNotes(t, res.Notes, `server "a": not an object; skipped`, `server "b": headers is not an object; ignored`)
}

// FuzzImportCodexTOML feeds arbitrary bytes to the Codex TOML path.
func FuzzImportCodexTOML(f *testing.F) {
	f.Add([]byte(codexConfig))
	for _, s := range []string{
		"", "[mcp_servers]\n", "[mcp_servers.a]\nenv_vars = [1, {name = 2}]\n",
		"[mcp_servers.a]\nurl = \"http://localhost:7733/x\"\nhttp_headers = {Authorization = \"t\"}\nbearer_token_env_var = \"T\"\n",
		"[mcp_servers.a]\ncommand = \"c\"\nstartup_timeout_sec = nan\ntool_timeout_sec = inf\n",
		"[mcp_servers.\"A B\"]\ncommand = { path = \"x\" }\nenabled_tools = \"x\"\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := Import(data, ImportOptions{TOML: true, Hub: registry.Self{Listens: []string{registry.DefaultListen}}})
		if err != nil {
			return
		}
		checkImported(t, res)
	})
}
