package clientconf

import (
	"strings"
	"testing"
)

// TestLookup: every client has a file and a servers key; an unknown name
// lists the known ones.
func TestLookup(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("USERPROFILE", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("APPDATA", t.TempDir())
	for _, name := range Names() {
		c, err := Lookup(name)
		if err != nil || c.Name != name || c.Title == "" || c.Key == "" {
			t.Fatalf("Lookup(%q) = %+v, %v", name, c, err)
		}
		if p, err := c.Path(); err != nil || p == "" {
			t.Errorf("%s: Path() = %q, %v", name, p, err)
		}
	}
	if _, err := Lookup("notepad"); err == nil || !strings.Contains(err.Error(), "claude, claude-desktop, codex") {
		t.Errorf("Lookup(notepad): %v", err)
	}
	if c, _ := Lookup("claude-desktop"); !c.StdioOnly() {
		t.Error("Claude Desktop runs only stdio servers from its file")
	}
}

// TestSnippetAndClaudeLine: the text a user pastes, in each format.
func TestSnippetAndClaudeLine(t *testing.T) {
	codex, _ := Lookup("codex")
	e := codex.remote("http://127.0.0.1:7733/mcp", map[string]string{"Authorization": "Bearer t"})
	if got, want := codex.Snippet("mcphub", e), "[mcp_servers.mcphub]\nurl = \"http://127.0.0.1:7733/mcp\"\nhttp_headers = { Authorization = \"Bearer t\" }\n"; got != want {
		t.Errorf("codex snippet:\n%s\nwant\n%s", got, want)
	}
	cursor, _ := Lookup("cursor")
	if got, want := cursor.Snippet("hub", Entry{{"url", "http://h/mcp?a&b"}}), "{\n  \"mcpServers\": {\n    \"hub\": {\n      \"url\": \"http://h/mcp?a&b\"\n    }\n  }\n}\n"; got != want {
		t.Errorf("cursor snippet:\n%s\nwant\n%s", got, want)
	}
	stdio := Entry{{"type", "stdio"}, {"command", "/opt/my tools/mcphub"}, {"args", []string{"stdio", "--config", "/c/it's.toml"}}}
	if got, want := claudeAddLine("mcphub", stdio, true), `claude mcp add --transport stdio --scope user mcphub -- '/opt/my tools/mcphub' stdio --config '/c/it'\''s.toml'`; got != want {
		t.Errorf("claudeAddLine:\n%s\nwant\n%s", got, want)
	}
}
