package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcphub/mcphub/hubclient"
)

// freshHome points HOME, the config and data dirs at a new temp dir, so the
// commands behave as on a machine that never ran mcphub.
func freshHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("MCPHUB_CONFIG", "")
	t.Setenv("MCPHUB_DATA", "")
	return home
}

func TestRegistryCommandsOnAFreshHome(t *testing.T) {
	home := freshHome(t)
	path := filepath.Join(home, ".config", "mcphub", "hub.toml")
	// A port nothing listens on, so list reports that no hub runs.
	code, out, errOut := runCLI(t, "add", "a", "--", "echo", "hi")
	if code != 0 || !strings.Contains(out, `added stdio server "a"`) {
		t.Fatalf("add a: %d %q %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "created a new registry at "+path) {
		t.Errorf("the first command must say where it created the registry; stderr %q", errOut)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("registry file: %v mode %v", err, info.Mode())
	}
	// A variable unset where the hub would run is the hub's business: the
	// server is added, and add says what will happen and how to fix it.
	code, _, errOut = runCLI(t, "add", "b", "--url", "http://127.0.0.1:1/mcp", "--header", "Authorization=Bearer ${SOME_TOKEN}")
	if code != 0 || !strings.Contains(errOut, "SOME_TOKEN is not set in this shell (no hub is running") {
		t.Fatalf("adding a server whose ${VAR} is unset must warn naming it: %d %q", code, errOut)
	}
	t.Setenv("SOME_TOKEN", "s3cret")
	if code, _, errOut := runCLI(t, "add", "b", "--force", "--url", "http://127.0.0.1:1/mcp", "--header", "Authorization=Bearer ${SOME_TOKEN}"); code != 0 || errOut != "" {
		t.Fatalf("add b: %d %s", code, errOut)
	}
	code, out, _ = runCLI(t, "list", "--json")
	if code != 0 {
		t.Fatalf("list --json exited %d", code)
	}
	var entries []hubclient.ListEntry
	if err := json.Unmarshal([]byte(out), &entries); err != nil {
		t.Fatalf("list --json is not JSON: %v\n%s", err, out)
	}
	names := map[string]hubclient.ListEntry{}
	for _, e := range entries {
		names[e.Name] = e
	}
	if names["a"].Kind != "stdio" || names["a"].Command != "echo" || names["b"].Kind != "remote" || names["b"].URL != "http://127.0.0.1:1/mcp" {
		t.Fatalf("list --json: %+v", entries)
	}
	if strings.Contains(out, "SOME_TOKEN") || strings.Contains(out, "s3cret") {
		t.Errorf("list shows a header value: %s", out)
	}
	if code, out, _ := runCLI(t, "remove", "a"); code != 0 || !strings.Contains(out, `removed server "a"`) {
		t.Fatalf("remove a: %d %q", code, out)
	}
	code, out, _ = runCLI(t, "list")
	if code != 0 || strings.Contains(out, "echo hi") || !strings.Contains(out, "http://127.0.0.1:1/mcp") || !strings.Contains(out, "no hub running") {
		t.Fatalf("list after remove: %d\n%s", code, out)
	}
	code, _, errOut = runCLI(t, "remove", "zzz")
	if code == 0 || !strings.Contains(errOut, "b, demo") {
		t.Fatalf("removing an unknown server must fail and list the known ones: %d %q", code, errOut)
	}
	code, _, errOut = runCLI(t, "add", "b", "--url", "http://127.0.0.1:2/mcp")
	if code == 0 || !strings.Contains(errOut, "--force") {
		t.Fatalf("adding an existing name must fail and mention --force: %d %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "add", "b", "--force", "--url", "http://127.0.0.1:2/mcp"); code != 0 {
		t.Fatalf("add --force: %d %q", code, errOut)
	}
}

func TestAddRefusesBadInput(t *testing.T) {
	freshHome(t)
	for _, args := range [][]string{
		{"add", "Bad_Name", "--", "echo"},
		{"add", "x"},
		{"add", "x", "--url", "http://h/mcp", "--", "echo"},
		{"add", "x", "--env", "NOEQUALS", "--", "echo"},
		{"add", "x", "--header", "A=b", "--", "echo"},
		{"add", "x", "--url", "ftp://h/mcp"},
	} {
		if code, _, _ := runCLI(t, args...); code == 0 {
			t.Errorf("mcphub %v succeeded; want an error", args)
		}
	}
}

// TestFramingHeadersRefused: a header that would change how a request is
// framed or which session it belongs to is refused on the command line,
// naming the header, before anything is written or sent; curl's
// "Name: value" form is read like Name=value.
func TestFramingHeadersRefused(t *testing.T) {
	freshHome(t)
	cfg := filepath.Join(t.TempDir(), "hub.toml")
	t.Setenv("MCPHUB_CONFIG", cfg)
	for _, args := range [][]string{
		{"probe", "--url", "http://127.0.0.1:1/mcp", "--header", "Transfer-Encoding: chunked"},
		{"probe", "--url", "http://127.0.0.1:1/mcp", "--header", "Content-Length=0"},
		{"add", "x", "--url", "http://127.0.0.1:1/mcp", "--header", "Mcp-Session-Id: abc"},
		{"add", "x", "--url", "http://127.0.0.1:1/mcp", "--header", "host=example.com"},
	} {
		code, _, errOut := runCLI(t, args...)
		name := strings.TrimSpace(strings.FieldsFunc(args[len(args)-1], func(r rune) bool { return r == ':' || r == '=' })[0])
		if code == 0 || !strings.Contains(errOut, name) || !strings.Contains(errOut, "mcphub sets this header itself") {
			t.Errorf("mcphub %q: exit %d, %q; want a refusal naming %s", args, code, errOut, name)
		}
	}
	if code, _, errOut := runCLI(t, "add", "z", "--url", "http://127.0.0.1:1/mcp", "--header", "X-Key: 1", "--header", "x-key=2"); code == 0 || !strings.Contains(errOut, "given twice") {
		t.Errorf("a header given twice in two cases: exit %d %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "add", "y", "--url", "http://127.0.0.1:1/mcp", "--header", "X-Api-Key: k"); code != 0 {
		t.Fatalf("add with a curl-style header: %d %q", code, errOut)
	}
	if data, _ := os.ReadFile(cfg); !strings.Contains(string(data), `X-Api-Key = "k"`) {
		t.Errorf("the curl-style header was not kept:\n%s", data)
	}
}

func TestValidatePrintsPositionsAndExits1(t *testing.T) {
	freshHome(t)
	bad := filepath.Join(t.TempDir(), "hub.toml")
	os.WriteFile(bad, []byte("[hub]\n[servers.x]\ncommand = \"a\"\nurl = \"http://x\"\ncomand = \"b\"\n"), 0o600)
	code, _, errOut := runCLI(t, "validate", bad)
	if code != 1 {
		t.Fatalf("validate on a broken file exited %d", code)
	}
	for _, want := range []string{"hub.toml:2:1: servers.x: both command and url", "hub.toml:5:1: servers.x.comand: unknown key; did you mean command?"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("validate output lacks %q:\n%s", want, errOut)
		}
	}
	good := filepath.Join(t.TempDir(), "hub.toml")
	os.WriteFile(good, []byte("[servers.x]\ncommand = \"a\"\n"), 0o600)
	if code, out, _ := runCLI(t, "validate", good); code != 0 || !strings.Contains(out, "is valid") {
		t.Fatalf("validate on a good file: %d %q", code, out)
	}
}

func TestImportAddsServersAndReportsNotes(t *testing.T) {
	freshHome(t)
	src := filepath.Join(t.TempDir(), "claude.json")
	os.WriteFile(src, []byte(`{"mcpServers": {
		"Files": {"command": "npx", "args": ["-y", "server-files"], "env": {"K": "v"}},
		"remote": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "k"}},
		"odd": {"command": "x", "envFile": ".env"}
	}}`), 0o600)
	code, out, errOut := runCLI(t, "import", src)
	if code != 0 {
		t.Fatalf("import: %d %q %q", code, out, errOut)
	}
	if !strings.Contains(out, "imported 3 servers") || !strings.Contains(errOut, "envFile") {
		t.Fatalf("import output %q, notes %q", out, errOut)
	}
	code, out, _ = runCLI(t, "import", src)
	if code != 0 || !strings.Contains(out, "skipped files") {
		t.Fatalf("a second import must skip existing names: %d %q", code, out)
	}
}

// A hub that runs but does not answer the question (an older mcphub, a
// refused token) is not taken for no hub: add does not claim what the
// hub's environment lacks from this shell's.
func TestAddUnsetVarsHubDoesNotSay(t *testing.T) {
	home := freshHome(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "forbidden", http.StatusForbidden)
	}))
	defer srv.Close()
	path := filepath.Join(home, ".config", "mcphub", "hub.toml")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	listen := strings.TrimPrefix(srv.URL, "http://")
	if err := os.WriteFile(path, []byte("[hub]\nlisten = \""+listen+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, "add", "b", "--url", "http://127.0.0.1:1/mcp", "--header", "Authorization=Bearer ${ADDTEST_UNSET_TOKEN}")
	if code != 0 {
		t.Fatalf("add: %d %q", code, errOut)
	}
	if strings.Contains(errOut, "no hub is running") || !strings.Contains(errOut, "could not ask the running hub whether it has ADDTEST_UNSET_TOKEN set") {
		t.Errorf("stderr = %q, want a note that the hub could not be asked", errOut)
	}
}
