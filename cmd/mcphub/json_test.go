package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/clientconf"
	"github.com/mcphub/mcphub/registry"
)

// jsonRun runs mcphub on e's registry and data directory, and decodes its
// stdout as exactly one JSON value into out: nothing may follow it.
func jsonRun(t *testing.T, e *goldenEnv, out any, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, errb bytes.Buffer
	code = run(append([]string{"--config", e.config, "--data-dir", e.dataDir}, args...), &o, &errb)
	dec := json.NewDecoder(bytes.NewReader(o.Bytes()))
	if err := dec.Decode(out); err != nil {
		t.Fatalf("mcphub %s: stdout is not JSON: %v\n%s\nstderr:\n%s", strings.Join(args, " "), err, o.String(), errb.String())
	}
	var more json.RawMessage
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		t.Fatalf("mcphub %s: stdout holds more than one JSON value:\n%s", strings.Join(args, " "), o.String())
	}
	return code, o.String(), errb.String()
}

// jsonError is the object a failed --json run prints.
type jsonError struct {
	Error string `json:"error"`
}

// TestJSONEveryCommand: each command that reports a result prints one JSON
// object with --json, describing what it did, and never a secret value; a
// failure still exits 1 and prints {"error": sentence}.
func TestJSONEveryCommand(t *testing.T) {
	e := goldenNewEnv(t)
	e.writeRegistry(t, fmt.Sprintf(goldenRegistry, e.closedAddr(t)))
	secrets := []string{"golden-header-secret", "golden-query-secret", "json-literal-secret", "ghp_json_import_secret"}
	for _, v := range goldenSecrets {
		secrets = append(secrets, v)
	}
	noSecret := func(t *testing.T, what, out string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s shows the secret %q:\n%s", what, s, out)
			}
		}
	}

	t.Run("add", func(t *testing.T) {
		var remote addResult
		code, out, errOut := jsonRun(t, e, &remote, "add", "api", "--url", "https://mcp.example.com/mcp",
			"--header", "Authorization=Bearer ${JSON_UNSET_TOKEN}", "--json")
		if code != 0 || remote.Name != "api" || remote.Kind != "remote" || remote.File != e.config || !remote.Enabled ||
			len(remote.Warnings) != 1 || !strings.Contains(remote.Warnings[0], "JSON_UNSET_TOKEN is not set") || strings.Contains(remote.Warnings[0], "\n") {
			t.Errorf("add --json: exit %d, %+v; want the remote server api with one warning about JSON_UNSET_TOKEN", code, remote)
		}
		if !strings.Contains(errOut, "warning: JSON_UNSET_TOKEN") {
			t.Errorf("add --json no longer warns on stderr: %q", errOut)
		}
		var local addResult
		code, out2, _ := jsonRun(t, e, &local, "add", "local", "--env", "KEY=json-literal-secret", "--disabled", "--json", "--", "echo", "hi")
		if code != 0 || local.Kind != "stdio" || local.Enabled || local.Warnings == nil || len(local.Warnings) != 0 {
			t.Errorf("add --json of a disabled stdio server: exit %d, %+v", code, local)
		}
		noSecret(t, "add --json", out+out2)
	})
	t.Run("enable and disable", func(t *testing.T) {
		var r enableResult
		if code, _, _ := jsonRun(t, e, &r, "enable", "local", "--json"); code != 0 || r.Name != "local" || !r.Enabled || r.File != e.config {
			t.Errorf("enable --json: exit %d, %+v", code, r)
		}
		r = enableResult{}
		if code, _, _ := jsonRun(t, e, &r, "disable", "local", "--json"); code != 0 || r.Name != "local" || r.Enabled || r.Warnings == nil {
			t.Errorf("disable --json: exit %d, %+v", code, r)
		}
	})
	t.Run("remove", func(t *testing.T) {
		var r removeResult
		if code, _, _ := jsonRun(t, e, &r, "remove", "local", "--json"); code != 0 || r != (removeResult{Name: "local", File: e.config, Removed: true}) {
			t.Errorf("remove --json: exit %d, %+v", code, r)
		}
		var fail jsonError
		code, _, errOut := jsonRun(t, e, &fail, "remove", "local", "--json")
		if code != 1 || !strings.Contains(fail.Error, `no server "local"`) || !strings.Contains(errOut, `no server "local"`) {
			t.Errorf("remove --json of an unknown server: exit %d, %+v, stderr %q; want exit 1 and the sentence", code, fail, errOut)
		}
	})
	t.Run("validate", func(t *testing.T) {
		t.Setenv("JSON_UNSET_TOKEN", "set now")
		var r registry.Validation
		if code, _, _ := jsonRun(t, e, &r, "validate", "--json"); code != 0 || !r.Valid || r.Servers != 5 || r.Enabled != 4 || r.Problems == nil || r.Error != "" {
			t.Errorf("validate --json: exit %d, %+v; want valid with 5 servers, 4 enabled", code, r)
		}
		bad := filepath.Join(e.tmp, "bad.toml")
		os.WriteFile(bad, []byte(goldenInvalidRegistry), 0o600)
		r = registry.Validation{}
		code, out, _ := jsonRun(t, e, &r, "validate", bad, "--json")
		if code != 1 || r.Valid || len(r.Problems) < 4 || r.Problems[0].Line == 0 || r.Problems[0].Message == "" || !strings.Contains(r.Error, "problems") {
			t.Errorf("validate --json of an invalid file: exit %d, %+v", code, r)
		}
		noSecret(t, "validate --json", out)
	})
	t.Run("version", func(t *testing.T) {
		var r versionResult
		if code, _, _ := jsonRun(t, e, &r, "version", "--json"); code != 0 || r.Version != mcphubVersion() || r.Go == "" || r.OS == "" || !slices.Contains(r.ProtocolVersions, "2025-11-25") {
			t.Errorf("version --json: exit %d, %+v", code, r)
		}
	})
	t.Run("token", func(t *testing.T) {
		var r tokenResult
		code, out, _ := jsonRun(t, e, &r, "token", "--json")
		if code != 0 || r.TokenFile == "" || r.Auth != "none" {
			t.Fatalf("token --json: exit %d, %+v", code, r)
		}
		tok, err := os.ReadFile(r.TokenFile)
		if err != nil || len(strings.TrimSpace(string(tok))) < 20 {
			t.Fatalf("token --json wrote no token to %s: %v", r.TokenFile, err)
		}
		if strings.Contains(out, strings.TrimSpace(string(tok))) {
			t.Errorf("token --json prints the token")
		}
		var fail jsonError
		if code, _, _ := jsonRun(t, e, &fail, "token", "--json"); code != 1 || !strings.Contains(fail.Error, "--force") {
			t.Errorf("token --json over an existing token: exit %d, %+v", code, fail)
		}
	})
	t.Run("import", func(t *testing.T) {
		file := filepath.Join(e.tmp, "claude_desktop_config.json")
		os.WriteFile(file, []byte(`{"mcpServers": {
			"gh": {"command": "npx", "args": ["-y", "server-github"], "env": {"GITHUB_TOKEN": "ghp_json_import_secret"}},
			"github": {"command": "npx", "args": ["other"]}
		}}`), 0o600)
		var r clientconf.ImportReport
		code, out, errOut := jsonRun(t, e, &r, "import", file, "--json")
		if code != 0 || r.File != file || r.Registry != e.config || !slices.Equal(r.Added, []string{"gh"}) ||
			len(r.Skipped) != 1 || r.Skipped[0].Name != "github" || len(r.Secrets) != 1 || r.Secrets[0].Var == "" || len(r.Notes) == 0 || r.Error != "" {
			t.Errorf("import --json: exit %d, %+v\nstderr %s", code, r, errOut)
		}
		if len(r.Disabled) != 1 || r.Disabled[0].Name != "gh" {
			t.Errorf("import --json: the server whose secret this shell lacks is not listed disabled: %+v", r.Disabled)
		}
		noSecret(t, "import --json", out+errOut)
	})
	t.Run("errors", func(t *testing.T) {
		for _, args := range [][]string{
			{"status", "--json"},
			{"add", "x", "--json"},
			{"restart", "github", "--json"},
			{"sessions", "--json"},
			{"sessions", "rm", "abc", "--json"},
		} {
			var fail jsonError
			code, _, _ := jsonRun(t, e, &fail, args...)
			if code != 1 || fail.Error == "" || strings.Contains(fail.Error, "exit status") {
				t.Errorf("mcphub %s: exit %d, %+v; want exit 1 and a sentence", strings.Join(args, " "), code, fail)
			}
		}
		e.writeRegistry(t, goldenSyntaxErrorRegistry)
		var fail jsonError
		if code, _, errOut := jsonRun(t, e, &fail, "list", "--json"); code != 1 || !strings.Contains(fail.Error, "the registry has 1 problem") || errOut == "" {
			t.Errorf("list --json of a broken registry: exit %d, %+v, stderr %q", code, fail, errOut)
		}
	})
}

