package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/registry"
)

// goldenUpdate rewrites the golden files under testdata/golden from the
// current output instead of comparing against them:
//
//	go test -run TestGoldenCLI ./cmd/mcphub/ -update
var goldenUpdate = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenDir holds one file per case of TestGoldenCLI.
const goldenDir = "testdata/golden"

// goldenSecrets are the values of the env variables the registries below
// refer to with ${VAR}; no command may ever print one of them, nor the
// secrets goldenRegistry writes literally into a header and a URL query.
var goldenSecrets = map[string]string{
	"GITHUB_TOKEN":     "ghp-golden-env-secret",
	"GOLDEN_API_TOKEN": "golden-bearer-secret",
}

// goldenRegistry is a valid registry: a stdio server with a secret in its
// env, a remote one whose headers and URL query hold secrets, a stdio server
// that crashes (for the crash-loop state of a running hub) and a disabled
// one. %s is the [hub] listen address.
const goldenRegistry = `# The registry of the golden tests.
[hub]
listen = "%s"

[servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]
env = { GITHUB_PERSONAL_ACCESS_TOKEN = "${GITHUB_TOKEN}" }

[servers.internal]
url = "https://mcp.internal.example.com/mcp?api_key=golden-query-secret"
transport = "streamable-http"
headers = { Authorization = "Bearer ${GOLDEN_API_TOKEN}", X-Api-Key = "golden-header-secret" }
share = "session"

[servers.flaky]
command = "node"
args = ["./flaky-server.js", "--port", "0"]
prefix = "fl"

[servers.notes]
command = "uvx"
args = ["mcp-server-notes"]
enabled = false
`

// goldenInvalidRegistry has several problems at once, each of which
// validate must report with its position and what would be valid.
const goldenInvalidRegistry = `[hub]
listen = "127.0.0.1:7733"
auth = "tokn"

[servers.github]
comand = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]

[servers.Internal_API]
url = "https://mcp.internal.example.com/mcp"
transport = "websocket"
call_timeout = "ten minutes"

[servers.both]
command = "uvx"
url = "https://mcp.example.com/mcp"

[servers.notes]
command = "uvx"
env = { NOTES_TOKEN = "${GOLDEN_UNSET_VARIABLE}" }
`

// goldenSyntaxErrorRegistry is not TOML: a string is never closed.
const goldenSyntaxErrorRegistry = `[hub]
listen = "127.0.0.1:7733"

[servers.github]
command = "npx
args = ["-y", "@modelcontextprotocol/server-github"]
`

// goldenEnv is one case's machine: a home directory in a temp dir, the
// registry and data directory in their default places under it, and the
// ports the case listens on (or knows to be closed).
type goldenEnv struct {
	tmp     string
	config  string
	dataDir string
	ports   []string
}

// goldenNewEnv points HOME, the XDG and Windows user directories and
// mcphub's own variables into a new temp dir, so every case runs on a
// machine that never ran mcphub, and the defaults --help prints are the same
// on every Unix.
func goldenNewEnv(t *testing.T) *goldenEnv {
	t.Helper()
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	e := &goldenEnv{
		tmp:     tmp,
		config:  filepath.Join(home, ".config", "mcphub", "hub.toml"),
		dataDir: filepath.Join(home, ".local", "share", "mcphub"),
	}
	for k, v := range map[string]string{
		"HOME":            home,
		"USERPROFILE":     home,
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		"XDG_DATA_HOME":   filepath.Join(home, ".local", "share"),
		"APPDATA":         filepath.Join(home, "AppData", "Roaming"),
		"LOCALAPPDATA":    filepath.Join(home, "AppData", "Local"),
		"MCPHUB_CONFIG":   e.config,
		"MCPHUB_DATA":     e.dataDir,
		"MCPHUB_TOKEN":    "",
	} {
		t.Setenv(k, v)
	}
	for k, v := range goldenSecrets {
		t.Setenv(k, v)
	}
	return e
}

// writeRegistry writes text as the registry.
func (e *goldenEnv) writeRegistry(t *testing.T, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(e.config), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.config, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// closedAddr is a loopback address nothing listens on: a port the system
// just handed out and that was closed again.
func (e *goldenEnv) closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	e.addPort(addr)
	return addr
}

func (e *goldenEnv) addPort(addr string) {
	if _, port, err := net.SplitHostPort(addr); err == nil {
		e.ports = append(e.ports, port)
	}
}

