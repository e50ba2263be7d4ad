package mcphub_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is this repository's module path.
const module = "github.com/mcphub/mcphub"

// rooms is DESIGN.md's room table: what each room's production code may
// import besides the standard library: each entry allows that package and
// every package below it; an empty row allows the standard library only.
// Every room of the module has a row (TestEveryRoomHasARow), so that a new
// package is placed on the map when it is made.
var rooms = map[string][]string{
	"cmd/mcphub":       {"*"},
	"cmd/mcphub-bench": {"*"},
	"registry":         {"github.com/BurntSushi/toml", "github.com/fsnotify/fsnotify", "internal"},
	"client":           {"oauth", "golang.org/x/sys", "internal"},
	// The MCP authorization client (OAuth 2.1): discovery, registration,
	// PKCE and the grant through go-sdk, the refresher, the TokenStore,
	// the loopback sign-in. It never imports hub/, bridge/, client/ or
	// cmd/: client/ imports it.
	"oauth": {"golang.org/x/oauth2", "github.com/modelcontextprotocol/go-sdk/oauthex", "github.com/modelcontextprotocol/go-sdk/auth",
		"golang.org/x/sync/singleflight", "internal"},
	"bridge": {"client", "internal"},
	"hub":    {"api", "registry", "internal", "github.com/google/uuid"},
	// SQLite (modernc, no cgo) on a laptop, PostgreSQL (pgx) for a team:
	// one implementation over database/sql, two dialects.
	"store": {"modernc.org/sqlite", "github.com/jackc/pgx/v5"},
	// A replica of a team hub: its identity, its membership of the cluster
	// (store.Cluster) as the hub's Cluster, the takeovers and fences routed
	// to the hub, and the replicas = "one" servers' upstreams. It joins the
	// store room to the hub room, as cmd would, so that cmd stays wiring.
	"team": {"api", "hub", "registry", "store", "internal"},
	// Who may use a shared hub: API keys, the OAuth protected resource
	// (go-oidc checks tokens, go-jose verifies them against the
	// provider's keys; go-sdk's auth serves the metadata), groups to
	// profiles, limits. It is the hub's Access.
	"access": {"hub", "registry", "internal", "github.com/coreos/go-oidc/v3", "github.com/go-jose/go-jose/v4",
		"github.com/modelcontextprotocol/go-sdk/auth", "github.com/modelcontextprotocol/go-sdk/oauthex", "golang.org/x/sync/singleflight"},
	// The background service: unit generation and the kardianos wrapper.
	// The CLI passes in what it knows of hub.toml and the running hub.
	"service": {"github.com/kardianos/service"},
	// AI clients' config files: reading (import), writing with backups
	// (JSONC through hujson, Codex's TOML) and moving entries into the
	// hub. It knows hub.toml's model, never a running hub.
	"clientconf": {"registry", "github.com/tailscale/hujson", "github.com/BurntSushi/toml", "internal"},
	// Wire codecs and small shared helpers of the standard library only:
	// SSE reading and writing, the HTTP token rule, masking secrets in
	// text, edit distance for "did you mean", the catalog search, the
	// goroutine owner, and text shaped for a terminal.
	"internal/sse":     {},
	"internal/httphdr": {},
	"internal/redact":  {},
	// Secrets sealed at rest (AES-256-GCM, the standard library): a team
	// hub's OAuth grants in its database.
	"internal/seal":       {},
	"internal/textdist":   {},
	"internal/toolsearch": {},
	"internal/goroutines": {},
	"internal/termtext":   {},
	// The file lock shared by registry edits and serve.lock: LockFileEx
	// on Windows.
	"internal/filelock": {"golang.org/x/sys"},
	// The OAuth grants' store: the OS keychain, or a locked file.
	"internal/keychain": {"github.com/zalando/go-keyring", "internal/filelock"},
	// The HTTP token rule that the 2026-07-28 revision's Mcp-Param header
	// names follow (jsonrpc.ParamHeaders); internal/httphdr is stdlib-only.
	"internal/jsonrpc": {"internal/httphdr"},
	// The hub's log file: write, rotate, read, follow.
	"logfile": {"gopkg.in/natefinch/lumberjack.v2"},
	// Token counting of a hub's tools: the tokenizer, and jsonrpc's
	// member reading; it counts a catalog it is given, never fetching it.
	"internal/tokencount": {"github.com/tiktoken-go/tokenizer", "internal/jsonrpc", "internal/termtext", "api"},
	// The built-in demo MCP server: an upstream like any other, speaking
	// JSON-RPC over its stdio.
	"demo": {"internal/jsonrpc"},
	// The control API's wire types, shared by the hub and its clients:
	// the standard library only.
	"api": {},
	// The client of a running hub (the run file, its token, the control
	// API, the terminal's MCP session): it reaches the hub over HTTP only,
	// never through hub/.
	"hubclient": {"api", "registry", "client", "internal", "github.com/yosida95/uritemplate"},
	// Test support: a fake OAuth authorization server and the protected
	// MCP server in front of it, for the oauth and client rooms' tests. It
	// never imports oauth/ (whose own tests import it) nor client/.
	"internal/oauthtest": {"github.com/modelcontextprotocol/go-sdk/auth"},
	// Test support shared by several rooms' tests (Recv, SyncBuffer,
	// NoSecrets), and the dual-era test upstream (testkit/dualera: a
	// router by era in front of the everything-server in both HTTP
	// modes, and its command for the conformance scripts): the standard
	// library only.
	"internal/testkit": {},
	// The terminal MCP client: what tools, prompts and resources do once
	// their flags are read (listing, calling, printing, Ctrl-C). It
	// reaches the hub through hubclient, never through hub/, and never
	// imports cobra: the commands' wiring stays in cmd/.
	"mcpterm": {"hubclient", "api", "registry", "client", "internal", "github.com/modelcontextprotocol/go-sdk/mcp",
		"golang.org/x/term", "golang.org/x/sys"},
	// The stdio face (session relay, stateless relay, starting a hub in
	// the background): it reaches the hub over HTTP only, through
	// hubclient and client, never through hub/. It reads hub.toml again
	// for the token in force (registry); x/sys detaches a hub on Windows.
	"stdioface": {"hubclient", "client", "registry", "internal", "golang.org/x/sys"},
	// Reaching one MCP server directly, without a hub: mcphub probe
	// (plan, run, report) and login's sign-in. It never imports hub/,
	// bridge/, store/ or cmd/, nor hubclient/: the CLI tells the hub.
	"probe": {"client", "oauth", "registry", "internal"},
}

