package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/clientconf"
	"github.com/mcphub/mcphub/hubclient"
)

// TestGoldenProfiles runs the commands that take --profile against the
// golden tokens hub (notes and weather, a full profile and one in search
// mode) and compares what a user sees with testdata/golden/<case>.txt
// (-update rewrites them).
func TestGoldenProfiles(t *testing.T) {
	addr, reg := goldenTokensHub(t)
	withHub := func(t *testing.T, e *goldenEnv) {
		e.addPort(addr)
		e.writeRegistry(t, reg)
	}
	cases := []goldenCase{
		{name: "tools-ls-profile", args: []string{"tools", "ls", "--profile", "notes-only"}, setup: withHub},
		{name: "tools-ls-profile-search", args: []string{"tools", "ls", "--profile", "finder"}, setup: withHub},
		{name: "tools-ls-profile-and-server", args: []string{"tools", "ls", "notes", "--profile", "finder"}, setup: withHub},
		{name: "tools-ls-profile-unknown", args: []string{"tools", "ls", "--profile", "notes"}, setup: withHub},
		{name: "tools-call-profile-search", args: []string{"tools", "call", "--profile", "finder", "notes__search", "words=1e3"}, setup: withHub},
		{name: "tools-call-profile-unknown-tool", args: []string{"tools", "call", "--profile", "notes-only", "notes__fail"}, setup: withHub},
		{name: "tools-call-profile-search-unknown-tool", args: []string{"tools", "call", "--profile", "finder", "forcast", "city=Paris"}, setup: withHub},
		{name: "prompts-ls-profile", args: []string{"prompts", "ls", "--profile", "notes-only"}, setup: withHub},
		{name: "stdio-profile-and-server", args: []string{"stdio", "--server", "notes", "--profile", "finder"}, setup: withHub},
		{name: "stdio-profile-unknown", args: []string{"stdio", "--profile", "findr"}, setup: withHub},
		{name: "status-profiles", args: []string{"status"}, setup: func(t *testing.T, e *goldenEnv) {
			addr := e.serveHub(t, goldenProfilesStatus)
			e.writeRegistry(t, fmt.Sprintf(goldenRegistry, addr))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := goldenNewEnv(t)
			if tc.setup != nil {
				tc.setup(t, e)
			}
			goldenCheck(t, tc.name, goldenRun(e, tc.args))
		})
	}
}

// goldenProfilesStatus is goldenHubStatus with profiles: one in full mode,
// one in search mode with a session and a name it could not expose as
// offered, and one whose table has a problem.
func goldenProfilesStatus(addr string) api.Status {
	st := goldenHubStatus(addr)
	base := "http://" + addr + "/profiles/"
	st.Profiles = []api.ProfileStatus{
		{Name: "broken", URL: base + "broken/mcp", Mode: "full", Servers: []string{"github"}, Tools: 26, Listed: 26,
			Problem: "hub.toml:31:11: profiles.broken.include: \"[x\" is not a glob: syntax error in pattern"},
		{Name: "coding", URL: base + "coding/mcp", Mode: "full", Servers: []string{"github"}, Tools: 12, Listed: 12},
		{Name: "research", URL: base + "research/mcp", Mode: "search", Servers: []string{"flaky", "github", "internal"}, Tools: 26, Listed: 3, Sessions: 1,
			Conflicts: []string{`internal: tool "search_code" is hidden: github offers the same name`}},
	}
	return st
}

// wideServer is a server with n tools, tool00 and on.
func wideServer(n int) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "wide", Version: "1.0.0"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	type none struct{}
	for i := range n {
		mcp.AddTool(s, &mcp.Tool{Name: fmt.Sprintf("tool%02d", i), Description: fmt.Sprintf("Tool number %d.", i)},
			func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
				return textResult(fmt.Sprint(i)), nil, nil
			})
	}
	return s
}

// wideProfiles are profiles of the wide server: every tool, ten of them,
// and every tool in search mode.
const wideProfiles = `[profiles.all]
servers = ["wide"]

[profiles.few]
include = ["wide__tool0*"]

[profiles.find]
mode = "search"
`

