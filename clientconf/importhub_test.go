package clientconf

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/mcphub/mcphub/registry"
)

// TestImportSkipsTheHub: the entries `mcphub connect` writes, in every
// client's shape, are skipped with a note; the others are imported.
func TestImportSkipsTheHub(t *testing.T) {
	data := `{"mcpServers": {
	  "mcphub": {"type": "http", "url": "http://127.0.0.1:7733/mcp", "headers": {"Authorization": "Bearer ${MCPHUB_TOKEN}"}},
	  "hub-github": {"url": "http://localhost:7733/github/mcp"},
	  "hub-windsurf": {"serverUrl": "http://[::1]:7733/mcp"},
	  "hub-gemini": {"httpUrl": "http://127.0.0.1:7733/mcp"},
	  "hub-stdio": {"command": "/opt/bin/mcphub", "args": ["stdio"], "weird": 1},
	  "other-port": {"url": "http://127.0.0.1:8000/mcp"},
	  "files": {"command": "npx", "args": ["-y", "server-files"]}
	}}`
	res, err := Import([]byte(data), ImportOptions{Hub: registry.Self{Listens: []string{"0.0.0.0:7733"}}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range res.Specs {
		names = append(names, s.Name)
	}
	if want := []string{"files", "other-port"}; !reflect.DeepEqual(names, want) {
		t.Errorf("imported %v, want %v", names, want)
	}
	if want := []string{"hub-gemini", "hub-github", "hub-stdio", "hub-windsurf", "mcphub"}; !reflect.DeepEqual(res.HubEntries, want) {
		t.Errorf("HubEntries = %v, want %v", res.HubEntries, want)
	}
	assertNotes(t, res.Notes, `skipped "mcphub": it points at this hub`, `skipped "hub-stdio": it points at this hub`)
	for _, n := range res.Notes {
		if n == `server "hub-stdio": field "weird" has no mcphub equivalent; ignored` {
			t.Errorf("a skipped hub entry must not get other notes: %q", n)
		}
	}
	// Without a listen address (and KeepSecrets), nothing is the hub.
	specs, _, err := importKeeping([]byte(data))
	if err != nil || len(specs) != 7 {
		t.Fatalf("importKeeping: %d specs, %v", len(specs), err)
	}
}

// TestImportSkipsTheHubForms: import skips the hub's mcp-remote@latest and
// "mcphub --config stdio" entries, and keeps an "mcphub stdio" of another
// registry.
func TestImportSkipsTheHubForms(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "hub.toml")
	data := `{"mcpServers": {
	  "remote": {"command": "npx", "args": ["-y", "mcp-remote@latest", "http://127.0.0.1:7733/mcp"]},
	  "flags": {"command": "mcphub", "args": ["--config", ` + jsonString(own) + `, "stdio"]},
	  "moved": {"command": "npx", "args": ["mcp-remote@0.1.29", "http://localhost:8800/mcp"]},
	  "second": {"command": "mcphub", "args": ["--config", ` + jsonString(filepath.Join(dir, "work.toml")) + `, "stdio"]}
	}}`
	res, err := Import([]byte(data), ImportOptions{Hub: registry.Self{Listens: []string{"127.0.0.1:7733", "127.0.0.1:8800"}, Config: own}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"flags", "moved", "remote"}; !reflect.DeepEqual(res.HubEntries, want) {
		t.Errorf("HubEntries = %v, want %v", res.HubEntries, want)
	}
	if len(res.Specs) != 1 || res.Specs[0].Name != "second" {
		t.Errorf("imported %+v, want only second", res.Specs)
	}
}

// jsonString writes s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
