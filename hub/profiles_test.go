package hub

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// profilesRegistry has two servers and profiles over them: one by server
// name with an override, one by tag and include glob, one in search mode.
const profilesRegistry = `
[servers.alpha]
command = "alpha-server"
[servers.beta]
command = "beta-server"
tags = ["web"]

[profiles.coding]
servers = ["alpha"]
exclude = ["alpha__secret"]

[profiles.coding.overrides."alpha__issue"]
name = "new_issue"
description = "Open an issue in acme/web."
annotations = { destructiveHint = false }
args = { owner = "acme", repo = "web" }

[profiles.web]
tags = ["web"]
include = ["beta__b1"]
prefixed = false

[profiles.find]
mode = "search"
`

// issueTool is a tool whose schema has the arguments the coding profile
// fixes.
const issueTool = `{"name":"issue","description":"Create an issue.","inputSchema":{"type":"object","properties":{"owner":{"type":"string"},"repo":{"type":"string"},"title":{"type":"string"}},"required":["owner","repo","title"]}}`

func profilesHub(t *testing.T, delay time.Duration) *testHub {
	t.Helper()
	return startHub(t, profilesRegistry, map[string]*fakeUpstream{
		"alpha": newFake("alpha").setList("tools/list", append(items(issueTool), toolItems("secret", "a2")...)),
		"beta":  newFake("beta").setList("tools/list", toolItems("b1", "b2")),
	}, func(o *Options) { o.ListChangedDelay = delay })
}

// toolNames lists the names of a tools/list result.
func toolNames(t *testing.T, m *jsonrpc.Message) []string {
	t.Helper()
	var res struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatalf("tools/list result %s: %v", m.Result, err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	return out
}

func TestProfileLists(t *testing.T) {
	th := profilesHub(t, 200*time.Millisecond)
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/mcp", []string{"alpha__issue", "alpha__secret", "alpha__a2", "beta__b1", "beta__b2"}},
		{"/profiles/coding/mcp", []string{"new_issue", "alpha__a2"}},
		{"/profiles/web/mcp", []string{"b1"}},
		{"/profiles/find/mcp", []string{"search_tools", "describe_tool", "call_tool"}},
	} {
		c := th.connect(tc.path, "2025-11-25", `{}`)
		if got := toolNames(t, c.call(1, "tools/list", "")); !slices.Equal(got, tc.want) {
			t.Errorf("%s lists %q, want %q", tc.path, got, tc.want)
		}
	}
	r := th.send(http.MethodPost, "/profiles/nope/mcp", initReq("2025-11-25", `{}`))
	if r.status != http.StatusNotFound || !strings.Contains(string(r.body), `no profile \"nope\"`) || !strings.Contains(string(r.body), "coding, find, web") {
		t.Errorf("an unknown profile: %d %s", r.status, r.body)
	}
}

