package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

const accessRegistry = `
[servers.alpha]
command = "alpha"
[servers.beta]
command = "beta"
[profiles.eng]
servers = ["alpha"]
[profiles.picky]
servers = ["beta"]
include = ["beta__read*"]
[profiles.both]
servers = ["alpha", "beta"]
`

// permit serves a limited caller only its profiles: /mcp is its one
// profile, a profile's endpoint needs the profile, and a server's own
// endpoint (which has no profile's filters or overrides) is never its.
func TestPermit(t *testing.T) {
	reg := parseRegistry(t, accessRegistry)
	one := Caller{ID: "key:ci", Limited: true, Profiles: []string{"eng"}}
	two := Caller{ID: "key:ops", Limited: true, Profiles: []string{"eng", "picky"}}
	none := Caller{ID: "user:x", Limited: true}
	for _, tt := range []struct {
		name     string
		c        Caller
		endpoint string
		want     string // the endpoint served, or a piece of the refusal
		refused  bool
	}{
		{"unlimited keeps /mcp", Caller{ID: "token"}, "", "", false},
		{"unlimited keeps a server", Caller{ID: "token"}, "beta", "beta", false},
		{"one profile is /mcp", one, "", "profiles/eng", false},
		{"its profile", one, "profiles/eng", "profiles/eng", false},
		{"another profile", one, "profiles/both", "may not use profile both; it may use /profiles/eng/mcp", true},
		{"a server its profile passes whole: no overrides there", one, "alpha", "may not use /alpha/mcp, which passes alpha through without its profiles' filters and overrides", true},
		{"a server outside it", one, "beta", "may not use /beta/mcp", true},
		{"a profile the registry lost", Caller{ID: "key:old", Limited: true, Profiles: []string{"gone", "eng"}}, "", "profiles/eng", false},
		{"only lost profiles", Caller{ID: "key:old", Limited: true, Profiles: []string{"gone"}}, "", "it may use no profile of this hub", true},
		{"two profiles: no /mcp", two, "", "may not use /mcp, which serves every server; it may use /profiles/eng/mcp, /profiles/picky/mcp", true},
		{"no profile at all", none, "profiles/eng", "it may use no profile", true},
	} {
		got, err := permit(reg, tt.c, tt.endpoint)
		switch {
		case tt.refused && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.c.ID)):
			t.Errorf("%s: %q, %v; want a refusal naming the caller and saying %q", tt.name, got, err, tt.want)
		case !tt.refused && (err != nil || got != tt.want):
			t.Errorf("%s: %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

// fakeAccess answers Identify from a table of credentials.
type fakeAccess struct{ callers map[string]Caller }

type fakeRefusal struct{}

func (fakeRefusal) Error() string { return "unknown credential" }
func (fakeRefusal) Challenge() string {
	return `Bearer resource_metadata="http://hub/.well-known/oauth-protected-resource/mcp"`
}

type fakeForbidden struct{}

func (fakeForbidden) Error() string   { return "in no group" }
func (fakeForbidden) Forbidden() bool { return true }

func (f *fakeAccess) Identify(_ *http.Request, bearer string) (Caller, error) {
	switch bearer {
	case "grouped-out":
		return Caller{}, fakeForbidden{}
	case "store-down":
		return Caller{}, errors.New("read API key: connection refused")
	}
	if c, ok := f.callers[bearer]; ok {
		return c, nil
	}
	return Caller{}, fakeRefusal{}
}

func (f *fakeAccess) Metadata() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "metadata of "+r.URL.Path) })
}