// wideHub is a hub in this process over a server with 45 tools and
// wideProfiles, and the machine whose registry points the CLI at it.
func wideHub(t *testing.T) *goldenEnv {
	t.Helper()
	u := startUpstream(t, "wide", upstreamOpts{server: wideServer(45)})
	servers := remoteServer("wide", u.url, "") + wideProfiles
	h := startInproc(t, servers, hubConfig{})
	waitListed(t, h, "", "wide")
	eventually(t, 10*time.Second, "the hub serves the profiles' tools", func() error {
		for _, p := range h.h.Status().Profiles {
			if want := map[string]int{"all": 45, "few": 10, "find": 45}[p.Name]; p.Tools != want {
				return fmt.Errorf("profile %s serves %d tools, want %d", p.Name, p.Tools, want)
			}
		}
		return nil
	})
	return cliHubOver(t, h, "", servers)
}

// TestConnectProfile: connect --profile points the entry at the profile's
// endpoint (mcphub stdio --profile for a stdio entry), under the usual
// name; it warns when the endpoint lists more tools than the client takes
// (with --profile or not), says when the running hub could not be asked,
// and refuses a profile the registry lacks.
func TestConnectProfile(t *testing.T) {
	e := wideHub(t)
	file := filepath.Join(t.TempDir(), "mcp.json")
	connect := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := cliRun(e, &out, &errOut, append([]string{"connect"}, args...)...)
		return code, out.String(), errOut.String()
	}

	code, out, errOut := connect("cursor", "--profile", "all", "--file", file)
	wantWarn := `warning: profile all lists 45 tools; Cursor uses about the first 40. Narrow it with include/exclude in [profiles.all], or set mode = "search" (3 tools)` + "\n"
	if code != 0 || !strings.Contains(out, `"url": "http://`) || !strings.Contains(out, `/profiles/all/mcp"`) || !strings.Contains(out, `"mcphub": {`) || errOut != wantWarn {
		t.Errorf("connect cursor --profile all: exit %d\nstdout:\n%s\nstderr:\n%s\nwant the profile's URL under \"mcphub\" and %q", code, out, errOut, wantWarn)
	}

	for _, tc := range []struct{ client, profile string }{{"cursor", "few"}, {"cursor", "find"}, {"windsurf", "all"}, {"vscode", "all"}, {"claude", "all"}} {
		if code, _, errOut := connect(tc.client, "--profile", tc.profile, "--file", file); code != 0 || errOut != "" {
			t.Errorf("connect %s --profile %s: exit %d, stderr %q; want no warning", tc.client, tc.profile, code, errOut)
		}
	}

	code, _, errOut = connect("cursor", "--file", file)
	if code != 0 || !strings.HasPrefix(errOut, "warning: the hub's /mcp lists 45 tools; Cursor uses about the first 40. Narrow it with allow/deny on its servers, or connect a profile with --profile NAME") {
		t.Errorf("connect cursor: exit %d, stderr %q; want the /mcp warning", code, errOut)
	}

	code, out, errOut = connect("cursor", "--profile", "all", "--file", file, "--write", "--json")
	var res clientconf.Result
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Added != "mcphub" || len(res.Warnings) != 1 ||
		!strings.HasPrefix(res.Warnings[0], "profile all lists 45 tools; Cursor uses about the first 40") || errOut != "" {
		t.Errorf("connect --write --json: exit %d (%v)\nstdout:\n%s\nstderr:\n%s", code, err, out, errOut)
	}
	servers := decodeServers(t, mustRead(t, file), "mcpServers")
	if entry, _ := servers["mcphub"].(map[string]any); len(servers) != 1 || !strings.HasSuffix(fmt.Sprint(entry["url"]), "/profiles/all/mcp") {
		t.Errorf("file now: %v", servers)
	}

	// A stdio entry run from the test binary warns that go test built it;
	// Claude Desktop has no tool cap to warn about.
	code, _, errOut = connect("claude-desktop", "--profile", "few", "--file", file)
	if code != 0 || strings.Contains(errOut, "tools;") || strings.Contains(errOut, "note:") {
		t.Errorf("connect claude-desktop --profile few: exit %d, stderr %q", code, errOut)
	}
	var printed bytes.Buffer
	cliRun(e, &printed, io.Discard, "connect", "claude-desktop", "--profile", "few", "--file", file, "--write")
	desktop := decodeServers(t, mustRead(t, file), "mcpServers")
	entry, _ := desktop["mcphub"].(map[string]any)
	args, _ := entry["args"].([]any)
	if n := len(args); n < 3 || args[0] != "stdio" || args[n-2] != "--profile" || args[n-1] != "few" || len(desktop) != 1 {
		t.Errorf("claude-desktop entry: %v (%s)", desktop, printed.String())
	}

	code, _, errOut = connect("cursor", "--profile", "fiw", "--file", file)
	if code != 1 || !strings.Contains(errOut, `no profile "fiw" in `+e.config+"; its profiles are all, few, find (did you mean few, find?)") {
		t.Errorf("connect --profile fiw: exit %d, stderr %q", code, errOut)
	}
}