// TestProfileOverride: the renamed tool shows its new name, description
// and annotations, and its schema without the fixed arguments; called
// under the new name it reaches the upstream under its own name with the
// fixed arguments set and the client's arguments as they were sent.
func TestProfileOverride(t *testing.T) {
	th := profilesHub(t, 200*time.Millisecond)
	c := th.connect("/profiles/coding/mcp", "2025-11-25", `{}`)
	var res struct{ Tools []json.RawMessage }
	json.Unmarshal(c.call(1, "tools/list", "").Result, &res)
	want := `{"name":"new_issue","description":"Open an issue in acme/web.","inputSchema":{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]},"annotations":{"destructiveHint":false}}`
	if len(res.Tools) == 0 || string(res.Tools[0]) != want {
		t.Fatalf("the renamed tool is listed as\n%s\nwant\n%s", res.Tools[0], want)
	}
	alpha := th.fakes["alpha"]
	alpha.setHandler(func(_ context.Context, fc *fakeCall) (json.RawMessage, error) {
		return json.RawMessage(`{"content":[]}`), nil
	})
	done := c.postAsync(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"new_issue","arguments":{ "title" : "a\u00e9b" , "owner":"evil"}}}`, "Accept", "application/json")
	fc := alpha.nextCall(t)
	if name, _ := jsonrpc.StringMember(fc.Params, "name"); name != "issue" {
		t.Errorf("the upstream was asked for %q, want issue", name)
	}
	args, _ := jsonrpc.Member(fc.Params, "arguments")
	if want := `{ "title" : "a\u00e9b","owner":"acme","repo":"web"}`; string(args) != want {
		t.Errorf("the upstream got arguments %s, want %s", args, want)
	}
	if r := <-done; r.status != http.StatusOK {
		t.Fatalf("the call: %d %s", r.status, r.body)
	}
	// /mcp has no such override: the tool keeps its name and schema.
	m := th.connect("/mcp", "2025-11-25", `{}`)
	json.Unmarshal(m.call(3, "tools/list", "").Result, &res)
	if string(res.Tools[0]) != strings.Replace(issueTool, `"issue"`, `"alpha__issue"`, 1) {
		t.Errorf("/mcp lists %s, want the tool as offered", res.Tools[0])
	}
}

// TestProfileHiddenTool: a tool the profile leaves out is refused with
// -32602, as any unknown tool, and never reaches the upstream.
func TestProfileHiddenTool(t *testing.T) {
	th := profilesHub(t, 200*time.Millisecond)
	for _, tc := range []struct{ path, name string }{
		{"/profiles/coding/mcp", "alpha__secret"},
		{"/profiles/coding/mcp", "alpha__issue"}, // renamed: the old name is gone
		{"/profiles/coding/mcp", "beta__b1"},
		{"/profiles/web/mcp", "b2"},
	} {
		c := th.connect(tc.path, "2025-11-25", `{}`)
		m := c.call(1, "tools/call", `{"name":"`+tc.name+`","arguments":{}}`)
		if m.Error == nil || m.Error.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%s %s: %s, want -32602", tc.path, tc.name, m.Encode())
		}
	}
	for name, f := range th.fakes {
		if n := f.callCount("tools/call"); n != 0 {
			t.Errorf("%s got %d calls", name, n)
		}
	}
}

// TestProfileListChanged: a list change reaches the sessions of the
// profiles whose tool set it changes, and no other profile's.
func TestProfileListChanged(t *testing.T) {
	const tools = "notifications/tools/list_changed"
	th := profilesHub(t, time.Hour)
	coding := sessionOn(t, th.h, profileEndpoint("coding"), `{}`)
	web := sessionOn(t, th.h, profileEndpoint("web"), `{}`)
	find := sessionOn(t, th.h, profileEndpoint("find"), `{}`)
	merged := sessionOn(t, th.h, "", `{}`)
	check := func(step string, want map[*session][]string) {
		t.Helper()
		flushNow(th.h.fanout)
		for s, name := range map[*session]string{coding: "coding", web: "web", find: "find", merged: "/mcp"} {
			got := queuedMethods(t, s)
			if !slices.Equal(got, want[s]) && !(len(got) == 0 && len(want[s]) == 0) {
				t.Errorf("%s: %s got %q, want %q", step, name, got, want[s])
			}
			s.mu.Lock()
			s.queue = nil
			s.mu.Unlock()
		}
	}
	// beta's b2 is not in web (include b1 only): only /mcp changes; find
	// lists its three tools whatever the catalog holds.
	th.fakes["beta"].setList("tools/list", toolItems("b1", "b2", "b3")).changed()
	check("beta gains b3", map[*session][]string{merged: {tools}})
	th.fakes["beta"].setList("tools/list", items(`{"name":"b1","description":"now documented","inputSchema":{"type":"object"}}`)).changed()
	check("beta's b1 changes", map[*session][]string{merged: {tools}, web: {tools}})
	th.fakes["alpha"].setList("tools/list", toolItems("secret")).changed()
	check("alpha keeps only secret", map[*session][]string{merged: {tools}, coding: {tools}})
	th.fakes["alpha"].setList("tools/list", toolItems("secret", "other_secret")).changed()
	check("alpha gains a tool", map[*session][]string{merged: {tools}, coding: {tools}})

	// A live edit of one profile notifies that profile only.
	th.h.Apply(parseRegistry(t, strings.Replace(profilesRegistry, `include = ["beta__b1"]`, `include = ["beta__b9"]`, 1)))
	check("web includes another tool", map[*session][]string{web: {tools}})
}

// TestProfileRemoved: removing a profile ends its sessions and its
// endpoint; adding one serves it at once.
func TestProfileRemoved(t *testing.T) {
	th := profilesHub(t, 200*time.Millisecond)
	c := th.connect("/profiles/web/mcp", "2025-11-25", `{}`)
	th.h.Apply(parseRegistry(t, strings.Replace(profilesRegistry, "[profiles.web]", "[profiles.site]", 1)))
	if r := c.post(rpc(1, "tools/list", "")); r.status != http.StatusNotFound {
		t.Errorf("a removed profile's session: %d %s, want 404", r.status, r.body)
	}
	s := th.connect("/profiles/site/mcp", "2025-11-25", `{}`)
	if got := toolNames(t, s.call(2, "tools/list", "")); !slices.Equal(got, []string{"b1"}) {
		t.Errorf("the added profile lists %q", got)
	}
}

// TestSearchMode: search_tools ranks the profile's tools, describe_tool
// gives one's definition, call_tool calls it with the call's _meta, and
// each mistake says what to do next.
func TestSearchMode(t *testing.T) {
	th := profilesHub(t, 200*time.Millisecond)
	c := th.connect("/profiles/find/mcp", "2025-11-25", `{}`)
	text := func(m *jsonrpc.Message) (string, bool) {
		t.Helper()
		var res struct {
			Content []struct{ Text string }
			IsError bool
		}
		if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || len(res.Content) != 1 {
			t.Fatalf("not a one-text result: %s", m.Encode())
		}
		return res.Content[0].Text, res.IsError
	}
	got, isErr := text(c.call(1, "tools/call", `{"name":"search_tools","arguments":{"query":"create issues"}}`))
	if isErr || !strings.Contains(got, "alpha__issue: Create an issue. (arguments: owner*, repo*, title*)") || strings.Contains(got, "b1") {
		t.Errorf("search_tools: %q", got)
	}
	got, isErr = text(c.call(2, "tools/call", `{"name":"search_tools","arguments":{"query":"isue"}}`))
	if !isErr || !strings.Contains(got, `no tool matches "isue"; try fewer or other words, such as issue`) {
		t.Errorf("a query matching nothing: %q", got)
	}
	got, isErr = text(c.call(3, "tools/call", `{"name":"describe_tool","arguments":{"name":"alpha__issue"}}`))
	if isErr || !strings.Contains(got, `"required":["owner","repo","title"]`) {
		t.Errorf("describe_tool: %q", got)
	}
	got, isErr = text(c.call(4, "tools/call", `{"name":"describe_tool","arguments":{"name":"alpha__isue"}}`))
	if !isErr || !strings.Contains(got, "did you mean alpha__issue") {
		t.Errorf("describe_tool of a wrong name: %q", got)
	}
	beta := th.fakes["beta"]
	beta.setHandler(func(_ context.Context, fc *fakeCall) (json.RawMessage, error) {
		return json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`), nil
	})
	done := c.postAsync(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"beta__b1","arguments":{"x": 1}},"_meta":{"progressToken":"p1"}}}`, "Accept", "application/json")
	fc := beta.nextCall(t)
	if name, _ := jsonrpc.StringMember(fc.Params, "name"); name != "b1" {
		t.Errorf("call_tool reached the upstream as %q", name)
	}
	if args, _ := jsonrpc.Member(fc.Params, "arguments"); string(args) != `{"x": 1}` {
		t.Errorf("call_tool passed arguments %s", args)
	}
	if _, ok := jsonrpc.Member(fc.Params, "_meta"); !ok {
		t.Errorf("call_tool dropped _meta (the progress token): %s", fc.Params)
	}
	if r := <-done; !strings.Contains(string(r.body), `"done"`) {
		t.Errorf("call_tool's result: %s", r.body)
	}
	got, isErr = text(c.call(6, "tools/call", `{"name":"call_tool","arguments":{"name":"nope"}}`))
	if !isErr || !strings.Contains(got, `no tool is named "nope" here; use search_tools`) {
		t.Errorf("call_tool of an unknown tool: %q", got)
	}
}

// TestProfileProblemEndsSessions: a profile that gains a problem is not
// served: its sessions end, and no message of its servers (a sampling
// request, a log line) is routed to a session that could not answer.
func TestProfileProblemEndsSessions(t *testing.T) {
	th := profilesHub(t, 200*time.Millisecond)
	web := th.connect("/profiles/web/mcp", "2025-11-25", `{"sampling":{}}`)
	reg := parseRegistry(t, profilesRegistry)
	reg.Profile("web").Problem = "hub.toml:30:1: include: broken"
	th.h.Apply(reg)
	if web.session() != nil {
		t.Error("the session of a profile with a problem lives on")
	}
	if sees := th.h.servers.seers("beta"); !sees("") || sees(profileEndpoint("web")) || len(th.h.servers.of(profileEndpoint("web"))) != 0 {
		t.Error("a profile with a problem still sees its servers")
	}
	r := th.send(http.MethodPost, "/profiles/web/mcp", initReq("2025-11-25", `{}`))
	if r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), "include: broken") {
		t.Errorf("initialize on a profile with a problem: %d %s", r.status, r.body)
	}
}

// TestFillArgs: a fixed argument wins over any member a server could read
// for it (the same key twice, the name in another case); every other byte
// of the arguments stays.
func TestFillArgs(t *testing.T) {
	owner := []fixedArg{{name: "owner", value: json.RawMessage(`"acme"`)}}
	for _, tc := range []struct{ in, want string }{
		{`{"name":"t"}`, `{"name":"t","arguments":{"owner":"acme"}}`},
		{`{"name":"t","arguments":null}`, `{"name":"t","arguments":{"owner":"acme"}}`},
		{`{"name":"t","arguments":{ "q" : [1, 2] }}`, `{"name":"t","arguments":{ "q" : [1, 2] ,"owner":"acme"}}`},
		{`{"name":"t","arguments":{"owner":"x","OWNER":"evil","q":1}}`, `{"name":"t","arguments":{"q":1,"owner":"acme"}}`},
		{`{"name":"t","arguments":{"owner":"x","q":1,"owner":"evil"}}`, `{"name":"t","arguments":{"q":1,"owner":"acme"}}`},
	} {
		got, err := fillArgs(json.RawMessage(tc.in), owner)
		if err != nil || string(got) != tc.want {
			t.Errorf("fillArgs(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	if _, err := fillArgs(json.RawMessage(`{"name":"t","arguments":[1]}`), owner); err == nil {
		t.Error("arguments that are not an object were taken")
	}
}

// TestHideArgsKeepsBytes: only what a fixed argument removes changes.
func TestHideArgsKeepsBytes(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"a":{},"b":{}},"required": [ "a" ,  "b" ]}`)
	if got := hideArgs(schema, []fixedArg{{name: "z", value: json.RawMessage(`1`)}}); string(got) != string(schema) {
		t.Errorf("hideArgs changed bytes it had nothing to remove:\n%s\n%s", schema, got)
	}
	if got, want := hideArgs(schema, []fixedArg{{name: "a", value: json.RawMessage(`1`)}}), `{"type":"object","properties":{"b":{}},"required": ["b"]}`; string(got) != want {
		t.Errorf("hideArgs removed a:\n%s\nwant\n%s", got, want)
	}
}

// TestSearchToolNameClash: a server's own tool named like a search tool is
// described and called through call_tool.
func TestSearchToolNameClash(t *testing.T) {
	th := startHub(t, "[servers.alpha]\ncommand = \"a\"\n[profiles.find]\nmode = \"search\"\nprefixed = false\n", map[string]*fakeUpstream{
		"alpha": newFake("alpha").setList("tools/list", toolItems("search_tools", "other")).setHandler(func(context.Context, *fakeCall) (json.RawMessage, error) {
			return json.RawMessage(`{"content":[{"type":"text","text":"the server's own"}]}`), nil
		}),
	})
	c := th.connect("/profiles/find/mcp", "2025-11-25", `{}`)
	if k := c.call(1, "tools/call", `{"name":"call_tool","arguments":{"name":"search_tools","arguments":{}}}`); !strings.Contains(string(k.Result), "the server's own") {
		t.Errorf("call_tool of the server's search_tools: %s", k.Encode())
	}
}
