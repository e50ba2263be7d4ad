package hubclient

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/registry"
)

// fakeHub answers /readyz with st and refuses every other path with the
// hub's JSON-RPC error, as a hub does for a server it does not know.
func fakeHub(t *testing.T, st api.Status) Target {
	t.Helper()
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			json.NewEncoder(w).Encode(st)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"unknown server \"nope\""}}`)
	}))
	t.Cleanup(hub.Close)
	return Target{Listen: strings.TrimPrefix(hub.URL, "http://")}
}

// TestWriteStatus: the servers' table, a failed server's whole reason
// when the table cut it, and a profile with a problem without counts.
func TestWriteStatus(t *testing.T) {
	long := "GITHUB_TOKEN is not set: " + strings.Repeat("set it where mcphub starts ", 5)
	var out bytes.Buffer
	WriteStatus(&out, &api.Status{Version: "v1", URL: "http://127.0.0.1:7733/mcp", Sessions: 2,
		Servers: []api.ServerStatus{
			{Name: "notes", State: api.StateConnected, PID: 42, Tools: 3},
			{Name: "github", State: "failed", LastError: long},
		},
		Profiles: []api.ProfileStatus{{Name: "web", Mode: "search", Problem: "hub.toml:3:1: bad"}},
	})
	for _, want := range []string{
		"mcphub v1 at http://127.0.0.1:7733/mcp, 2 sessions\n",
		"notes   connected  42   -         -       3      0",
		"\ngithub: " + strings.TrimSpace(long) + "\n",
		"web      search  -        -       -      0",
		"profile web serves nothing until its table is fixed:\n  hub.toml:3:1: bad\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
}

// TestServerList: the registry's servers with the hub's view, and the
// line that says a hub that runs could not be asked.
func TestServerList(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.toml")
	os.WriteFile(path, []byte("[servers.notes]\ncommand = \"notes-mcp\"\nargs = [\"--db\", \"x\"]\n\n[servers.web]\nurl = \"https://u:secret@example.com/mcp\"\nenabled = false\n"), 0o600)
	reg, err := registry.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	hub := fakeHub(t, api.Status{URL: "http://hub/mcp", Sessions: 1, Servers: []api.ServerStatus{{Name: "notes", State: api.StateConnected, Tools: 4}}})
	entries := ListEntries(reg, &api.Status{Servers: []api.ServerStatus{{Name: "notes", State: api.StateConnected, Tools: 4}}})
	if len(entries) != 2 || strings.Contains(entries[1].URL, "secret") || entries[0].Live == nil || entries[0].Live.Tools != 4 {
		t.Fatalf("entries = %+v", entries)
	}
	var out bytes.Buffer
	ServerList{Listen: hub.Listen, Entries: entries, Status: &api.Status{URL: "http://hub/mcp", Sessions: 1}}.WriteText(&out, path)
	for _, want := range []string{"notes  stdio   notes-mcp --db x", "connected  4", "\nhub running at http://hub/mcp with 1 sessions\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("list lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	ServerList{Listen: "127.0.0.1:1", HubError: "could not ask"}.WriteText(&out, path)
	if want := "no servers in " + path + "; add one with: mcphub add NAME -- COMMAND [ARGS...]\n\nthe hub at 127.0.0.1:1 could not be asked (the reason is on stderr)\n"; out.String() != want {
		t.Errorf("empty list = %q, want %q", out.String(), want)
	}
}

// TestWriteSessions: no sessions is a sentence, sessions a table.
func TestWriteSessions(t *testing.T) {
	var out bytes.Buffer
	WriteSessions(&out, nil)
	if out.String() != "no sessions\n" {
		t.Errorf("no sessions: %q", out.String())
	}
	out.Reset()
	WriteSessions(&out, []api.SessionInfo{{ID: "s1", Endpoint: "/mcp", Client: "cursor", ClientVersion: "1.0", Protocol: "2025-06-18", AgeSeconds: 90}})
	if !strings.Contains(out.String(), "s1  /mcp      cursor 1.0  2025-06-18  1m30s") {
		t.Errorf("sessions table:\n%s", out.String())
	}
}

// TestRestartServerNamesWhatTheHubServes: a refused restart says which
// enabled servers the hub has, or how to enable a disabled one.
func TestRestartServerNamesWhatTheHubServes(t *testing.T) {
	hub := fakeHub(t, api.Status{Servers: []api.ServerStatus{{Name: "notes", State: api.StateConnected}, {Name: "nope", State: api.StateDisabled}}})
	_, err := hub.RestartServer(context.Background(), "other")
	if err == nil || !strings.HasSuffix(err.Error(), "; its enabled servers: notes (see mcphub status)") {
		t.Errorf("unknown server: %v", err)
	}
	_, err = hub.RestartServer(context.Background(), "nope")
	if err == nil || !strings.HasSuffix(err.Error(), "; nope is disabled: enable it with mcphub enable nope") {
		t.Errorf("disabled server: %v", err)
	}
}

// TestSelfAddsTheRecordedAddress: a hub's own addresses include the one a
// running hub recorded, once.
func TestSelfAddsTheRecordedAddress(t *testing.T) {
	dir := t.TempDir()
	release, err := LockDataDir(dir, RunInfo{PID: os.Getpid(), Listen: "127.0.0.1:9999"})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	self := Locator{DataDir: dir}.Self("/x/hub.toml", "127.0.0.1:7733")
	if strings.Join(self.Listens, ",") != "127.0.0.1:7733,127.0.0.1:9999" || self.Config != "/x/hub.toml" {
		t.Errorf("self = %+v", self)
	}
	if got := (Locator{DataDir: dir}).Self("/x/hub.toml", "127.0.0.1:9999"); len(got.Listens) != 1 {
		t.Errorf("the recorded address twice: %+v", got)
	}
}

// TestUnsetWarning names the variables and the server, in the singular
// or the plural.
func TestUnsetWarning(t *testing.T) {
	if UnsetWarning("gh", nil, "here") != "" {
		t.Error("a warning with nothing unset")
	}
	w := UnsetWarning("gh", []string{"A", "B"}, "this shell")
	if !strings.HasPrefix(w, `warning: A, B are not set in this shell, so "gh" will show failed until they are;`) || !strings.Contains(w, "mcphub disable gh\n") {
		t.Errorf("warning = %q", w)
	}
}