// The edge asks Access about every credential that is not the hub's
// token and maps its answers: 401 with its challenge, 403, 503; the
// metadata routes need no credential; the hub's token still opens all.
func TestEdgeAccess(t *testing.T) {
	th := startHub(t, accessRegistry, nil, func(o *Options) {
		o.Token = "s3cret"
		o.Access = &fakeAccess{callers: map[string]Caller{"good-key": {ID: "key:ci", Limited: true, Profiles: []string{"eng"}}}}
	})
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	post := func(path, auth string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, th.srv.URL+path, strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	for _, tt := range []struct {
		name, path, auth string
		status           int
		body, challenge  string
	}{
		{"no credential", "/mcp", "", 401, "unknown credential", "resource_metadata="},
		{"unknown credential", "/mcp", "Bearer nope", 401, "unknown credential", "resource_metadata="},
		{"in no group", "/mcp", "Bearer grouped-out", 403, "in no group", ""},
		{"store down", "/mcp", "Bearer store-down", 503, "could not check", ""},
		{"the token", "/mcp", "Bearer s3cret", 200, "", ""},
		{"a key on its profile", "/mcp", "Bearer good-key", 200, "", ""},
		{"a key elsewhere", "/beta/mcp", "Bearer good-key", 403, "may not use /beta/mcp", ""},
	} {
		resp, body := post(tt.path, tt.auth)
		if resp.StatusCode != tt.status || !strings.Contains(body, tt.body) || !strings.Contains(resp.Header.Get("WWW-Authenticate"), tt.challenge) {
			t.Errorf("%s: HTTP %d %q (WWW-Authenticate %q); want %d with %q", tt.name, resp.StatusCode, body, resp.Header.Get("WWW-Authenticate"), tt.status, tt.body)
		}
	}
	for path, want := range map[string]int{"/mcp": 200, "/alpha/mcp": 200, "/profiles/eng/mcp": 200,
		"/nope/mcp": 404, "/profiles/nope/mcp": 404, "/alpha/sse": 404,
		// Not a route of the metadata: the credential is asked for.
		"": 401, "/alpha/../mcp": 401} {
		resp, err := http.Get(th.srv.URL + "/.well-known/oauth-protected-resource" + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || want == 200 && string(b) != "metadata of /.well-known/oauth-protected-resource"+path {
			t.Errorf("metadata of %q without a credential: HTTP %d %q; want %d", path, resp.StatusCode, b, want)
		}
	}
}

// fakeLimiter grants tokens while it has some, then asks for a wait.
type fakeLimiter struct {
	mu       sync.Mutex
	tokens   map[string]int
	subjects []string
}

func (f *fakeLimiter) Take(subject string, perSecond float64, burst int) (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subjects = append(f.subjects, subject)
	if f.tokens[subject] > 0 {
		f.tokens[subject]--
		return 0, nil
	}
	return 1500 * time.Millisecond, nil
}

// Limits at the edge: a caller over its rate is answered 429 with
// Retry-After for a new request and the JSON-RPC limit error inside a
// session; a key's own rate replaces [hub.limits]; a caller's concurrent
// tool calls are capped, and a finished call gives its slot back.
func TestEdgeLimits(t *testing.T) {
	lim := &fakeLimiter{tokens: map[string]int{"key:ci": 2, "token": 100}}
	release := make(chan struct{}, 2)
	up := newFake("alpha").setList("tools/list", toolItems("slow")).setHandler(func(ctx context.Context, _ *fakeCall) (json.RawMessage, error) {
		select {
		case <-release:
			return json.RawMessage(`{"content":[]}`), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	th := startHub(t, accessRegistry+"\n[hub.limits]\nrate = \"5/s\"\nconcurrent_calls = 1\n", map[string]*fakeUpstream{"alpha": up}, func(o *Options) {
		o.Token = "s3cret"
		o.Limiter = lim
		o.Access = &fakeAccess{callers: map[string]Caller{"ci-key": {ID: "key:ci"}}}
	})
	post := func(auth, sid, body string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, th.srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+auth)
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	resp, _ := post("ci-key", "", init)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: HTTP %d", resp.StatusCode)
	}
	if resp, body := post("ci-key", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); resp.StatusCode != 200 || !strings.Contains(body, `"tools"`) {
		t.Fatalf("the second request: HTTP %d %s", resp.StatusCode, body)
	}
	resp, body := post("ci-key", sid, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if resp.StatusCode != 200 || !strings.Contains(body, `"code":-32029`) || !strings.Contains(body, "key:ci may make 5/s requests; retry in 1.5s") {
		t.Errorf("over the rate in a session: HTTP %d %s; want the JSON-RPC limit error", resp.StatusCode, body)
	}
	resp, body = post("ci-key", "", init)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" || !strings.Contains(body, "-32029") {
		t.Errorf("over the rate outside a session: HTTP %d (Retry-After %q) %s; want 429 with Retry-After 2", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}

	// The token's calls: one at a time.
	resp, _ = post("s3cret", "", init)
	sid = resp.Header.Get("Mcp-Session-Id")
	call := func(id int) (*http.Response, string) {
		return post("s3cret", sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"alpha__slow","arguments":{}}}`, id))
	}
	first := make(chan string, 1)
	go func() { _, b := call(10); first <- b }()
	up.nextCall(t)
	if resp, body := call(11); !strings.Contains(body, "may have 1 tool calls in progress at once") || resp.StatusCode != 200 {
		t.Errorf("a second call while one runs: HTTP %d %s; want the limit error", resp.StatusCode, body)
	}
	release <- struct{}{}
	<-first
	release <- struct{}{}
	if _, b := call(12); strings.Contains(b, "-32029") {
		t.Errorf("a call after the first finished: %s; want it served", b)
	}
	lim.mu.Lock()
	defer lim.mu.Unlock()
	if !slices.Contains(lim.subjects, "token") || !slices.Contains(lim.subjects, "key:ci") {
		t.Errorf("buckets drawn from: %v", lim.subjects)
	}
}

// A stateless call that asks for input keeps its slot of its caller's
// concurrent calls while it waits: its retry, under concurrent_calls = 1,
// goes on with that slot instead of asking for a second one; and a
// retry with another caller's requestState neither takes nor ends that
// caller's call.
func TestParkedCallRetryUnderCallCap(t *testing.T) {
	fake := newFake("alpha").setList("tools/list", toolItems("ask")).setHandler(func(ctx context.Context, c *fakeCall) (json.RawMessage, error) {
		r, err := c.Peer.Request(ctx, "roots/list", nil)
		if err != nil {
			return nil, err
		}
		return json.RawMessage(`{"content":[{"type":"text","text":` + string(jsonrpc.Quote(string(r))) + `}]}`), nil
	})
	th := startHub(t, twoServers+"\n[hub.limits]\nconcurrent_calls = 1\n", map[string]*fakeUpstream{"alpha": fake})
	caps := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}}`
	call := func(id int, extra string) reply {
		return th.send(http.MethodPost, "/mcp", rpc(id, "tools/call", `{"name":"alpha__ask","_meta":{`+caps+`}`+extra+`}`), modernHeaders("tools/call", "alpha__ask")...)
	}
	r := call(1, "")
	state, _ := jsonrpc.StringMember(r.msg(t).Result, "requestState")
	inputs, _ := jsonrpc.Member(r.msg(t).Result, "inputRequests")
	var asks map[string]any
	json.Unmarshal(inputs, &asks)
	if state == "" || len(asks) != 1 {
		t.Fatalf("first round: HTTP %d %s; want input_required", r.status, r.body)
	}
	var key string
	for k := range asks {
		key = k
	}
	// Another caller's retry (a principal the state was not issued to).
	th.h.sessions.parked.mu.Lock()
	for _, c := range th.h.sessions.parked.calls {
		c.principal = "key:owner"
	}
	th.h.sessions.parked.mu.Unlock()
	// Not its call: it asks for a slot of its own (none is left).
	if r := call(2, `,"requestState":"`+state+`","inputResponses":{"`+key+`":{"roots":[]}}`); r.status != http.StatusTooManyRequests {
		t.Fatalf("a retry by another caller: HTTP %d %s; want a new call, over the cap", r.status, r.body)
	}
	th.h.sessions.parked.mu.Lock()
	for _, c := range th.h.sessions.parked.calls {
		c.principal = ""
	}
	waiting := len(th.h.sessions.parked.calls)
	th.h.sessions.parked.mu.Unlock()
	if waiting != 1 {
		t.Fatalf("%d calls wait after another caller's retry; want the owner's still waiting", waiting)
	}
	r = call(3, `,"requestState":"`+state+`","inputResponses":{"`+key+`":{"roots":[]}}`)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `roots`) {
		t.Errorf("the retry under a cap of 1: HTTP %d %s; want the call's result", r.status, r.body)
	}
}

// A requestState that names no call of the caller's takes a slot like any
// new call: a made-up one (with the hub's prefix) does not slip past the
// cap, stateless or in a session.
func TestMadeUpRequestStateTakesASlot(t *testing.T) {
	release := make(chan struct{})
	fake := newFake("alpha").setList("tools/list", toolItems("slow")).setHandler(func(ctx context.Context, _ *fakeCall) (json.RawMessage, error) {
		select {
		case <-release:
			return json.RawMessage(`{"content":[]}`), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	th := startHub(t, twoServers+"\n[hub.limits]\nconcurrent_calls = 1\n", map[string]*fakeUpstream{"alpha": fake})
	caps := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
	first := make(chan reply, 1)
	go func() {
		first <- th.send(http.MethodPost, "/mcp", rpc(1, "tools/call", `{"name":"alpha__slow","_meta":{`+caps+`}}`), modernHeaders("tools/call", "alpha__slow")...)
	}()
	fake.nextCall(t)
	madeUp := th.h.sessions.parked.mine() + "made-up"
	r := th.send(http.MethodPost, "/mcp", rpc(2, "tools/call", `{"name":"alpha__slow","requestState":"`+madeUp+`","_meta":{`+caps+`}}`), modernHeaders("tools/call", "alpha__slow")...)
	if r.status != http.StatusTooManyRequests {
		t.Errorf("a made-up requestState while the one slot is taken: HTTP %d %s; want 429", r.status, r.body)
	}
	close(release)
	<-first
}

// Refusals over a caller's limits are logged once per refusalLogEvery,
// counting those in between, and the count of the last burst is logged at
// the caller's next request let through once the period has passed.
func TestRefusalLog(t *testing.T) {
	var buf bytes.Buffer
	e := &edge{log: slog.New(slog.NewTextHandler(&buf, nil))}
	for range 3 {
		e.logRefusal("key:ci", "may make 10/s requests")
	}
	e.flushRefusals("key:ci") // within the period: nothing yet
	if n := strings.Count(buf.String(), "\n"); n != 1 {
		t.Fatalf("%d lines for 3 refusals within %s, want 1:\n%s", n, refusalLogEvery, buf.String())
	}
	e.refusalsMu.Lock()
	e.refusals["key:ci"].logged = time.Now().Add(-refusalLogEvery)
	e.refusalsMu.Unlock()
	e.flushRefusals("key:ci")
	if !strings.Contains(buf.String(), "refused_since_last_line=2") {
		t.Errorf("the burst's last 2 refusals are not counted:\n%s", buf.String())
	}
	e.flushRefusals("key:ci")
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Errorf("%d lines after a second flush with nothing new, want 2", n)
	}
}