// serveHub answers /readyz as a running hub would, with the status st
// returns for the hub's address, and records the hub in the data directory
// as `mcphub serve` does: the run file, locked by this live process. It
// returns the hub's listen address.
func (e *goldenEnv) serveHub(t *testing.T, st func(addr string) api.Status) string {
	t.Helper()
	var body []byte
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	addr := srv.Listener.Addr().String()
	e.addPort(addr)
	// The body depends on the address, and is fixed before the server
	// starts serving.
	var err error
	if body, err = json.Marshal(st(addr)); err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	info := hubclient.RunInfo{PID: os.Getpid(), Listen: addr, Config: e.config,
		Started: time.Date(2025, 11, 25, 9, 30, 0, 0, time.UTC)}
	release, err := hubclient.LockDataDir(e.dataDir, info)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return addr
}

// goldenHubStatus is a hub with a server in every state a user can meet:
// connected, failed with its last error, crash-looping and disabled.
func goldenHubStatus(addr string) api.Status {
	return api.Status{
		Version:  mcphubVersion(),
		URL:      "http://" + addr + "/mcp",
		Sessions: 2,
		Servers: []api.ServerStatus{
			{Name: "flaky", State: api.StateCrashLoop, Transport: "stdio", Restarts: 5,
				LastError: "process exited with status 1: Error: Cannot find module './flaky-server.js'\n    at Module._resolveFilename (node:internal/modules/cjs/loader:1145:15)"},
			{Name: "github", State: api.StateConnected, Transport: "stdio", PID: 48213, Protocol: "2025-11-25",
				UptimeSeconds: 3723.6, Tools: 26, Prompts: 0, Resources: 1, Restarts: 1},
			{Name: "internal", State: api.StateFailed, Transport: "streamable-http", Restarts: 3,
				LastError: `connect: Post "https://mcp.internal.example.com/mcp?api_key=***": HTTP 401 Unauthorized`},
			{Name: "notes", State: api.StateDisabled},
		},
	}
}

// goldenCase is one command line and the golden file that holds its exit
// status and output.
type goldenCase struct {
	name  string // the golden file is testdata/golden/<name>.txt
	args  []string
	setup func(t *testing.T, e *goldenEnv)
}

// TestGoldenCLI runs each command line in-process and compares what a user
// sees, exit status, stdout and stderr, with its golden file. Run with
// -update to rewrite the files after a deliberate change, and review the
// diff of testdata/golden.
func TestGoldenCLI(t *testing.T) {
	noHub := func(t *testing.T, e *goldenEnv) {
		e.writeRegistry(t, fmt.Sprintf(goldenRegistry, e.closedAddr(t)))
	}
	cases := []goldenCase{
		{name: "help", args: []string{"--help"}},
		{name: "add-help", args: []string{"add", "--help"}},
		{name: "version", args: []string{"version"}},
		{name: "list-no-hub", args: []string{"list"}, setup: noHub},
		{name: "list-running-hub", args: []string{"list"}, setup: func(t *testing.T, e *goldenEnv) {
			addr := e.serveHub(t, goldenHubStatus)
			e.writeRegistry(t, fmt.Sprintf(goldenRegistry, addr))
		}},
		{name: "list-syntax-error", args: []string{"list"}, setup: func(t *testing.T, e *goldenEnv) {
			e.writeRegistry(t, goldenSyntaxErrorRegistry)
		}},
		{name: "validate-valid", args: []string{"validate"}, setup: noHub},
		{name: "validate-invalid", args: []string{"validate"}, setup: func(t *testing.T, e *goldenEnv) {
			e.writeRegistry(t, goldenInvalidRegistry)
		}},
		{name: "status-no-hub", args: []string{"status"}, setup: noHub},
		{name: "status-running-hub", args: []string{"status"}, setup: func(t *testing.T, e *goldenEnv) {
			addr := e.serveHub(t, goldenHubStatus)
			e.writeRegistry(t, fmt.Sprintf(goldenRegistry, addr))
		}},
		{name: "status-running-hub-registry-broken", args: []string{"status"}, setup: func(t *testing.T, e *goldenEnv) {
			// The registry no longer loads; the hub keeps its last good one
			// and says why, and status finds it through the run file.
			e.writeRegistry(t, goldenSyntaxErrorRegistry)
			_, loadErr := registry.Load(e.config)
			if loadErr == nil {
				t.Fatal("the broken registry loads")
			}
			e.serveHub(t, func(addr string) api.Status {
				st := goldenHubStatus(addr)
				st.RegistryError = loadErr.Error()
				return st
			})
		}},
		{name: "remove-unknown", args: []string{"remove", "githb"}, setup: noHub},
		{name: "add-managed-header", args: []string{"add", "api", "--url", "https://mcp.example.com/mcp", "--header", "Content-Type: text/plain"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := goldenNewEnv(t)
			if tc.setup != nil {
				tc.setup(t, e)
			}
			got := goldenRun(e, tc.args)
			for k, v := range goldenSecrets {
				if strings.Contains(got, v) {
					t.Errorf("the output shows the value of $%s", k)
				}
			}
			for _, v := range []string{"golden-header-secret", "golden-query-secret"} {
				if strings.Contains(got, v) {
					t.Errorf("the output shows the secret %q written in the registry", v)
				}
			}
			goldenCheck(t, tc.name, got)
		})
	}
}

