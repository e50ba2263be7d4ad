package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/hub"
	"github.com/mcphub/mcphub/hubclient"
)

// controlHub is a hub in this process over a fake "weather" server and a
// disabled "off", for the commands that call its control endpoints. It
// returns the hub's address and the registry text (with hubKeys under
// [hub]) that points the CLI at it.
func controlHub(t *testing.T, cfg hubConfig, hubKeys string) (h *inprocHub, addr, registryText string) {
	t.Helper()
	u := startUpstream(t, "weather", upstreamOpts{})
	servers := remoteServer("weather", u.url, "") + remoteServer("off", u.url, "enabled = false")
	cfg.noWait = true
	h = startInproc(t, servers, cfg)
	if !poll(15*time.Second, func() bool {
		st := h.h.Status()
		s := findServer(&st, "weather")
		return s != nil && s.State == api.StateConnected
	}) {
		t.Fatalf("weather did not connect within 15s: %s", describe(h.readyz()))
	}
	addr = strings.TrimPrefix(h.url, "http://")
	return h, addr, fmt.Sprintf("[hub]\nlisten = %q\n%s\n\n%s", addr, hubKeys, servers)
}

// TestGoldenCLIErrors: what a user sees when a command fails, with and
// without --json, compared with testdata/golden/<case>.txt as TestGoldenCLI
// compares its cases (-update rewrites them). Every error is a sentence
// that says what to do; none shows the hub's body as it came.
func TestGoldenCLIErrors(t *testing.T) {
	_, addr, reg := controlHub(t, hubConfig{}, "")
	withHub := func(t *testing.T, e *goldenEnv) {
		e.addPort(addr)
		e.writeRegistry(t, reg)
	}
	_, tokenAddr, tokenReg := controlHub(t, hubConfig{tweak: func(o *hub.Options) { o.Token = "golden-hub-token" }}, "")
	noHub := func(t *testing.T, e *goldenEnv) {
		e.writeRegistry(t, fmt.Sprintf(goldenRegistry, e.closedAddr(t)))
	}
	cases := []goldenCase{
		{name: "restart-unknown", args: []string{"restart", "nope"}, setup: withHub},
		{name: "restart-unknown-json", args: []string{"restart", "nope", "--json"}, setup: withHub},
		{name: "restart-disabled", args: []string{"restart", "off"}, setup: withHub},
		{name: "restart-json", args: []string{"restart", "weather", "--json"}, setup: withHub},
		{name: "restart-no-hub", args: []string{"restart", "github"}, setup: noHub},
		{name: "restart-no-token", args: []string{"restart", "weather"}, setup: func(t *testing.T, e *goldenEnv) {
			e.addPort(tokenAddr)
			e.writeRegistry(t, tokenReg)
		}},
		{name: "sessions-rm-unknown", args: []string{"sessions", "rm", "nope"}, setup: withHub},
		{name: "status-no-hub-json", args: []string{"status", "--json"}, setup: noHub},
		{name: "status-other-registry", args: []string{"status"}, setup: func(t *testing.T, e *goldenEnv) {
			// The hub holding the data directory serves the default
			// registry; the command is given another one.
			hubAddr := e.serveHub(t, goldenHubStatus)
			e.config = filepath.Join(e.tmp, "other.toml")
			e.writeRegistry(t, fmt.Sprintf(goldenRegistry, hubAddr))
		}},
		{name: "add-json", args: []string{"add", "api", "--url", "https://mcp.example.com/mcp", "--header", "Authorization=Bearer ${GOLDEN_UNSET_TOKEN}", "--json"}, setup: noHub},
		{name: "remove-unknown-json", args: []string{"remove", "githb", "--json"}, setup: noHub},
		{name: "validate-invalid-json", args: []string{"validate", "--json"}, setup: func(t *testing.T, e *goldenEnv) {
			e.writeRegistry(t, goldenInvalidRegistry)
		}},
		{name: "list-syntax-error-json", args: []string{"list", "--json"}, setup: func(t *testing.T, e *goldenEnv) {
			e.writeRegistry(t, goldenSyntaxErrorRegistry)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := goldenNewEnv(t)
			if tc.setup != nil {
				tc.setup(t, e)
			}
			got := goldenRun(e, tc.args)
			for _, secret := range []string{"golden-hub-token", "golden-header-secret", "golden-query-secret"} {
				if strings.Contains(got, secret) {
					t.Errorf("the output shows the secret %q", secret)
				}
			}
			for k, v := range goldenSecrets {
				if strings.Contains(got, v) {
					t.Errorf("the output shows the value of $%s", k)
				}
			}
			goldenCheck(t, tc.name, got)
		})
	}
}

// TestRestartErrorSentences: what the hub answers besides success becomes a
// sentence: its JSON-RPC error message, or the status with the first line
// of a plain-text body; a body in braces, or HTML, is never shown.
func TestRestartErrorSentences(t *testing.T) {
	t0 := hubclient.Target{Listen: "127.0.0.1:7733"}
	withToken := hubclient.Target{Listen: "127.0.0.1:7733", Token: "secret-token-value"}
	for _, tc := range []struct {
		name   string
		t      hubclient.Target
		status int
		body   string
		want   string
	}{
		{"json-rpc error", t0, 404, `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"unknown server: \"x\" is not an enabled server of this hub"}}` + "\n",
			`the hub refused: unknown server: "x" is not an enabled server of this hub`},
		{"error string", t0, 400, `{"error":"bad request: missing id"}`, "the hub refused: bad request: missing id"},
		{"plain text", t0, 502, "Bad Gateway\nupstream said more\n", "the hub at 127.0.0.1:7733 answered HTTP 502: Bad Gateway"},
		{"other json", t0, 500, `{"detail":{"x":1}}`, "the hub at 127.0.0.1:7733 answered HTTP 500"},
		{"html", t0, 500, "<html><style>body{color:red}</style></html>", "the hub at 127.0.0.1:7733 answered HTTP 500"},
		{"empty", t0, 500, "", "the hub at 127.0.0.1:7733 answered HTTP 500"},
		{"no token", t0, 401, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Unauthorized"}}`, "wants a token, and the registry gives none"},
		{"wrong token", withToken, 401, "", "refused the registry's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.t.AnswerError(tc.status, []byte(tc.body))
			got := err.Error()
			if tc.status == 401 && !strings.Contains(got, tc.want) || tc.status != 401 && got != tc.want {
				t.Errorf("hubAnswerError = %q, want %q", got, tc.want)
			}
			if strings.Contains(got, "secret-token-value") || strings.ContainsAny(got, "{}<") {
				t.Errorf("the sentence shows a token or a body: %q", got)
			}
			if tc.status == 401 && !strings.Contains(got, "see mcphub token") {
				t.Errorf("a refused token does not point at mcphub token: %q", got)
			}
		})
	}
}