// TestConnectProfileNoHub: without a running hub, connect --profile writes
// the entry and says, in one line, that the count could not be checked;
// without --profile it says nothing.
func TestConnectProfileNoHub(t *testing.T) {
	e := goldenNewEnv(t)
	e.writeRegistry(t, fmt.Sprintf("[hub]\nlisten = %q\n\n[servers.a]\ncommand = \"a\"\n\n[profiles.p]\nservers = [\"a\"]\n", e.closedAddr(t)))
	file := filepath.Join(t.TempDir(), "mcp.json")
	var out, errOut bytes.Buffer
	code := cliRun(e, &out, &errOut, "connect", "cursor", "--profile", "p", "--file", file)
	if lines := strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n"); code != 0 || len(lines) != 1 ||
		!strings.HasPrefix(lines[0], "note: no hub is running at ") || !strings.HasSuffix(lines[0], ", so whether profile p fits Cursor's cap of about 40 tools could not be checked") {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if code := cliRun(e, &out, &errOut, "connect", "cursor", "--file", file); code != 0 || errOut.Len() > 0 {
		t.Errorf("without --profile: exit %d, stderr %q", code, errOut.String())
	}
}

// TestConnectMoveProfileEntries: --move removes the entries under another
// name for the view the hub's entry points at (/mcp, or the profile
// connected: its URL, mcphub stdio --profile, a bridge to it), and keeps
// those of another profile with a note, as it keeps a server's.
func TestConnectMoveProfileEntries(t *testing.T) {
	home := connectHome(t)
	cfg := filepath.Join(home, ".config", "mcphub", "hub.toml")
	if err := os.WriteFile(cfg, []byte(connectRegistry+"\n[profiles.coding]\nservers = [\"github\"]\n\n[profiles.web]\nservers = [\"fetch\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	text := `{"mcpServers": {
  "hub-all": {"url": "http://127.0.0.1:7733/mcp"},
  "hub-coding": {"url": "http://127.0.0.1:7733/profiles/coding/mcp"},
  "hub-coding-stdio": {"command": "mcphub", "args": ["stdio", "--profile", "coding"]},
  "hub-coding-bridge": {"command": "npx", "args": ["mcp-remote", "http://127.0.0.1:7733/profiles/coding/mcp"]},
  "hub-web": {"url": "http://127.0.0.1:7733/profiles/web/mcp"},
  "hub-web-stdio": {"command": "mcphub", "args": ["stdio", "--profile=web"]},
  "hub-web-bridge": {"command": "npx", "args": ["mcp-remote", "http://127.0.0.1:7733/profiles/web/mcp"]},
  "gh-only": {"url": "http://127.0.0.1:7733/github/mcp"}
}}`
	webNotes := map[string]string{
		"hub-web":        `kept "hub-web" in %s: it points at the hub's profile "web" (/profiles/web/mcp), another view than the hub's entry; keep it for that, or remove it by hand`,
		"hub-web-stdio":  `kept "hub-web-stdio" in %s: it points at the hub's profile "web" (mcphub stdio --profile web), another view than the hub's entry; keep it for that, or remove it by hand`,
		"hub-web-bridge": `kept "hub-web-bridge" in %s: it points at the hub's profile "web" (/profiles/web/mcp), another view than the hub's entry; keep it for that, or remove it by hand`,
	}
	for _, tc := range []struct {
		profile string
		removed []string
		kept    []string
	}{
		{"", []string{"hub-all"}, []string{"hub-coding", "hub-coding-stdio", "hub-coding-bridge", "hub-web", "hub-web-stdio", "hub-web-bridge", "gh-only"}},
		{"coding", []string{"hub-all", "hub-coding", "hub-coding-stdio", "hub-coding-bridge"}, []string{"hub-web", "hub-web-stdio", "hub-web-bridge", "gh-only"}},
	} {
		path := filepath.Join(t.TempDir(), "mcp.json")
		os.WriteFile(path, []byte(text), 0o600)
		args := []string{"connect", "cursor", "--write", "--move", "--file", path}
		if tc.profile != "" {
			args = append(args, "--profile", tc.profile)
		}
		code, out, errOut := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		for _, name := range tc.removed {
			if want := fmt.Sprintf(`removed %q from %s (it points at this hub too; "mcphub" replaces it)`, name, path); !strings.Contains(out, want) {
				t.Errorf("%v: output lacks %q:\n%s", args, want, out)
			}
		}
		for name, note := range webNotes {
			if want := fmt.Sprintf(note, path); !strings.Contains(out, want) {
				t.Errorf("%v: output lacks the note of %s, %q:\n%s", args, name, want, out)
			}
		}
		if tc.profile == "" && !strings.Contains(out, fmt.Sprintf(`kept "hub-coding-stdio" in %s: it points at the hub's profile "coding" (mcphub stdio --profile coding)`, path)) {
			t.Errorf("%v: output lacks the note of hub-coding-stdio:\n%s", args, out)
		}
		servers := decodeServers(t, mustRead(t, path), "mcpServers")
		for _, name := range append([]string{"mcphub"}, tc.kept...) {
			if servers[name] == nil {
				t.Errorf("%v: the file lacks %s: %v", args, name, servers)
			}
		}
		if len(servers) != len(tc.kept)+1 {
			t.Errorf("%v: the file holds %d entries, want %d: %v", args, len(servers), len(tc.kept)+1, servers)
		}
	}
}