// TestJSONHubCommands: restart and sessions rm answer in JSON what the hub
// did, and their refusals are {"error": sentence}.
func TestJSONHubCommands(t *testing.T) {
	h, addr, reg := controlHub(t, hubConfig{}, "")
	e := goldenNewEnv(t)
	e.addPort(addr)
	e.writeRegistry(t, reg)

	var r api.Restarted
	if code, _, errOut := jsonRun(t, e, &r, "restart", "weather", "--json"); code != 0 || r != (api.Restarted{Server: "weather", Status: "restarting"}) {
		t.Errorf("restart --json: exit %d, %+v, stderr %q", code, r, errOut)
	}
	var fail jsonError
	if code, _, _ := jsonRun(t, e, &fail, "restart", "nope", "--json"); code != 1 || !strings.HasPrefix(fail.Error, "the hub refused: ") || !strings.Contains(fail.Error, "its enabled servers: weather") {
		t.Errorf("restart --json of an unknown server: exit %d, %+v", code, fail)
	}

	h.connect("/mcp", nil)
	var list []struct {
		ID string `json:"id"`
	}
	if code, _, _ := jsonRun(t, e, &list, "sessions", "--json"); code != 0 || len(list) != 1 {
		t.Fatalf("sessions --json: exit %d, %+v; want the one session", code, list)
	}
	var ended sessionEnded
	if code, _, errOut := jsonRun(t, e, &ended, "sessions", "rm", list[0].ID, "--json"); code != 0 || ended != (sessionEnded{ID: list[0].ID, Ended: true}) {
		t.Errorf("sessions rm --json: exit %d, %+v, stderr %q", code, ended, errOut)
	}
	fail = jsonError{}
	if code, _, _ := jsonRun(t, e, &fail, "sessions", "rm", list[0].ID, "--json"); code != 1 || !strings.Contains(fail.Error, "no live session") || !strings.Contains(fail.Error, "mcphub sessions") {
		t.Errorf("sessions rm --json of an ended session: exit %d, %+v", code, fail)
	}
}