// room returns the room a package belongs to: its path inside the module,
// up to the room table's granularity (internal/x is its own room).
func room(pkg string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	parts := strings.Split(rel, "/")
	if (parts[0] == "cmd" || parts[0] == "internal") && len(parts) > 1 {
		return parts[0] + "/" + parts[1]
	}
	return parts[0]
}

// allowed reports whether room may import imp (a full import path): its own
// packages, and what its row of the table names (a package and the packages
// below it; a path of this module is named without the module prefix).
func allowed(room, imp string) bool {
	target := strings.TrimPrefix(imp, module+"/")
	for _, a := range append([]string{room}, rooms[room]...) {
		a = strings.TrimSuffix(a, "/")
		if a == "*" || target == a || strings.HasPrefix(target, a+"/") {
			return true
		}
	}
	return false
}

// goPackage is what `go list -json` says of one package.
type goPackage struct {
	ImportPath string
	Imports    []string
	Standard   bool
}

// listPackages runs `go list -deps` for GOOS over every package of the
// module and returns the module's own packages with their production
// imports (test files are not included by go list's Imports).
func listPackages(t *testing.T, goos string) []goPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports,Standard", "./...")
	cmd.Env = append(os.Environ(), "GOOS="+goos)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("GOOS=%s go list: %v", goos, err)
	}
	var pkgs []goPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(p.ImportPath, module+"/") && !p.Standard {
			pkgs = append(pkgs, p)
		}
	}
	return pkgs
}