// TestConnectProfileWrite: connect --write prints a tool cap's warning on
// stderr, as every warning; connecting another profile later replaces the
// entry, under the same name.
func TestConnectProfileWrite(t *testing.T) {
	e := wideHub(t)
	file := filepath.Join(t.TempDir(), "mcp.json")
	var out, errOut bytes.Buffer
	code := cliRun(e, &out, &errOut, "connect", "cursor", "--profile", "all", "--file", file, "--write")
	if want := "warning: profile all lists 45 tools; Cursor uses about the first 40."; code != 0 || !strings.HasPrefix(errOut.String(), want) || strings.Contains(out.String(), "warning") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s\nwant the warning %q on stderr only", code, out.String(), errOut.String(), want)
	}
	out.Reset()
	errOut.Reset()
	if code := cliRun(e, &out, &errOut, "connect", "cursor", "--profile", "find", "--file", file, "--write"); code != 0 || errOut.Len() > 0 {
		t.Errorf("connect --profile find: exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	servers := decodeServers(t, mustRead(t, file), "mcpServers")
	if entry, _ := servers["mcphub"].(map[string]any); len(servers) != 1 || !strings.HasSuffix(fmt.Sprint(entry["url"]), "/profiles/find/mcp") {
		t.Errorf("file now: %v", servers)
	}
}

// TestProfileOlderHub: a hub older than profiles (no profiles in its
// status, no /control/catalog) is said to be older, and to be restarted,
// when the registry has the profile asked for.
func TestProfileOlderHub(t *testing.T) {
	e := goldenNewEnv(t)
	var body []byte
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/readyz" {
			w.Write(body)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"no such endpoint: the merged endpoint is /mcp and each enabled server has /{server}/mcp"}}`))
	}))
	addr := srv.Listener.Addr().String()
	e.addPort(addr)
	body, _ = json.Marshal(api.Status{Version: "0.1.0", URL: "http://" + addr + "/mcp"})
	srv.Start()
	t.Cleanup(srv.Close)
	release, err := hubclient.LockDataDir(e.dataDir, hubclient.RunInfo{PID: os.Getpid(), Listen: addr, Config: e.config, Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	e.writeRegistry(t, fmt.Sprintf("[hub]\nlisten = %q\n\n[servers.a]\ncommand = \"a\"\n\n[profiles.p]\nservers = [\"a\"]\n", addr))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tools", "ls", "--profile", "p"}, "the hub at " + addr + " lists no profiles, so it is older than this mcphub; restart it with this one (see mcphub status)"},
		{[]string{"prompts", "get", "--profile", "p", "x"}, "the hub at " + addr + " lists no profiles, so it is older than this mcphub"},
		{[]string{"tokens", "--profile", "p"}, "the hub at " + addr + " does not answer /control/catalog, so it is older than this mcphub; restart it with this one (see mcphub status)"},
		{[]string{"tokens"}, "the hub at " + addr + " does not answer /control/catalog, so it is older than this mcphub"},
		{[]string{"tools", "ls", "--profile", "q"}, `no profile "q" in the hub; it has none`},
	} {
		var out, errOut bytes.Buffer
		if code := cliRun(e, &out, &errOut, tc.args...); code != 1 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d\nstdout:\n%s\nstderr:\n%s\nwant %q", tc.args, code, out.String(), errOut.String(), tc.want)
		}
	}
}

// TestPromptsResourcesProfile: prompts get and resources read take
// --profile: a profile without prefixes gives its prompts by their bare
// names, which only its endpoint knows.
func TestPromptsResourcesProfile(t *testing.T) {
	notes := startUpstream(t, "notes", upstreamOpts{server: goldenNotesServer()})
	servers := remoteServer("notes", notes.url, "") + "[profiles.bare]\nservers = [\"notes\"]\nprefixed = false\n"
	h := startInproc(t, servers, hubConfig{})
	waitListed(t, h, "", "notes")
	e := cliHubOver(t, h, "", servers)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"prompts", "ls", "--profile", "bare"}, 0, "daily "},
		{[]string{"prompts", "get", "--profile", "bare", "daily"}, 0, "[user]\nPlan my day.\n"},
		{[]string{"prompts", "get", "daily"}, 1, ""},
		{[]string{"prompts", "get", "--profile", "bare", "dayly"}, 1, `run "mcphub prompts ls --profile bare"`},
		{[]string{"resources", "read", "--profile", "bare", "notes://index"}, 0, "groceries\nideas\n"},
		{[]string{"resources", "read", "--profile", "bar", "notes://index"}, 1, `no profile "bar" in the hub; its profiles are bare (did you mean bare?)`},
	} {
		var out, errOut bytes.Buffer
		code := cliRun(e, &out, &errOut, tc.args...)
		if code != tc.code || !strings.Contains(out.String()+errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s\nwant %q", tc.args, code, tc.code, out.String(), errOut.String(), tc.want)
		}
	}
}

// stdioRun runs mcphub stdio with args in this process, its stdin and
// stdout pipes that a lineClient speaks through; the command ends when the
// test does, by its stdin's end.
func stdioRun(t *testing.T, e *goldenEnv, args ...string) *lineClient {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	logs := &logBuffer{}
	a := &app{stdout: outW, stderr: logs}
	root := newRootCmd(a)
	root.SetIn(inR)
	root.SetArgs(append([]string{"--config", e.config, "--data-dir", e.dataDir, "stdio"}, args...))
	done := make(chan error, 1)
	go func() {
		_, err := root.ExecuteC()
		outW.Close()
		inR.Close()
		done <- err
	}()
	c := newLineClient(t, inW, outR, nil)
	t.Cleanup(func() {
		inW.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("mcphub stdio: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("mcphub stdio did not stop within 15 s of stdin's end")
		}
		if t.Failed() {
			t.Logf("stdio's stderr:\n%s", logs.String())
		}
	})
	return c
}

// TestStdioProfile: mcphub stdio --profile relays to the profile's
// endpoint: a client sees its tools (with its overrides), or in search
// mode the three search tools, which find and call the profile's tools.
func TestStdioProfile(t *testing.T) {
	addr, reg := goldenTokensHub(t)
	e := goldenNewEnv(t)
	e.addPort(addr)
	e.writeRegistry(t, reg)

	c := stdioRun(t, e, "--profile", "notes-only")
	c.initialize()
	m := c.request("tools/list", map[string]any{})
	var res struct {
		Tools []struct{ Name, Description string } `json:"tools"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatalf("tools/list: %v: %s", err, m.Encode())
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		if tl.Name == "notes__search" && tl.Description != "Searches the notes." {
			t.Errorf("notes__search is described %q, want the profile's override", tl.Description)
		}
	}
	slices.Sort(names)
	if want := []string{"notes__add_note", "notes__count", "notes__search"}; !slices.Equal(names, want) {
		t.Errorf("tools/list through stdio --profile notes-only = %v, want %v", names, want)
	}

	s := stdioRun(t, e, "--profile", "finder")
	s.initialize()
	if names := s.tools(); !slices.Equal(names, []string{"search_tools", "describe_tool", "call_tool"}) {
		t.Errorf("tools/list through stdio --profile finder = %v, want the search tools", names)
	}
	if got := s.tool("search_tools", map[string]any{"query": "forecast"}); !strings.Contains(got, "forecast") {
		t.Errorf("search_tools forecast = %q", got)
	}
	if got := s.tool("call_tool", map[string]any{"name": "forecast", "arguments": map[string]any{"city": "Paris"}}); got != "Paris: sunny, 21°C" {
		t.Errorf("call_tool forecast = %q", got)
	}
}

