package hub

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/registry"
)

// src is a catalog source for a fake server named name with a prefix.
func src(name, prefix string, f *fakeUpstream, allowDeny ...[]string) source {
	spec := &registry.Server{Name: name, Prefix: prefix, Enabled: true}
	if len(allowDeny) > 0 {
		spec.Allow = allowDeny[0]
	}
	if len(allowDeny) > 1 {
		spec.Deny = allowDeny[1]
	}
	return source{spec: spec, up: f}
}

// names returns the "name" member of each item of a list.
func names(t *testing.T, list []json.RawMessage) []string {
	t.Helper()
	out := []string{}
	for _, it := range list {
		n, ok := jsonrpc.StringMember(it, "name")
		if !ok {
			t.Fatalf("item without a name: %s", it)
		}
		out = append(out, n)
	}
	return out
}

func wantNames(t *testing.T, what string, got []json.RawMessage, want ...string) {
	t.Helper()
	if g := names(t, got); !slices.Equal(g, want) {
		t.Errorf("%s = %q, want %q", what, g, want)
	}
}

// wantRoute checks that an exposed tool name maps back to server and name.
func wantRoute(t *testing.T, c *catalog, exposed, server, name string) {
	t.Helper()
	n, ok := c.tool(exposed)
	if !ok {
		t.Errorf("tool %q is not routable", exposed)
		return
	}
	if n.server != server || n.name != name {
		t.Errorf("tool %q routes to %s/%q, want %s/%q", exposed, n.server, n.name, server, name)
	}
}

func TestCatalogPrefixedNames(t *testing.T) {
	alpha := newFake("alpha").setList("tools/list", toolItems("b", "a")).
		setList("prompts/list", items(`{"name":"greet"}`))
	beta := newFake("beta").setList("tools/list", toolItems("z", "y"))
	c := buildCatalog([]source{src("alpha", "alpha", alpha), src("beta", "", beta)}, true, "__")

	// Servers in the given order, each in its own order; prefix "" is bare.
	wantNames(t, "tools", c.items["tools/list"], "alpha__b", "alpha__a", "z", "y")
	wantNames(t, "prompts", c.items["prompts/list"], "alpha__greet")
	wantRoute(t, c, "alpha__a", "alpha", "a")
	wantRoute(t, c, "z", "beta", "z")
	if _, ok := c.tool("a"); ok {
		t.Error("the bare name of a prefixed tool is routable")
	}
	if p, ok := c.prompt("alpha__greet"); !ok || p.name != "greet" || p.server != "alpha" {
		t.Errorf("prompt alpha__greet routes to %+v, %v", p, ok)
	}

	// Another separator.
	c = buildCatalog([]source{src("alpha", "al", alpha)}, true, ".")
	wantNames(t, "tools with separator .", c.items["tools/list"], "al.b", "al.a")

	// The per-server view keeps the server's own names, whatever its prefix.
	c = buildCatalog([]source{src("alpha", "alpha", alpha)}, false, "__")
	wantNames(t, "per-server tools", c.items["tools/list"], "b", "a")
	wantRoute(t, c, "b", "alpha", "b")
}

func TestCatalogDeterministic(t *testing.T) {
	mk := func() *catalog {
		a := newFake("a").setList("tools/list", toolItems("t3", "t1", "t2"))
		b := newFake("b").setList("tools/list", toolItems("t2", "x")).setList("resources/list",
			items(`{"uri":"r://1","name":"one"}`))
		return buildCatalog([]source{src("a", "", a), src("b", "", b)}, true, "__")
	}
	c1, c2 := mk(), mk()
	for _, k := range listKinds {
		if c1.digest[k.method] != c2.digest[k.method] {
			t.Errorf("%s: digest differs between two builds of the same lists", k.method)
		}
		if fmt.Sprint(c1.items[k.method]) != fmt.Sprint(c2.items[k.method]) {
			t.Errorf("%s: items differ between two builds", k.method)
		}
	}
	wantNames(t, "tools", c1.items["tools/list"], "t3", "t1", "t2", "x")
	if fmt.Sprint(c1.conflicts) != fmt.Sprint(c2.conflicts) {
		t.Errorf("conflicts differ: %v vs %v", c1.conflicts, c2.conflicts)
	}
}