// goldenCheck compares got with the golden file name.txt, or rewrites it
// under -update. On Windows a golden file that names temporary paths (held
// with / separators) is skipped.
func goldenCheck(t *testing.T, name, got string) {
	t.Helper()
	file := filepath.Join(goldenDir, name+".txt")
	if *goldenUpdate {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if runtime.GOOS == "windows" && bytes.Contains(want, []byte("$TMP")) {
		t.Skip("the output names paths, which the golden file holds with / separators")
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run with -update to accept it):\n%s", file, goldenDiff(string(want), got))
	}
}

// goldenRun runs mcphub with args, giving it the case's registry and data
// directory, and renders the result as a golden file: the command line, then
// the exit status, stdout and stderr in marked sections.
func goldenRun(e *goldenEnv, args []string) string {
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"--config", e.config, "--data-dir", e.dataDir}, args...), &stdout, &stderr)
	var b strings.Builder
	b.WriteString("$ mcphub")
	for _, a := range args {
		b.WriteString(" " + goldenQuote(a))
	}
	fmt.Fprintf(&b, "\n-- exit status --\n%d\n", code)
	for _, sec := range []struct {
		name string
		out  string
	}{{"stdout", stdout.String()}, {"stderr", stderr.String()}} {
		b.WriteString("-- " + sec.name + " --\n" + sec.out)
		if sec.out != "" && !strings.HasSuffix(sec.out, "\n") {
			b.WriteString("\n-- (no newline at the end of " + sec.name + ") --\n")
		}
	}
	return goldenNormalize(e, b.String())
}

// goldenQuote quotes a command-line argument as a POSIX shell would need it.
func goldenQuote(arg string) string {
	if arg != "" && !strings.ContainsAny(arg, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
		return arg
	}
	return "'" + strings.ReplaceAll(arg, "'", `'\''`) + "'"
}

// goldenNormalize replaces what differs from one run or machine to the next
// and nothing else: the temp dir becomes $TMP, the case's ports $PORT,
// mcphub's and Go's versions $VERSION and $GOVERSION, and the platform
// $GOOS/$GOARCH.
func goldenNormalize(e *goldenEnv, s string) string {
	tmps := []string{e.tmp}
	if real, err := filepath.EvalSymlinks(e.tmp); err == nil && real != e.tmp {
		tmps = append(tmps, real)
	}
	for _, tmp := range tmps {
		s = strings.ReplaceAll(s, tmp, "$TMP")
	}
	for _, port := range e.ports {
		s = regexp.MustCompile(`:`+port+`\b`).ReplaceAllString(s, ":$$PORT")
	}
	s = strings.ReplaceAll(s, "mcphub "+mcphubVersion()+" ", "mcphub $VERSION ")
	s = strings.ReplaceAll(s, runtime.Version(), "$GOVERSION")
	return strings.ReplaceAll(s, runtime.GOOS+"/"+runtime.GOARCH, "$GOOS/$GOARCH")
}

// goldenDiff shows how got differs from want, line by line: "-" for a line
// only in want, "+" for a line only in got, " " for a line in both.
func goldenDiff(want, got string) string {
	lines := func(s string) []string {
		l := strings.SplitAfter(s, "\n")
		if l[len(l)-1] == "" {
			l = l[:len(l)-1]
		}
		return l
	}
	a, b := lines(want), lines(got)
	// lcs[i][j] is the length of the longest common subsequence of a[i:]
	// and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	line := func(mark, s string) {
		out.WriteString(mark + strings.TrimSuffix(s, "\n") + "\n")
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			line("  ", a[i])
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			line("- ", a[i])
			i++
		default:
			line("+ ", b[j])
			j++
		}
	}
	return "--- want\n+++ got\n" + out.String()
}