// TestCompletionProfileNames: --profile completes the registry's profiles
// for every command that takes it.
func TestCompletionProfileNames(t *testing.T) {
	e := goldenNewEnv(t)
	e.writeRegistry(t, fmt.Sprintf("[hub]\nlisten = %q\n\n[servers.a]\ncommand = \"a\"\n\n[profiles.coding]\nservers = [\"a\"]\n\n[profiles.web]\nmode = \"search\"\n", e.closedAddr(t)))
	all := []string{"coding", "web"}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"tokens", "--profile", ""}, all},
		{[]string{"tokens", "--profile", "w"}, []string{"web"}},
		{[]string{"tools", "ls", "--profile", ""}, all},
		{[]string{"tools", "--profile", "c"}, []string{"coding"}},
		{[]string{"tools", "call", "--profile", ""}, all},
		{[]string{"resources", "ls", "--profile", ""}, all},
		{[]string{"resources", "read", "--profile", ""}, all},
		{[]string{"prompts", "get", "--profile", "c"}, []string{"coding"}},
		{[]string{"stdio", "--profile", ""}, all},
		{[]string{"connect", "cursor", "--profile", ""}, all},
		{[]string{"tools", "ls", "--profile", "web", ""}, nil},
	} {
		if got := completions(t, e, tc.args...); !slices.Equal(got, tc.want) {
			t.Errorf("mcphub __complete %q = %q, want %q", tc.args, got, tc.want)
		}
	}
	var out bytes.Buffer
	run([]string{"--config", e.config, "__complete", "stdio", "--profile", ""}, &out, &bytes.Buffer{})
	if !strings.Contains(out.String(), "web\tsearch mode\n") || !strings.Contains(out.String(), "coding\tfull mode\n") {
		t.Errorf("completions lack their modes:\n%s", out.String())
	}
}