func TestCatalogAllowDeny(t *testing.T) {
	f := newFake("gh").setList("tools/list", toolItems("get_issue", "get_secret", "list_repos", "delete_repo"))
	allow, deny := []string{"get_*", "list_*"}, []string{"*_secret"}
	for _, prefixed := range []bool{true, false} {
		c := buildCatalog([]source{src("gh", "gh", f, allow, deny)}, prefixed, "__")
		want := []string{"get_issue", "list_repos"}
		if prefixed {
			want = []string{"gh__get_issue", "gh__list_repos"}
		}
		wantNames(t, fmt.Sprintf("prefixed=%v tools", prefixed), c.items["tools/list"], want...)
		for _, hidden := range []string{"delete_repo", "gh__delete_repo", "gh__get_secret", "get_secret"} {
			if _, ok := c.tool(hidden); ok {
				t.Errorf("prefixed=%v: filtered tool %q is routable", prefixed, hidden)
			}
		}
	}
	// Deny alone keeps everything else.
	c := buildCatalog([]source{src("gh", "", f, nil, []string{"delete_*"})}, true, "__")
	wantNames(t, "deny only", c.items["tools/list"], "get_issue", "get_secret", "list_repos")
}

func TestCatalogCollision(t *testing.T) {
	alpha := newFake("alpha").setList("tools/list", toolItems("search", "only_alpha"))
	beta := newFake("beta").setList("tools/list", toolItems("search", "only_beta"))
	c := buildCatalog([]source{src("alpha", "", alpha), src("beta", "", beta)}, true, "__")
	wantNames(t, "tools", c.items["tools/list"], "search", "only_alpha", "only_beta")
	wantRoute(t, c, "search", "alpha", "search")
	if len(c.conflicts["alpha"]) != 0 {
		t.Errorf("the server that keeps the name reports conflicts: %q", c.conflicts["alpha"])
	}
	got := c.conflicts["beta"]
	if len(got) != 1 || !strings.Contains(got[0], `"search"`) || !strings.Contains(got[0], "alpha") {
		t.Errorf("beta's conflicts = %q, want one naming \"search\" and alpha", got)
	}
}

func TestCatalogRenamesUnusableNames(t *testing.T) {
	long1 := strings.Repeat("x", 60) + "_one"
	long2 := strings.Repeat("x", 60) + "_two"
	schema := `{"type":"object", "properties":{"q":{"type":"number","minimum":1.50}} }`
	item := func(name string) string {
		return fmt.Sprintf(`{"name":%q,  "description":"d\u00e9", "inputSchema":%s,"annotations":{"readOnlyHint":true}}`, name, schema)
	}
	f := newFake("srv").setList("tools/list", items(item("do thing/now"), item(long1), item(long2), item("ok")))
	build := func() *catalog { return buildCatalog([]source{src("srv", "srv", f)}, true, "__") }
	c := build()

	exposed := names(t, c.items["tools/list"])
	if len(exposed) != 4 {
		t.Fatalf("tools = %q, want 4", exposed)
	}
	if exposed[0] != "srv__do_thing_now" || exposed[3] != "srv__ok" {
		t.Errorf("names = %q, want srv__do_thing_now first and srv__ok last", exposed)
	}
	hashed := regexp.MustCompile(`^srv__x{50}_[0-9a-f]{8}$`)
	for _, n := range exposed[1:3] {
		if len(n) != maxNameLen || !hashed.MatchString(n) {
			t.Errorf("long name exposed as %q (%d chars), want its first 55 chars, '_' and 8 hex digits", n, len(n))
		}
	}
	if exposed[1] == exposed[2] {
		t.Errorf("two long names differing only at the end are both exposed as %q", exposed[1])
	}
	for _, n := range exposed {
		if !validName.MatchString(n) || len(n) > maxNameLen {
			t.Errorf("exposed name %q is not 1-64 chars of [A-Za-z0-9_.-]", n)
		}
	}
	// Stable: the same lists give the same names.
	if again := names(t, build().items["tools/list"]); !slices.Equal(again, exposed) {
		t.Errorf("names changed between builds: %q then %q", exposed, again)
	}
	// Routable back to the server's own name.
	wantRoute(t, c, exposed[0], "srv", "do thing/now")
	wantRoute(t, c, exposed[1], "srv", long1)
	wantRoute(t, c, exposed[2], "srv", long2)
	// Only the name member changed: every other byte is the server's.
	origs := []string{"do thing/now", long1, long2, "ok"}
	for i, it := range c.items["tools/list"] {
		want := strings.Replace(item(origs[i]), string(jsonrpc.Quote(origs[i])), string(jsonrpc.Quote(exposed[i])), 1)
		if string(it) != want {
			t.Errorf("item %d = %s\nwant %s", i, it, want)
		}
		if s, _ := jsonrpc.Member(it, "inputSchema"); string(s) != schema {
			t.Errorf("item %d inputSchema = %s, want the server's bytes %s", i, s, schema)
		}
	}
	// Each rename is reported.
	if n := len(c.conflicts["srv"]); n != 3 {
		t.Errorf("srv conflicts = %q, want 3 renames", c.conflicts["srv"])
	}
}