// violations lists every import of pkgs that its room does not allow.
func violations(pkgs []goPackage, isStd func(string) bool) []string {
	var out []string
	for _, p := range pkgs {
		r := room(p.ImportPath)
		for _, imp := range p.Imports {
			if isStd(imp) || allowed(r, imp) {
				continue
			}
			out = append(out, fmt.Sprintf("%s imports %s, which room %q may not (see DESIGN.md's room table)", p.ImportPath, imp, r))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestRoomsImportOnlyWhatTheRoomTableAllows keeps DESIGN.md's layering: no
// production import runs sideways or back up, on every OS mcphub builds for.
func TestRoomsImportOnlyWhatTheRoomTableAllows(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list three times")
	}
	for _, goos := range []string{"linux", "darwin", "windows"} {
		pkgs := listPackages(t, goos)
		if len(pkgs) < 8 {
			t.Fatalf("GOOS=%s: go list found only %d packages of the module", goos, len(pkgs))
		}
		for _, v := range violations(pkgs, isStandard) {
			t.Errorf("GOOS=%s: %s", goos, v)
		}
	}
}

// TestEveryRoomHasARow keeps the table the map of every room: a package
// whose room has no row fails here, naming it, on every OS mcphub builds
// for.
func TestEveryRoomHasARow(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list three times")
	}
	for _, goos := range []string{"linux", "darwin", "windows"} {
		for _, r := range unlisted(listPackages(t, goos)) {
			t.Errorf("GOOS=%s: room %q has no row in rooms_test.go's table (and DESIGN.md's): add what it owns and may import", goos, r)
		}
	}
}

// unlisted returns the rooms of pkgs that the table has no row for; the
// module's root holds only this test.
func unlisted(pkgs []goPackage) []string {
	var out []string
	for _, p := range pkgs {
		r := room(p.ImportPath)
		if _, ok := rooms[r]; !ok && r != "" {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// isStandard reports whether an import path is the standard library's: its
// first element has no dot.
func isStandard(imp string) bool {
	return !strings.Contains(strings.Split(imp, "/")[0], ".")
}

// TestRoomTableCatchesAViolation checks the checker: imports that break
// the table are reported, imports it allows are not.
func TestRoomTableCatchesAViolation(t *testing.T) {
	cases := []struct {
		pkg, imp string
		ok       bool
	}{
		{module + "/hub", module + "/bridge", false},
		{module + "/hub", module + "/client", false},
		{module + "/hub", module + "/store", false},
		{module + "/bridge", module + "/hub", false},
		{module + "/client", module + "/bridge", false},
		{module + "/store", module + "/registry", false},
		{module + "/registry", module + "/client", false},
		{module + "/internal/jsonrpc", module + "/hub", false},
		{module + "/internal/jsonrpc", module + "/internal/sse", false},
		{module + "/internal/httphdr", module + "/internal/jsonrpc", false},
		{module + "/internal/sse", module + "/internal/jsonrpc", false},
		{module + "/hub", "modernc.org/sqlite", false},
		{module + "/oauth", module + "/client", false},
		{module + "/oauth", module + "/hub", false},
		{module + "/oauth", module + "/bridge", false},
		{module + "/oauth", module + "/cmd/mcphub", false},
		{module + "/client", "golang.org/x/oauth2", false},
		{module + "/registry", "github.com/spf13/cobra", false},
		{module + "/service", module + "/hub", false},
		{module + "/service", module + "/client", false},
		{module + "/service", module + "/cmd/mcphub", false},
		{module + "/service", "golang.org/x/term", false},
		{module + "/hub", "github.com/kardianos/service", false},
		{module + "/clientconf", module + "/hub", false},
		{module + "/clientconf", module + "/client", false},
		{module + "/clientconf", module + "/bridge", false},
		{module + "/clientconf", module + "/cmd/mcphub", false},
		{module + "/registry", module + "/clientconf", false},
		{module + "/clientconf", module + "/registry", true},
		{module + "/clientconf", "github.com/tailscale/hujson", true},
		{module + "/hub", module + "/registry", true},
		{module + "/service", "github.com/kardianos/service", true},
		{module + "/hubclient", module + "/hub", false},
		{module + "/hubclient", module + "/cmd/mcphub", false},
		{module + "/hubclient", module + "/bridge", false},
		{module + "/api", module + "/registry", false},
		{module + "/internal/termtext", module + "/api", false},
		{module + "/hub", module + "/registry", true},
		{module + "/hub", module + "/api", true},
		{module + "/hubclient", module + "/api", true},
		{module + "/hubclient", module + "/client", true},
		{module + "/hubclient", module + "/internal/termtext", true},
		{module + "/hubclient", module + "/internal/tokencount", true},
		{module + "/internal/tokencount", module + "/internal/termtext", true},
		{module + "/internal/tokencount", module + "/registry", false},
		{module + "/internal/tokencount", module + "/hubclient", false},
		{module + "/service", module + "/registry", false},
		{module + "/registry", module + "/internal/termtext", true},
		{module + "/hub", module + "/internal/jsonrpc", true},
		{module + "/bridge", module + "/client", true},
		{module + "/client", "golang.org/x/sys/windows", true},
		{module + "/client", module + "/oauth", true},
		{module + "/oauth", "golang.org/x/oauth2", true},
		{module + "/oauth", module + "/internal/keychain", true},
		{module + "/store", "modernc.org/sqlite", true},
		{module + "/store", "github.com/jackc/pgx/v5/stdlib", true},
		{module + "/store", "github.com/jackc/pgx/v5/pgconn", true},
		{module + "/store", module + "/hub", false},
		{module + "/team", module + "/hub", true},
		{module + "/team", module + "/store", true},
		{module + "/team", module + "/bridge", false},
		{module + "/team", module + "/cmd/mcphub", false},
		{module + "/hub", module + "/team", false},
		{module + "/cmd/mcphub", module + "/store", true},
		{module + "/internal/jsonrpc", module + "/internal/jsonrpc", true},
		{module + "/internal/jsonrpc", module + "/internal/httphdr", true},
		{module + "/internal/filelock", "golang.org/x/sys/windows", true},
		{module + "/internal/jsonrpc", "golang.org/x/sys/windows", false},
		{module + "/logfile", module + "/hub", false},
		{module + "/logfile", module + "/registry", false},
		{module + "/logfile", module + "/cmd/mcphub", false},
		{module + "/logfile", "gopkg.in/natefinch/lumberjack.v2", true},
		{module + "/internal/tokencount", "github.com/tiktoken-go/tokenizer/codec", true},
		{module + "/internal/tokencount", module + "/internal/jsonrpc", true},
		{module + "/internal/tokencount", module + "/hub", false},
		{module + "/internal/tokencount", module + "/client", false},
		{module + "/internal/tokencount", module + "/registry", false},
		{module + "/internal/tokencount", module + "/cmd/mcphub", false},
		{module + "/demo", module + "/internal/jsonrpc", true},
		{module + "/demo", module + "/hub", false},
		{module + "/demo", module + "/bridge", false},
		{module + "/demo", module + "/cmd/mcphub", false},
		{module + "/demo", "github.com/modelcontextprotocol/go-sdk/mcp", false},
		{module + "/internal/oauthtest", module + "/oauth", false},
		{module + "/internal/oauthtest", module + "/client", false},
		{module + "/internal/oauthtest", "github.com/modelcontextprotocol/go-sdk/auth", true},
		{module + "/internal/testkit", module + "/internal/jsonrpc", false},
		{module + "/internal/testkit/dualera", module + "/internal/jsonrpc", false},
		{module + "/internal/testkit/dualera", "github.com/modelcontextprotocol/go-sdk/mcp", false},
		{module + "/internal/testkit/dualera/cmd/dualera", module + "/internal/testkit/dualera", true},
		{module + "/mcpterm", module + "/hub", false},
		{module + "/mcpterm", module + "/bridge", false},
		{module + "/mcpterm", module + "/cmd/mcphub", false},
		{module + "/mcpterm", "github.com/spf13/cobra", false},
		{module + "/hubclient", module + "/mcpterm", false},
		{module + "/mcpterm", module + "/hubclient", true},
		{module + "/mcpterm", "github.com/modelcontextprotocol/go-sdk/mcp", true},
		{module + "/stdioface", module + "/hub", false},
		{module + "/stdioface", module + "/bridge", false},
		{module + "/stdioface", module + "/store", false},
		{module + "/stdioface", module + "/cmd/mcphub", false},
		{module + "/stdioface", module + "/hubclient", true},
		{module + "/stdioface", module + "/client", true},
		{module + "/hubclient", module + "/stdioface", false},
		{module + "/probe", module + "/hub", false},
		{module + "/probe", module + "/bridge", false},
		{module + "/probe", module + "/store", false},
		{module + "/probe", module + "/hubclient", false},
		{module + "/probe", module + "/cmd/mcphub", false},
		{module + "/probe", module + "/client", true},
		{module + "/probe", module + "/oauth", true},
		{module + "/probe", module + "/internal/keychain", true},
	}
	if got := unlisted([]goPackage{{ImportPath: module + "/hub"}, {ImportPath: module + "/newroom/x"}}); !slices.Equal(got, []string{"newroom"}) {
		t.Errorf("unlisted = %q, want [newroom]", got)
	}
	for _, c := range cases {
		got := violations([]goPackage{{ImportPath: c.pkg, Imports: []string{c.imp}}}, isStandard)
		if (len(got) == 0) != c.ok {
			t.Errorf("%s importing %s: violations %q, want allowed=%v", c.pkg, c.imp, got, c.ok)
		}
	}
}
