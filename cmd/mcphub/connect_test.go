package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/tailscale/hujson"

	"github.com/mcphub/mcphub/clientconf"
)

func TestTokenCreatesAPrivateFileAndNeverPrintsIt(t *testing.T) {
	home := freshHome(t)
	code, out, errOut := runCLI(t, "token")
	if code != 0 {
		t.Fatalf("token: %d %s %s", code, out, errOut)
	}
	path := filepath.Join(home, ".config", "mcphub", "token")
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, mode %v", err, info.Mode())
	}
	tok, _ := os.ReadFile(path)
	if len(strings.TrimSpace(string(tok))) < 32 || strings.Contains(out+errOut, strings.TrimSpace(string(tok))) {
		t.Fatalf("the token is too short or was printed: %q", out)
	}
	if code, _, errOut := runCLI(t, "token"); code == 0 || !strings.Contains(errOut, "--force") {
		t.Fatalf("a second token must not silently replace the first: %d %q", code, errOut)
	}
}

// turnAuthOn creates a token and sets auth = "token" in the registry of a
// fresh home; it returns the token.
func turnAuthOn(t *testing.T, home string) string {
	t.Helper()
	runCLI(t, "token")
	cfg := filepath.Join(home, ".config", "mcphub", "hub.toml")
	data, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, []byte(strings.Replace(string(data), `auth = "none"`, `auth = "token"`, 1)), 0o600)
	tok, _ := os.ReadFile(filepath.Join(home, ".config", "mcphub", "token"))
	return strings.TrimSpace(string(tok))
}