func TestCatalogResources(t *testing.T) {
	alpha := newFake("alpha").
		setList("resources/list", items(`{"uri":"file:///a","name":"a"}`, `{"uri":"file:///shared","name":"sa"}`)).
		setList("resources/templates/list", items(`{"uriTemplate":"test://template/{id}/data","name":"t"}`))
	beta := newFake("beta").
		setList("resources/list", items(`{"uri":"file:///b","name":"b"}`, `{"uri":"file:///shared","name":"sb"}`)).
		setList("resources/templates/list", items(`{"uriTemplate":"file:///{+path}","name":"files"}`,
			`{"uriTemplate":"bad://{x","name":"bad"}`))
	gamma := newFake("gamma").
		setList("resources/list", items(`{"uri":"test://template/static/data","name":"static"}`)).
		setList("resources/templates/list", items(`{"uriTemplate":"search://q{?q,r}","name":"s"}`,
			`{"uriTemplate":"mail://{user}/inbox{/folder}","name":"m"}`))
	c := buildCatalog([]source{src("alpha", "alpha", alpha), src("beta", "beta", beta), src("gamma", "gamma", gamma)}, true, "__")

	wantNames(t, "resources", c.items["resources/list"], "a", "sa", "b", "static")
	if got := c.conflicts["beta"]; len(got) != 2 || !strings.Contains(strings.Join(got, "\n"), "file:///shared") ||
		!strings.Contains(strings.Join(got, "\n"), "bad://{x") {
		t.Errorf("beta conflicts = %q, want the shared URI and the bad template", got)
	}
	if n := len(c.items["resources/templates/list"]); n != 4 {
		t.Errorf("templates = %d, want 4 (the unparsable one left out)", n)
	}
	tests := []struct{ uri, server string }{
		{"file:///a", "alpha"},
		{"file:///shared", "alpha"}, // the first server by name keeps it
		{"file:///b", "beta"},
		{"test://template/static/data", "gamma"}, // exact beats alpha's template
		{"test://template/123/data", "alpha"},
		{"test://template/1/2/data", ""},
		{"test://template/123/data/more", ""},
		{"file:///deep/dir/x.txt", "beta"}, // {+path} crosses '/'
		{"search://q", "gamma"},
		{"search://q?q=go", "gamma"},
		{"search://q?q=go&r=1", "gamma"},
		{"search://qx", ""},
		{"mail://bob/inbox", "gamma"},
		{"mail://bob/inbox/work", "gamma"},
		{"mail://bob/outbox", ""},
		{"nope://x", ""},
	}
	for _, tt := range tests {
		got, ok := c.resourceServer(tt.uri)
		if !ok {
			got = ""
		}
		if got != tt.server {
			t.Errorf("resourceServer(%q) = %q, want %q", tt.uri, got, tt.server)
		}
	}
}

