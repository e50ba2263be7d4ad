//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// idpUsers are the team's people in the identity provider: each one's
// access tokens carry their groups.
const idpUsers = `{
  "alice": {"ID": "alice", "Username": "alice", "Password": "verysecure", "FirstName": "Alice", "LastName": "Example",
            "Email": "alice@example.com", "EmailVerified": true, "PreferredLanguage": "en", "Groups": ["eng"]},
  "bob":   {"ID": "bob", "Username": "bob", "Password": "verysecure", "FirstName": "Bob", "LastName": "Example",
            "Email": "bob@example.com", "EmailVerified": true, "PreferredLanguage": "en", "Groups": ["ops"]}
}`

// startIDP runs the team's identity provider (the zitadel/oidc example
// provider, internal/testkit/idp, which scripts/setup builds) on a free
// port until the test ends, and returns its issuer.
func startIDP(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := interopNeed(t, "the identity provider mcphub-idp", "MCPHUB_IDP", filepath.Join(root, ".cache", "bin", "mcphub-idp"))
	users := filepath.Join(t.TempDir(), "users.json")
	if err := os.WriteFile(users, []byte(idpUsers), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	port := addr[strings.LastIndex(addr, ":")+1:]
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PORT="+port, "USERS_FILE="+users)
	var log logBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("identity provider log:\n%s", log.String())
		}
	})
	issuer := "http://127.0.0.1:" + port + "/"
	eventually(t, 30*time.Second, "the identity provider serves its discovery document", func() error {
		select {
		case <-exited:
			t.Fatalf("the identity provider exited:\n%s", log.String())
		default:
		}
		resp, err := http.Get(issuer + ".well-known/openid-configuration")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var doc struct{ Issuer string }
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || doc.Issuer != issuer {
			return fmt.Errorf("discovery: %v, issuer %q", err, doc.Issuer)
		}
		return nil
	})
	return issuer
}

// signinStep is one line the OAuth TS client prints.
type signinStep struct {
	Step     string   `json:"step"`
	Error    string   `json:"error"`
	Names    []string `json:"names"`
	Tool     string   `json:"tool"`
	Code     int      `json:"code"`
	Message  string   `json:"message"`
	IsError  bool     `json:"isError"`
	Text     string   `json:"text"`
	Resource string   `json:"resource"`
}

// runSignin runs the official TS SDK client with its OAuth client provider
// as user against the hub endpoint url, calling each tool, and returns its
// steps.
func runSignin(t *testing.T, env []string, url, user string, tools ...string) []signinStep {
	t.Helper()
	node, modules := tsSDK(t)
	script, err := filepath.Abs(filepath.Join("testdata", "oauth_ts_client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script, url, user, "verysecure"}, tools...)...)
	cmd.Env = append(env, "MCPHUB_NODE_MODULES="+modules)
	var stderr logBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var steps []signinStep
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		var s signinStep
		if jerr := json.Unmarshal(sc.Bytes(), &s); jerr != nil || s.Error != "" {
			t.Fatalf("the TS client: %q (%v)\nstderr:\n%s", sc.Text(), jerr, stderr.String())
		}
		steps = append(steps, s)
	}
	if err != nil {
		t.Fatalf("the TS client: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	return steps
}

// Sign-in with the team's identity provider: the official TS SDK client,
// with no hub-specific step, is answered 401, finds the hub's protected
// resource metadata, signs in at the provider (a real OpenID provider built
// on zitadel/oidc; the browser's part is plain HTTP), and comes back with a
// token the hub checks against the provider's keys. Each user gets only
// the tools of the profile its group maps to, and is refused the other
// profile's tool by name.
func TestSignInWithTheTeamsIdentityProvider(t *testing.T) {
	issuer := startIDP(t)
	up := startUpstream(t, "up", upstreamOpts{})
	other := startUpstream(t, "other", upstreamOpts{})
	h := newProcHub(t)
	h.token = "signin-hub-token-0123456789"
	h.write(t, h.registry(`auth = "token"

[hub.oauth]
issuer = "`+issuer+`"
scopes = ["mcp"]

[hub.access]
[hub.access.groups]
eng = ["eng"]
ops = ["ops"]
`, remoteServer("up", up.url, `connect_timeout = "10s"`), remoteServer("other", other.url, `connect_timeout = "10s"`), teamAccessServers))
	r := h.start([]string{"MCPHUB_TOKEN=" + h.token})
	h.waitStatus(t, r, 30*time.Second, "both servers connect", connected("up", "other"))

	steps := runSignin(t, h.env(), h.base()+"/mcp", "alice", `up__echo={"text":"hi"}`, `other__echo={"text":"no"}`)
	if len(steps) != 4 || steps[0].Step != "signin" || steps[0].Resource != h.base()+"/mcp" {
		t.Fatalf("alice's steps: %+v; want signin for %s/mcp, tools and two calls", steps, h.base())
	}
	if len(steps[1].Names) == 0 {
		t.Fatal("alice sees no tools")
	}
	for _, name := range steps[1].Names {
		if !strings.HasPrefix(name, "up__") {
			t.Errorf("alice (group eng) sees %s, outside profile eng", name)
		}
	}
	if c := steps[2]; c.Tool != "up__echo" || c.Code != 0 || c.IsError || !strings.Contains(c.Text, "hi") {
		t.Errorf("alice's call of her profile's tool: %+v", c)
	}
	if c := steps[3]; c.Tool != "other__echo" || c.Code == 0 || !strings.Contains(c.Message, "profile eng") {
		t.Errorf("alice's call of another profile's tool: %+v; want a JSON-RPC refusal naming profile eng", c)
	}

	steps = runSignin(t, h.env(), h.base()+"/mcp", "bob")
	if len(steps) != 2 || len(steps[1].Names) == 0 {
		t.Fatalf("bob's steps: %+v", steps)
	}
	for _, name := range steps[1].Names {
		if !strings.HasPrefix(name, "other__") {
			t.Errorf("bob (group ops) sees %s, outside profile ops", name)
		}
	}

	// Each endpoint has its own resource URL, which a token's audience
	// names (the access room's tests refuse one endpoint's token on
	// another).
	resp, err := http.Get(h.base() + "/.well-known/oauth-protected-resource/up/mcp")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"resource":"`+h.base()+`/up/mcp"`) || !strings.Contains(string(body), issuer) {
		t.Errorf("metadata of /up/mcp: HTTP %d %s", resp.StatusCode, body)
	}
	r.stop()
	if strings.Contains(r.out.String(), "alice") || strings.Contains(r.out.String(), "verysecure") {
		t.Errorf("a subject or a password reached the hub's log")
	}
}
