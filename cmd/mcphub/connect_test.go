package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

func TestConnectPrintsAndMergesClientConfigs(t *testing.T) {
	home := freshHome(t)
	// auth on: the entry carries the bearer token.
	runCLI(t, "token")
	cfg := filepath.Join(home, ".config", "mcphub", "hub.toml")
	data, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, []byte(strings.Replace(string(data), `auth = "none"`, `auth = "token"`, 1)), 0o600)
	tok, _ := os.ReadFile(filepath.Join(home, ".config", "mcphub", "token"))

	code, out, errOut := runCLI(t, "connect", "cursor")
	if code != 0 || !strings.Contains(out, `"url": "http://127.0.0.1:7733/mcp"`) || !strings.Contains(out, "Bearer "+strings.TrimSpace(string(tok))) {
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