func TestCatalogPagination(t *testing.T) {
	defer func(n int) { listPageSize = n }(listPageSize)
	listPageSize = 2
	f := newFake("s").setList("tools/list", toolItems("t1", "t2", "t3", "t4", "t5")).
		setList("prompts/list", items(`{"name":"p1"}`, `{"name":"p2"}`, `{"name":"p3"}`))
	c := buildCatalog([]source{src("s", "", f)}, true, "__")

	var all []json.RawMessage
	cursor, pages := "", 0
	var firstCursor string
	for {
		page, next, err := c.page("tools/list", cursor)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		if len(page) > listPageSize {
			t.Fatalf("page %d has %d items, over the page size %d", pages, len(page), listPageSize)
		}
		all = append(all, page...)
		pages++
		if next == "" {
			break
		}
		if pages == 1 {
			firstCursor = next
		}
		if pages > 10 {
			t.Fatal("pagination does not end")
		}
		cursor = next
	}
	if pages != 3 {
		t.Errorf("pages = %d, want 3", pages)
	}
	wantNames(t, "concatenated pages", all, "t1", "t2", "t3", "t4", "t5")

	_, promptCursor, _ := c.page("prompts/list", "")
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	tampered := []byte(firstCursor)
	tampered[0]++
	for name, bad := range map[string]string{
		"not base64":       "!!not*base64!!",
		"no separator":     enc("tools/list"),
		"foreign list":     promptCursor,
		"past the end":     enc("tools/list:99"),
		"negative offset":  enc("tools/list:-1"),
		"not a number":     enc("tools/list:two"),
		"trailing junk":    firstCursor + "A",
		"one char changed": string(tampered),
		"other method":     enc("resources/list:0"),
	} {
		if _, _, err := c.page("tools/list", bad); err == nil {
			t.Errorf("cursor %s (%q) accepted", name, bad)
		}
	}
}

func TestCatalogDigestTracksChanges(t *testing.T) {
	f := newFake("s").setList("tools/list", items(`{"name":"a","description":"one"}`))
	c1 := buildCatalog([]source{src("s", "s", f)}, true, "__")
	f.setList("tools/list", items(`{"name":"a","description":"two"}`))
	c2 := buildCatalog([]source{src("s", "s", f)}, true, "__")
	if c1.digest["tools/list"] == c2.digest["tools/list"] {
		t.Error("a changed description leaves the tools digest unchanged")
	}
	for _, m := range []string{"prompts/list", "resources/list", "resources/templates/list"} {
		if c1.digest[m] != c2.digest[m] {
			t.Errorf("%s digest changed though its list did not", m)
		}
	}
}

// TestHubCatalogOrderAndConflicts checks the hub's merged view: servers by
// name whatever the registry order, and conflicts reported in Status.
func TestHubCatalogOrderAndConflicts(t *testing.T) {
	reg := parseRegistry(t, `
[servers.zeta]
command = "z"
[servers.mid]
command = "m"
prefix = ""
[servers.alpha]
command = "a"
prefix = ""
`)
	fakes := map[string]*fakeUpstream{
		"zeta":  newFake("zeta").setList("tools/list", toolItems("z1")),
		"mid":   newFake("mid").setList("tools/list", toolItems("m2", "shared", "m1")),
		"alpha": newFake("alpha").setList("tools/list", toolItems("shared", "a1")),
	}
	h := New(Options{Registry: reg, NewUpstream: fakeFactory(fakes)})
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	wantNames(t, "merged tools", h.servers.view("").items["tools/list"], "shared", "a1", "m2", "m1", "zeta__z1")
	wantRoute(t, h.servers.view(""), "shared", "alpha", "shared")
	wantNames(t, "/mid/mcp tools", h.servers.view("mid").items["tools/list"], "m2", "shared", "m1")
	for _, s := range h.Status().Servers {
		if s.Name == "mid" && (len(s.Conflicts) != 1 || !strings.Contains(s.Conflicts[0], "shared")) {
			t.Errorf("mid's status conflicts = %q, want the hidden \"shared\"", s.Conflicts)
		}
		if s.Name == "alpha" && len(s.Conflicts) != 0 {
			t.Errorf("alpha's status conflicts = %q, want none", s.Conflicts)
		}
	}
}
