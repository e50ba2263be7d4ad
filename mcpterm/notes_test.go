package mcpterm

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mcphub/mcphub/api"
)

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// TestNoteDown: servers that are not connected are named with what they
// lack, a server waiting for a sign-in gets the login command, and a
// profile's note names only the servers it selects.
func TestNoteDown(t *testing.T) {
	st := &api.Status{
		Servers: []api.ServerStatus{
			{Name: "github", State: api.StateConnected},
			{Name: "notes", State: api.StateFailed},
			{Name: "off", State: api.StateDisabled},
			{Name: "tracker", State: api.StateNeedsLogin},
			{Name: "web", State: api.StateStarting},
		},
		Profiles: []api.ProfileStatus{{Name: "coding", Servers: []string{"github", "notes"}}},
	}
	for _, tc := range []struct{ profile, want string }{
		{"", "note: server tracker needs you to sign in: run mcphub login tracker\n" +
			"note: servers notes (failed), web (starting) are not connected, so their tools are missing; see mcphub status\n"},
		{"coding", "note: server notes is failed, so its tools are missing; see mcphub status or mcphub logs notes\n"},
		{"unknown", ""},
	} {
		var stderr bytes.Buffer
		(&Client{Stderr: &stderr}).NoteDown(st, tc.profile, "tools")
		if stderr.String() != tc.want {
			t.Errorf("profile %q: noted %q, want %q", tc.profile, stderr.String(), tc.want)
		}
	}
}

// TestProfileChoices: the registry's profiles complete with their mode; a
// registry that does not load completes nothing.
func TestProfileChoices(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.toml")
	reg := "[servers.notes]\ncommand = \"notes-mcp\"\n\n[profiles.coding]\n\n[profiles.finder]\nmode = \"search\"\n"
	if err := os.WriteFile(path, []byte(reg), 0o600); err != nil {
		t.Fatal(err)
	}
	want := []Choice{{"coding", "full mode"}, {"finder", "search mode"}}
	if got := ProfileChoices(path, ""); !slices.Equal(got, want) {
		t.Errorf("choices %v, want %v", got, want)
	}
	if got := ProfileChoices(path, "fi"); !slices.Equal(got, want[1:]) {
		t.Errorf("choices of fi %v, want %v", got, want[1:])
	}
	if got := ProfileChoices(filepath.Join(t.TempDir(), "none.toml"), ""); got != nil {
		t.Errorf("choices of no registry %v, want none", got)
	}
}