func TestConnectPrintsAndMergesClientConfigs(t *testing.T) {
	home := freshHome(t)
	tok := turnAuthOn(t, home)

	code, out, errOut := runCLI(t, "connect", "cursor")
	if code != 0 || !strings.Contains(out, `"url": "http://127.0.0.1:7733/mcp"`) || !strings.Contains(out, "Bearer "+tok) {
		t.Fatalf("connect cursor: %d\n%s\n%s", code, out, errOut)
	}

	existing := filepath.Join(home, ".cursor", "mcp.json")
	os.MkdirAll(filepath.Dir(existing), 0o700)
	os.WriteFile(existing, []byte(`{"keep":[1,2],"mcpServers":{"other":{"url":"http://x"}}}`), 0o640)
	if code, _, errOut := runCLI(t, "connect", "cursor", "--write"); code != 0 {
		t.Fatalf("connect --write: %d %s", code, errOut)
	}
	merged, _ := os.ReadFile(existing)
	var got struct {
		Keep       []int                     `json:"keep"`
		MCPServers map[string]map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal(merged, &got); err != nil {
		t.Fatalf("merged config is not JSON: %v\n%s", err, merged)
	}
	if len(got.Keep) != 2 || got.MCPServers["other"]["url"] != "http://x" || got.MCPServers["mcphub"]["url"] != "http://127.0.0.1:7733/mcp" {
		t.Fatalf("merge lost or missed entries: %s", merged)
	}
	if !strings.HasPrefix(string(merged), `{"keep":[1,2],"mcpServers":{"other":{"url":"http://x"}`) {
		t.Errorf("the merge rewrote bytes it did not need to: %s", merged)
	}
	if info, _ := os.Stat(existing); info.Mode().Perm() != 0o640 {
		t.Errorf("the merge changed the file's mode to %v", info.Mode().Perm())
	}
	if code, _, _ := runCLI(t, "connect", "emacs"); code == 0 {
		t.Error("an unknown client must be refused")
	}
}

// connectRegistry serves two stdio servers and a remote one; notes is
// listed but disabled, so a client's notes entry is not served. github's
// token comes from $GITHUB_TOKEN, which connectHome sets to the token the
// client files in clientconf/testdata/clients hold.
const connectRegistry = `[hub]
listen = "127.0.0.1:7733"
auth = "none"

[servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]
env = { GITHUB_PERSONAL_ACCESS_TOKEN = "${GITHUB_TOKEN}" }

[servers.fetch]
command = "uvx"
args = ["mcp-server-fetch"]

[servers.deepwiki]
url = "https://mcp.deepwiki.com/mcp"

[servers.notes]
command = "notes-mcp"
args = ["--db", "~/notes.db"]
enabled = false
`

// connectHome is a fresh home whose default registry is connectRegistry.
func connectHome(t *testing.T) string {
	t.Helper()
	home := freshHome(t)
	t.Setenv("CODEX_HOME", "")
	t.Setenv("GITHUB_TOKEN", "ghp_example")
	cfg := filepath.Join(home, ".config", "mcphub", "hub.toml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(connectRegistry), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// hubExe is the command a stdio entry runs: this test binary, as mcphub
// finds itself.
func hubExe(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	return exe
}

// decodeServers reads the servers of a client file: the JSON member key,
// or Codex's mcp_servers table.
func decodeServers(t *testing.T, data []byte, key string) map[string]any {
	t.Helper()
	var doc map[string]any
	if key == "mcp_servers" {
		if _, err := toml.Decode(string(data), &doc); err != nil {
			t.Fatalf("the result is not TOML: %v\n%s", err, data)
		}
	} else {
		std, err := hujson.Standardize(bytes.Clone(data))
		if err == nil {
			err = json.Unmarshal(std, &doc)
		}
		if err != nil {
			t.Fatalf("the result is not JSON(C): %v\n%s", err, data)
		}
	}
	servers, _ := doc[key].(map[string]any)
	return servers
}

// normalize makes decoded TOML and JSON comparable ([]any vs []string).
func normalize(v any) any {
	b, _ := json.Marshal(v)
	var out any
	json.Unmarshal(b, &out)
	return out
}

// jsonOutside returns the text of a JSON(C) file before and after the
// value of the top-level member key, and the text of each member of that
// value.
func jsonOutside(t *testing.T, data []byte, key string) (before, after string, members map[string]string) {
	t.Helper()
	v, err := hujson.Parse(bytes.Clone(data))
	if err != nil {
		t.Fatal(err)
	}
	top := v.Value.(*hujson.Object)
	i := slices.IndexFunc(top.Members, func(m hujson.ObjectMember) bool {
		lit, ok := m.Name.Value.(hujson.Literal)
		return ok && lit.String() == key
	})
	if i < 0 {
		return "", "", nil
	}
	val := top.Members[i].Value
	members = map[string]string{}
	for _, m := range val.Value.(*hujson.Object).Members {
		members[m.Name.Value.(hujson.Literal).String()] = string(data[m.Name.StartOffset:m.Value.EndOffset])
	}
	return string(data[:val.StartOffset]), string(data[val.EndOffset:]), members
}

// TestConnectWriteMoveRoundTrips runs connect --write --move on real-shaped
// files of every client and checks the whole result: a byte-identical
// backup, the served entries gone, the others and every unrelated byte kept,
// the hub's entry in the client's shape, and nothing more on a second run.
func TestConnectWriteMoveRoundTrips(t *testing.T) {
	exe := hubExe(t)
	url := "http://127.0.0.1:7733/mcp"
	cases := []struct {
		client, file string
		moved        map[string]string // client entry -> the hub's server
		kept         []string
		// noted are kept entries that run a server of the hub with
		// something else (an env value the client asks for, a $VAR
		// mcphub does not read): entry -> part of the note.
		noted map[string]string
		hub   map[string]any
		// verbatim are texts of the original that must be in the result
		// as they are (for TOML; JSON members are checked by parsing).
		verbatim []string
	}{
		{client: "claude-desktop", file: "claude_desktop_config.json",
			moved: map[string]string{"github": "github", "fetch": "fetch"}, kept: []string{"filesystem"},
			hub: map[string]any{"command": exe, "args": []string{"stdio"}}},
		{client: "cursor", file: "cursor-mcp.json",
			moved: map[string]string{"deepwiki": "deepwiki", "github": "github"}, kept: []string{"linear"},
			hub: map[string]any{"url": url}},
		{client: "vscode", file: "vscode-mcp.json",
			moved: map[string]string{"deepwiki": "deepwiki"}, kept: []string{"playwright"},
			noted: map[string]string{"github": `the hub's "github", but its env GITHUB_PERSONAL_ACCESS_TOKEN cannot be checked`},
			hub:   map[string]any{"type": "http", "url": url}},
		{client: "gemini", file: "gemini-settings.json",
			moved: map[string]string{"deepwiki": "deepwiki"}, kept: []string{"filteredServer"},
			noted: map[string]string{"github": `the hub's "github", but its env GITHUB_PERSONAL_ACCESS_TOKEN cannot be checked`},
			hub:   map[string]any{"httpUrl": url}},
		{client: "codex", file: "codex-config.toml",
			moved: map[string]string{"github": "github", "deepwiki": "deepwiki"}, kept: []string{"notes"},
			hub: map[string]any{"url": url},
			verbatim: []string{
				"# Codex configuration.\nmodel = \"gpt-5-codex\"\napproval_policy = \"on-request\"\n\n[profiles.fast]\nmodel = \"gpt-5-mini\"\n\n",
				"[mcp_servers.notes]\ncommand = \"notes-mcp\"\nargs = [\n  \"--db\",\n  \"~/notes.db\", # the default\n]\n",
				"[mcp_servers.deepwiki]\n\"\"\" }\n",
				"[tui]\nnotifications = true\n",
			}},
		{client: "windsurf", file: "windsurf-mcp_config.json",
			moved: map[string]string{"github": "github"}, hub: map[string]any{"serverUrl": url}},
		{client: "zed", file: "zed-settings.json", hub: map[string]any{"url": url}},
		{client: "claude", file: "claude.json",
			moved: map[string]string{"deepwiki": "deepwiki"}, hub: map[string]any{"type": "http", "url": url}},
	}
	for _, tc := range cases {
		t.Run(tc.client, func(t *testing.T) {
			connectHome(t)
			c, _ := clientconf.Lookup(tc.client)
			orig, err := os.ReadFile(filepath.Join("..", "..", "clientconf", "testdata", "clients", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), tc.file)
			if err := os.WriteFile(path, orig, 0o640); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runCLI(t, "connect", tc.client, "--write", "--move", "--file", path)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			for name, served := range tc.moved {
				if want := fmt.Sprintf("removed %q from %s (the hub serves it as %q)\n", name, path, served); !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if n := strings.Count(out, "removed "); n != len(tc.moved) {
				t.Errorf("%d removals reported, want %d:\n%s", n, len(tc.moved), out)
			}
			for _, name := range tc.kept {
				if want := fmt.Sprintf("kept %q in %s: the hub does not serve it (", name, path); !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			for name, note := range tc.noted {
				if want := fmt.Sprintf("kept %q in %s: it has the same command and args as %s", name, path, note); !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
				tc.kept = append(tc.kept, name)
			}
			if strings.Contains(out, "ghp_example") {
				t.Errorf("the output shows a token:\n%s", out)
			}

			backups, _ := filepath.Glob(path + ".mcphub-backup-*")
			if len(backups) != 1 {
				t.Fatalf("want one backup, have %v", backups)
			}
			if b, _ := os.ReadFile(backups[0]); !bytes.Equal(b, orig) {
				t.Errorf("the backup differs from the original:\n%s", b)
			}
			if !strings.Contains(out, "backed up "+path+" to "+backups[0]+"\n") {
				t.Errorf("the output does not say where the backup is:\n%s", out)
			}
			for _, p := range []string{path, backups[0]} {
				if info, _ := os.Stat(p); info.Mode().Perm() != 0o640 {
					t.Errorf("%s has mode %v, want the original's 0640", p, info.Mode().Perm())
				}
			}

			got, _ := os.ReadFile(path)
			checkGolden(t, tc.file, got, exe)
			servers := decodeServers(t, got, c.Key)
			for name := range tc.moved {
				if _, ok := servers[name]; ok {
					t.Errorf("%q is still there", name)
				}
			}
			for _, name := range tc.kept {
				if _, ok := servers[name]; !ok {
					t.Errorf("%q was removed", name)
				}
			}
			if !reflect.DeepEqual(normalize(servers["mcphub"]), normalize(tc.hub)) {
				t.Errorf("hub entry %v, want %v", servers["mcphub"], tc.hub)
			}
			if c.Format == clientconf.FormatJSON && !json.Valid(got) {
				t.Errorf("a strict JSON file became JSONC:\n%s", got)
			}

			if c.Format != clientconf.FormatTOML {
				b0, a0, m0 := jsonOutside(t, orig, c.Key)
				b1, a1, m1 := jsonOutside(t, got, c.Key)
				if m0 != nil && (b0 != b1 || a0 != a1) {
					t.Errorf("bytes outside %q changed:\nbefore %q\n   now %q\nafter %q\n  now %q", c.Key, b0, b1, a0, a1)
				}
				for _, name := range tc.kept {
					if m1[name] != m0[name] {
						t.Errorf("kept entry %q changed:\n%s\nnow\n%s", name, m0[name], m1[name])
					}
				}
			}
			for _, v := range tc.verbatim {
				if !strings.Contains(string(orig), v) || !strings.Contains(string(got), v) {
					t.Errorf("text not kept as it was: %q", v)
				}
			}

			code, out, errOut = runCLI(t, "connect", tc.client, "--write", "--move", "--file", path)
			again, _ := os.ReadFile(path)
			backups, _ = filepath.Glob(path + ".mcphub-backup-*")
			if code != 0 || !strings.Contains(out, path+" is already up to date") || !bytes.Equal(again, got) || len(backups) != 1 {
				t.Errorf("a second run changed something: exit %d, %d backups\n%s%s", code, len(backups), out, errOut)
			}
		})
	}
}

// checkGolden compares a result with testdata/clients/FILE.want, where
// @MCPHUB@ stands for the mcphub binary's path (go test -update rewrites
// it).
func checkGolden(t *testing.T, file string, got []byte, exe string) {
	t.Helper()
	quoted, _ := json.Marshal(exe)
	placeholder := strings.Trim(string(quoted), `"`)
	wantPath := filepath.Join("testdata", "clients", file+".want")
	if *goldenUpdate {
		os.WriteFile(wantPath, bytes.ReplaceAll(got, []byte(placeholder), []byte("@MCPHUB@")), 0o644)
		return
	}
	want, err := os.ReadFile(wantPath)
	if err != nil {
		t.Fatal(err)
	}
	if want = bytes.ReplaceAll(want, []byte("@MCPHUB@"), []byte(placeholder)); !bytes.Equal(got, want) {
		t.Errorf("result differs from %s:\n%s", wantPath, got)
	}
}

// TestConnectEntryShapes prints every client's entry with auth on and
// checks it has the client's own shape: its name for the URL, its header
// key, and Claude Desktop's stdio entry.
func TestConnectEntryShapes(t *testing.T) {
	home := connectHome(t)
	tok := turnAuthOn(t, home)
	url, bearer := "http://127.0.0.1:7733/mcp", map[string]any{"Authorization": "Bearer " + tok}
	exe := hubExe(t)
	want := map[string]map[string]any{
		"claude":         {"type": "http", "url": url, "headers": bearer},
		"claude-desktop": {"command": exe, "args": []any{"stdio"}},
		"cursor":         {"url": url, "headers": bearer},
		"vscode":         {"type": "http", "url": url, "headers": bearer},
		"windsurf":       {"serverUrl": url, "headers": bearer},
		"gemini":         {"httpUrl": url, "headers": bearer},
		"zed":            {"url": url, "headers": bearer},
		"codex":          {"url": url, "http_headers": bearer},
	}
	for _, name := range clientconf.Names() {
		c, _ := clientconf.Lookup(name)
		code, out, errOut := runCLI(t, "connect", name)
		if code != 0 {
			t.Fatalf("connect %s: %d %s", name, code, errOut)
		}
		// The snippet follows the one comment line.
		_, body, _ := strings.Cut(out, "\n")
		body, _, _ = strings.Cut(body, "# or:")
		got := decodeServers(t, []byte(body), c.Key)["mcphub"]
		if !reflect.DeepEqual(normalize(got), normalize(want[name])) {
			t.Errorf("%s: entry %v, want %v\n%s", name, got, want[name], out)
		}
		if !strings.Contains(out, c.Title+": add this") {
			t.Errorf("%s: no hint naming the client:\n%s", name, out)
		}
	}
	if _, out, _ := runCLI(t, "connect", "claude"); !strings.Contains(out,
		`claude mcp add --transport http --scope user --header 'Authorization: Bearer `+tok+`' mcphub `+url) {
		t.Errorf("connect claude: no claude mcp add line:\n%s", out)
	}
}

// TestConnectStdioRunsThisRegistry: --stdio writes the stdio entry for any
// client, naming the registry when it is not the one mcphub finds by
// default.
func TestConnectStdioRunsThisRegistry(t *testing.T) {
	connectHome(t)
	exe := hubExe(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		client string
		extra  []string
		want   map[string]any
	}{
		{"cursor", nil, map[string]any{"command": exe, "args": []string{"stdio"}}},
		{"vscode", nil, map[string]any{"type": "stdio", "command": exe, "args": []string{"stdio"}}},
		{"codex", nil, map[string]any{"command": exe, "args": []string{"stdio"}}},
		{"gemini", []string{"--config", filepath.Join(dir, "other.toml")},
			map[string]any{"command": exe, "args": []string{"stdio", "--config", filepath.Join(dir, "other.toml")}}},
	} {
		c, _ := clientconf.Lookup(tc.client)
		path := filepath.Join(dir, tc.client, "config")
		args := append([]string{"connect", tc.client, "--stdio", "--write", "--file", path}, tc.extra...)
		if code, out, errOut := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: %d %s%s", args, code, out, errOut)
		}
		data, _ := os.ReadFile(path)
		if got := decodeServers(t, data, c.Key)["mcphub"]; !reflect.DeepEqual(normalize(got), normalize(tc.want)) {
			t.Errorf("%s: entry %v, want %v", tc.client, got, tc.want)
		}
		if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("%s: a new file must be created with mode 0600: %v", tc.client, err)
		}
		if backups, _ := filepath.Glob(path + ".mcphub-backup-*"); len(backups) != 0 {
			t.Errorf("%s: a new file needs no backup: %v", tc.client, backups)
		}
	}
}

// TestConnectWritesEachClientsOwnFile: without --file, --write edits the
// file each client reads.
func TestConnectWritesEachClientsOwnFile(t *testing.T) {
	home := connectHome(t)
	t.Chdir(t.TempDir())
	cwd, _ := os.Getwd()
	cfgDir, _ := os.UserConfigDir()
	files := map[string]string{
		"claude":         filepath.Join(home, ".claude.json"),
		"claude-desktop": filepath.Join(cfgDir, "Claude", "claude_desktop_config.json"),
		"cursor":         filepath.Join(home, ".cursor", "mcp.json"),
		"vscode":         filepath.Join(cwd, ".vscode", "mcp.json"),
		"windsurf":       filepath.Join(home, ".codeium", "windsurf", "mcp_config.json"),
		"gemini":         filepath.Join(home, ".gemini", "settings.json"),
		"zed":            filepath.Join(home, ".config", "zed", "settings.json"),
		"codex":          filepath.Join(home, ".codex", "config.toml"),
	}
	for _, name := range clientconf.Names() {
		c, _ := clientconf.Lookup(name)
		code, out, errOut := runCLI(t, "connect", name, "--write")
		if code != 0 || !strings.Contains(out, files[name]) {
			t.Fatalf("connect %s --write: %d %s%s", name, code, out, errOut)
		}
		data, err := os.ReadFile(files[name])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if decodeServers(t, data, c.Key)["mcphub"] == nil {
			t.Errorf("%s: no hub entry in %s:\n%s", name, files[name], data)
		}
	}
	codexHome := t.TempDir()
	t.Setenv("CODEX_HOME", codexHome)
	if code, _, errOut := runCLI(t, "connect", "codex", "--write"); code != 0 || !fileExists(filepath.Join(codexHome, "config.toml")) {
		t.Errorf("connect codex with $CODEX_HOME: %d %s", code, errOut)
	}
}

// TestConnectRefusesWhatItCannotEditSafely: a file that does not parse, an
// entry Codex holds inline, and --move without --write change nothing.
func TestConnectRefusesWhatItCannotEditSafely(t *testing.T) {
	connectHome(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		client, text string
		args         []string
		want         []string
	}{
		{"codex", "model = \"x\"\n\n[mcp_servers.a]\ncommand = \n", nil, []string{"config:4:"}},
		{"codex", "[mcp_servers]\nmcphub = { url = \"http://old\" }\n", nil,
			[]string{"replace it by hand", "[mcp_servers.mcphub]\nurl = \"http://127.0.0.1:7733/mcp\"\n"}},
		{"cursor", "{\"mcpServers\": {\"a\": 1,,}}", nil, []string{"does not parse", "line 1"}},
		{"cursor", "[]", nil, []string{"not a JSON object"}},
		{"cursor", `{"mcpServers": []}`, nil, []string{`"mcpServers" is not an object`}},
		{"cursor", "{}", []string{"--move"}, []string{"needs --write"}},
	} {
		path := filepath.Join(dir, "config")
		os.WriteFile(path, []byte(tc.text), 0o600)
		args := append([]string{"connect", tc.client, "--file", path}, tc.args...)
		if tc.args == nil {
			args = append(args, "--write", "--move")
		}
		code, out, errOut := runCLI(t, args...)
		for _, w := range tc.want {
			if !strings.Contains(out+errOut, w) {
				t.Errorf("%q: output lacks %q:\n%s%s", tc.text, w, out, errOut)
			}
		}
		if data, _ := os.ReadFile(path); code == 0 || string(data) != tc.text {
			t.Errorf("%q: exit %d, file now %q", tc.text, code, data)
		}
		if backups, _ := filepath.Glob(path + ".mcphub-backup-*"); len(backups) != 0 {
			t.Errorf("%q: a refused edit left backups %v", tc.text, backups)
		}
	}
}

// TestConnectMoveKeepsWhatItCannotRemove: a served Codex entry written
// inline stays, with the reason, while the hub's table is added.
func TestConnectMoveKeepsWhatItCannotRemove(t *testing.T) {
	connectHome(t)
	path := filepath.Join(t.TempDir(), "config.toml")
	text := "[mcp_servers]\ngithub = { command = \"npx\", args = [\"-y\", \"@modelcontextprotocol/server-github\"], env = { GITHUB_PERSONAL_ACCESS_TOKEN = \"ghp_example\" } }\n"
	os.WriteFile(path, []byte(text), 0o600)
	code, out, errOut := runCLI(t, "connect", "codex", "--write", "--move", "--file", path)
	if code != 0 || !strings.Contains(out, `kept "github" in `+path+`: the hub serves it as "github", but it is written inline`) ||
		strings.Contains(out, "removed") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	data, _ := os.ReadFile(path)
	if want := text + "\n[mcp_servers.mcphub]\nurl = \"http://127.0.0.1:7733/mcp\"\n"; string(data) != want {
		t.Errorf("file now\n%s\nwant\n%s", data, want)
	}
}

// An older entry for this same hub under another name (an HTTP entry at
// its /mcp endpoint, a `mcphub stdio` entry, an mcp-remote bridge to it)
// would make the client talk to the hub twice: --move removes it and says
// why. One that reaches a single server of the hub (/NAME/mcp, or mcphub
// stdio --server NAME) is the user's way to scope it, and stays.
func TestConnectMoveRemovesOlderHubEntries(t *testing.T) {
	connectHome(t)
	path := filepath.Join(t.TempDir(), "mcp.json")
	text := `{"mcpServers": {
  "old-hub": {"url": "http://localhost:7733/mcp/"},
  "hub-stdio": {"command": "/usr/local/bin/mcphub", "args": ["stdio"]},
  "bridge": {"command": "npx", "args": ["mcp-remote", "http://127.0.0.1:7733/mcp"]},
  "gh-only": {"url": "http://127.0.0.1:7733/github/mcp"},
  "gh-stdio": {"command": "mcphub", "args": ["stdio", "--server", "github"]},
  "gh-stdio-eq": {"command": "mcphub", "args": ["--data-dir", "/d", "stdio", "--server=github"]},
  "gh-bridge": {"command": "npx", "args": ["-y", "mcp-remote@latest", "http://127.0.0.1:7733/github/mcp"]},
  "health": {"url": "http://127.0.0.1:7733/healthz"},
  "elsewhere": {"url": "http://127.0.0.1:9999/mcp"}
}}`
	os.WriteFile(path, []byte(text), 0o600)
	code, out, errOut := runCLI(t, "connect", "cursor", "--write", "--move", "--file", path)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, name := range []string{"old-hub", "hub-stdio", "bridge"} {
		if want := fmt.Sprintf(`removed %q from %s (it points at this hub too; "mcphub" replaces it)`, name, path); !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for name, note := range map[string]string{
		"gh-only":     `it points at only the hub's server "github" (/github/mcp), not at every server`,
		"gh-stdio":    `it runs mcphub stdio --server github, which shows only that server of this hub`,
		"gh-stdio-eq": `it runs mcphub stdio --server github, which shows only that server of this hub`,
		"gh-bridge":   `it points at only the hub's server "github" (/github/mcp)`,
		"health":      `it points at /healthz on this hub, not at its /mcp endpoint`,
		"elsewhere":   `the hub does not serve it`,
	} {
		if want := fmt.Sprintf("kept %q in %s: %s", name, path, note); !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	servers := decodeServers(t, mustRead(t, path), "mcpServers")
	for _, name := range []string{"gh-only", "gh-stdio", "gh-stdio-eq", "gh-bridge", "health", "elsewhere", "mcphub"} {
		if servers[name] == nil {
			t.Errorf("%q is gone", name)
		}
	}
	if servers["old-hub"] != nil || len(servers) != 7 {
		t.Errorf("file now: %v", servers)
	}
}

// writeRegistry replaces the registry of a fresh connectHome.
func writeRegistry(t *testing.T, home, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(home, ".config", "mcphub", "hub.toml"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestConnectMoveRemovesOnlyWhatTheHubRuns: --move removes an entry only
// when the hub's server runs just what it runs: env keys and values (the
// registry's ${VAR} expanded), cwd, the command's file when both paths are
// absolute, headers of a URL, and no tool filter. An entry that shares
// only the command and args, or the URL, stays with a note naming what
// differs and no value.
func TestConnectMoveRemovesOnlyWhatTheHubRuns(t *testing.T) {
	home := connectHome(t)
	t.Setenv("GITHUB_TOKEN", "ghp_hubtoken")
	t.Setenv("API_TOKEN", "api_secret_value")
	dir := t.TempDir()
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	fsCmd, otherCmd := filepath.Join(dir, "bin", "mcp-fs"), filepath.Join(dir, "other", "mcp-fs")
	root, tmp := filepath.Join(dir, "srv"), filepath.Join(dir, "tmp")
	writeRegistry(t, home, `[hub]
listen = "127.0.0.1:7733"
auth = "none"

[servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]
env = { GITHUB_PERSONAL_ACCESS_TOKEN = "${GITHUB_TOKEN}" }

[servers.fs]
command = `+q(fsCmd)+`
args = ["--root", "/srv"]
cwd = `+q(root)+`

[servers.search]
command = "search-mcp"
args = ["--fast"]
allow = ["search_*"]

[servers.api]
url = "https://api.example.com/mcp"
headers = { Authorization = "Bearer ${API_TOKEN}" }
`)
	path := filepath.Join(t.TempDir(), "mcp.json")
	gh := `"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]`
	text := `{"mcpServers": {
  "github": {` + gh + `, "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_hubtoken"}},
  "github-ref": {` + gh + `, "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${env:GITHUB_TOKEN}"}},
  "github-personal": {` + gh + `, "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_personal"}},
  "github-noenv": {` + gh + `},
  "github-extra": {` + gh + `, "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_hubtoken", "GITHUB_HOST": "ghe.example.com"}},
  "github-unset": {` + gh + `, "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${env:MCPHUB_TEST_UNSET_VAR}"}},
  "fs": {"command": ` + q(fsCmd) + `, "args": ["--root", "/srv"], "cwd": ` + q(root) + `},
  "fs-other": {"command": ` + q(otherCmd) + `, "args": ["--root", "/srv"], "cwd": ` + q(root) + `},
  "fs-cwd": {"command": "mcp-fs", "args": ["--root", "/srv"], "cwd": ` + q(tmp) + `},
  "search": {"command": "search-mcp", "args": ["--fast"]},
  "api": {"url": "https://api.example.com/mcp/", "headers": {"authorization": "Bearer api_secret_value"}},
  "api-other": {"url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer someone_elses"}}
}}`
	os.WriteFile(path, []byte(text), 0o600)
	code, out, errOut := runCLI(t, "connect", "cursor", "--write", "--move", "--file", path)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for name, served := range map[string]string{"github": "github", "github-ref": "github", "fs": "fs", "api": "api"} {
		if want := fmt.Sprintf("removed %q from %s (the hub serves it as %q)", name, path, served); !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for name, why := range map[string]string{
		"github-personal": `it has the same command and args as the hub's "github", but its env GITHUB_PERSONAL_ACCESS_TOKEN has another value`,
		"github-noenv":    `the hub's server sets the env GITHUB_PERSONAL_ACCESS_TOKEN, which it does not`,
		"github-extra":    `it sets the env GITHUB_HOST, which the hub's server does not`,
		"github-unset":    `its env GITHUB_PERSONAL_ACCESS_TOKEN cannot be checked`,
		"fs-other":        `the hub's "fs", but its command is another file than the hub's`,
		"fs-cwd":          `its working directory differs`,
		"search":          `the hub's "search", but the hub's server exposes only some of its tools`,
		"api-other":       `it has the same URL as the hub's "api", but its header Authorization has another value`,
	} {
		if want := fmt.Sprintf("kept %q in %s: ", name, path); !strings.Contains(out, want) || !strings.Contains(out, why) {
			t.Errorf("output lacks %q ... %q:\n%s", want, why, out)
		}
	}
	for _, secret := range []string{"ghp_hubtoken", "ghp_personal", "api_secret_value", "someone_elses", "ghe.example.com"} {
		if strings.Contains(out+errOut, secret) {
			t.Errorf("the output shows the value %q:\n%s%s", secret, out, errOut)
		}
	}
	servers := decodeServers(t, mustRead(t, path), "mcpServers")
	for _, name := range []string{"github-personal", "github-noenv", "github-extra", "github-unset", "fs-other", "fs-cwd", "search", "api-other"} {
		if servers[name] == nil {
			t.Errorf("%q was removed", name)
		}
	}
	if len(servers) != 9 {
		t.Errorf("%d entries left, want 8 and the hub's: %v", len(servers), servers)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestConnectWriteKeepsTheUsersSettings: --write over an existing hub
// entry changes only what mcphub writes there; the client's own settings
// on the entry (Cursor's alwaysAllow, Codex's timeouts, enabled flag and
// tool approvals) stay, and running it again changes nothing.
func TestConnectWriteKeepsTheUsersSettings(t *testing.T) {
	home := connectHome(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		client, file, in, want string
	}{
		{"cursor", "mcp.json",
			"{\n  \"mcpServers\": {\n    \"mcphub\": {\n      \"url\": \"http://127.0.0.1:9999/mcp\",\n      \"alwaysAllow\": [\"t\"],\n      \"disabled\": false\n    }\n  }\n}\n",
			"{\n  \"mcpServers\": {\n    \"mcphub\": {\n      \"url\": \"http://127.0.0.1:7733/mcp\",\n      \"alwaysAllow\": [\"t\"],\n      \"disabled\": false\n    }\n  }\n}\n"},
		{"codex", "config.toml",
			"[mcp_servers.mcphub]\ncommand = \"/old/mcphub\"\nargs = [\"stdio\"]\nstartup_timeout_sec = 30\nenabled = false\n\n[mcp_servers.mcphub.tools.search]\napproval_mode = \"approve\"\n",
			"[mcp_servers.mcphub]\nstartup_timeout_sec = 30\nenabled = false\nurl = \"http://127.0.0.1:7733/mcp\"\n\n[mcp_servers.mcphub.tools.search]\napproval_mode = \"approve\"\n"},
	} {
		path := filepath.Join(dir, tc.file)
		os.WriteFile(path, []byte(tc.in), 0o600)
		code, out, errOut := runCLI(t, "connect", tc.client, "--write", "--file", path)
		if got := string(mustRead(t, path)); code != 0 || got != tc.want {
			t.Errorf("%s: exit %d\n%s%s\nfile now\n%s\nwant\n%s", tc.client, code, out, errOut, got, tc.want)
		}
		code, out, _ = runCLI(t, "connect", tc.client, "--write", "--file", path)
		backups, _ := filepath.Glob(path + ".mcphub-backup-*")
		if code != 0 || !strings.Contains(out, path+" is already up to date") || len(backups) != 1 || string(mustRead(t, path)) != tc.want {
			t.Errorf("%s: running it again changed something (%d backups):\n%s", tc.client, len(backups), out)
		}
	}

	// With auth on, the header joins the entry; the user's members stay.
	tok := turnAuthOn(t, home)
	path := filepath.Join(dir, "mcp.json")
	if code, out, errOut := runCLI(t, "connect", "cursor", "--write", "--file", path); code != 0 {
		t.Fatalf("exit %d %s%s", code, out, errOut)
	}
	hub, _ := decodeServers(t, mustRead(t, path), "mcpServers")["mcphub"].(map[string]any)
	want := map[string]any{"url": "http://127.0.0.1:7733/mcp", "alwaysAllow": []any{"t"}, "disabled": false,
		"headers": map[string]any{"Authorization": "Bearer " + tok}}
	if !reflect.DeepEqual(hub, want) {
		t.Errorf("entry %v, want %v", hub, want)
	}
}

// TestConnectMoveReadsZedsOlderShape: Zed's older entries hold the command
// as an object ({"source": "custom", "command": {"path", "args", "env"}}),
// which --move reads as import does.
func TestConnectMoveReadsZedsOlderShape(t *testing.T) {
	connectHome(t)
	path := filepath.Join(t.TempDir(), "settings.json")
	text := `{
  // Zed settings
  "context_servers": {
    "github": {
      "source": "custom",
      "command": {
        "path": "npx",
        "args": ["-y", "@modelcontextprotocol/server-github"],
        "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_example"}
      }
    },
    "github-personal": {
      "source": "custom",
      "command": {
        "path": "npx",
        "args": ["-y", "@modelcontextprotocol/server-github"],
        "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_personal"}
      }
    }
  },
}`
	os.WriteFile(path, []byte(text), 0o600)
	code, out, errOut := runCLI(t, "connect", "zed", "--write", "--move", "--file", path)
	if code != 0 || !strings.Contains(out, `removed "github" from `+path+` (the hub serves it as "github")`) ||
		!strings.Contains(out, `kept "github-personal" in `+path+`: it has the same command and args as the hub's "github"`) {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	servers := decodeServers(t, mustRead(t, path), "context_servers")
	if servers["github"] != nil || servers["github-personal"] == nil || servers["mcphub"] == nil {
		t.Errorf("servers now %v", servers)
	}
}

// TestConnectMoveKeepsStrictJSONStrict: a strict file whose commas have
// space or a line break before them stays standard JSON when the member
// before the closing brace goes.
func TestConnectMoveKeepsStrictJSONStrict(t *testing.T) {
	connectHome(t)
	dir := t.TempDir()
	for i, text := range []string{
		`{"mcpServers":{"mcphub":{"url":"http://127.0.0.1:7733/mcp"} ,"deepwiki":{"url":"https://mcp.deepwiki.com/mcp"}}}`,
		"{ \"mcpServers\":\n  { \"mcphub\": { \"url\": \"http://127.0.0.1:7733/mcp\" }\n  , \"deepwiki\": { \"url\": \"https://mcp.deepwiki.com/mcp\" }\n  }\n}\n",
	} {
		path := filepath.Join(dir, fmt.Sprintf("mcp%d.json", i))
		os.WriteFile(path, []byte(text), 0o600)
		code, out, errOut := runCLI(t, "connect", "cursor", "--write", "--move", "--file", path)
		got := mustRead(t, path)
		if code != 0 || !json.Valid(got) || !strings.Contains(out, `removed "deepwiki"`) {
			t.Errorf("%q: exit %d\n%s%s\nfile now\n%s", text, code, out, errOut, got)
		}
	}
}

// TestConnectWritesThroughADanglingSymlink: a client file that is a link
// to a file not created yet (dotfiles) stays a link; the target is
// written. A UTF-8 byte order mark is read past and kept.
func TestConnectWritesThroughADanglingSymlink(t *testing.T) {
	connectHome(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "dotfiles", "mcp.json")
	os.MkdirAll(filepath.Dir(target), 0o700)
	link := filepath.Join(dir, "cursor", "mcp.json")
	os.MkdirAll(filepath.Dir(link), 0o700)
	if err := os.Symlink("../dotfiles/mcp.json", link); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	if code, out, errOut := runCLI(t, "connect", "cursor", "--write", "--file", link); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if info, err := os.Lstat(link); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v", err)
	}
	if servers := decodeServers(t, mustRead(t, target), "mcpServers"); servers["mcphub"] == nil {
		t.Errorf("the target holds no hub entry:\n%s", mustRead(t, target))
	}

	bom := "\xef\xbb\xbf"
	path := filepath.Join(dir, "bom.json")
	os.WriteFile(path, []byte(bom+"{\n  \"mcpServers\": {\n    \"x\": {\"url\": \"http://x\"}\n  }\n}\n"), 0o600)
	code, out, errOut := runCLI(t, "connect", "cursor", "--write", "--file", path)
	want := bom + "{\n  \"mcpServers\": {\n    \"x\": {\"url\": \"http://x\"},\n    \"mcphub\": {\n      \"url\": \"http://127.0.0.1:7733/mcp\"\n    }\n  }\n}\n"
	if got := string(mustRead(t, path)); code != 0 || got != want {
		t.Errorf("exit %d\n%s%s\nfile now %q\nwant %q", code, out, errOut, got, want)
	}
	if _, out, _ := runCLI(t, "connect", "cursor", "--write", "--file", path); !strings.Contains(out, "already up to date") {
		t.Errorf("a second run changed the file:\n%s", out)
	}
	codex := filepath.Join(dir, "config.toml")
	os.WriteFile(codex, []byte(bom+"model = \"m\"\n"), 0o600)
	if code, out, errOut := runCLI(t, "connect", "codex", "--write", "--file", codex); code != 0 ||
		string(mustRead(t, codex)) != bom+"model = \"m\"\n\n[mcp_servers.mcphub]\nurl = \"http://127.0.0.1:7733/mcp\"\n" {
		t.Errorf("exit %d\n%s%s\nfile now %q", code, out, errOut, mustRead(t, codex))
	}
}

// TestConnectJSONReport: --json prints one object saying what was done,
// with no secret value in it.
func TestConnectJSONReport(t *testing.T) {
	home := connectHome(t)
	tok := turnAuthOn(t, home)
	path := filepath.Join(t.TempDir(), "mcp.json")
	os.WriteFile(path, []byte(`{"mcpServers": {
  "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_example"}},
  "github-personal": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_personal"}},
  "linear": {"url": "https://mcp.linear.app/sse"}
}}`), 0o600)
	type report struct {
		Client, File, Backup, Added, Updated string
		Wrote                                bool
		Removed                              []struct{ Name, Reason string }
		Kept                                 []struct{ Name, Note string }
	}
	run := func() report {
		t.Helper()
		code, out, errOut := runCLI(t, "connect", "cursor", "--write", "--move", "--json", "--file", path)
		if code != 0 || strings.Count(out, "\n") != 1 {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
		for _, secret := range []string{tok, "ghp_example", "ghp_personal"} {
			if strings.Contains(out+errOut, secret) {
				t.Errorf("the report shows a secret:\n%s", out)
			}
		}
		var r report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("not one JSON object: %v\n%s", err, out)
		}
		return r
	}
	r := run()
	backups, _ := filepath.Glob(path + ".mcphub-backup-*")
	if r.Client != "cursor" || r.File != path || !r.Wrote || len(backups) != 1 || r.Backup != backups[0] || r.Added != "mcphub" || r.Updated != "" ||
		len(r.Removed) != 1 || r.Removed[0].Name != "github" || r.Removed[0].Reason != `the hub serves it as "github"` ||
		len(r.Kept) != 2 || r.Kept[0].Name != "github-personal" || !strings.Contains(r.Kept[0].Note, "GITHUB_PERSONAL_ACCESS_TOKEN has another value") ||
		r.Kept[1].Name != "linear" {
		t.Errorf("first report %+v", r)
	}
	r = run()
	if r.Wrote || r.Backup != "" || r.Added != "" || r.Updated != "" || len(r.Removed) != 0 || len(r.Kept) != 2 {
		t.Errorf("second report %+v", r)
	}
	if code, _, errOut := runCLI(t, "connect", "cursor", "--json"); code == 0 || !strings.Contains(errOut, "needs --write") {
		t.Errorf("--json without --write: %d %s", code, errOut)
	}

	codex := filepath.Join(t.TempDir(), "config.toml")
	text := "[mcp_servers]\nmcphub = { url = \"http://old\" }\n"
	os.WriteFile(codex, []byte(text), 0o600)
	code, out, _ := runCLI(t, "connect", "codex", "--write", "--json", "--file", codex)
	var failed struct {
		Wrote bool
		Error string
	}
	if err := json.Unmarshal([]byte(out), &failed); code != 1 || err != nil || failed.Wrote || !strings.Contains(failed.Error, "replace it by hand") || strings.Contains(out, tok) {
		t.Errorf("an entry it cannot edit: exit %d %v\n%s", code, err, out)
	}
}
