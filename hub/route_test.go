package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// routedHub is two servers with tools, resources and templates.
func routedHub(t *testing.T, opts ...func(*Options)) *testHub {
	t.Helper()
	return startHub(t, twoServers, routedFakes(), opts...)
}

// routedHubTLS is routedHub served over TLS, with HTTP/2.
func routedHubTLS(t *testing.T, opts ...func(*Options)) *testHub {
	t.Helper()
	return startHubOn(t, true, twoServers, routedFakes(), opts...)
}

// routedFakes are the upstreams of routedHub.
func routedFakes() map[string]*fakeUpstream {
	return map[string]*fakeUpstream{
		"alpha": newFake("alpha").
			setList("tools/list", toolItems("echo", "slow", "ask", "do thing")).
			setList("prompts/list", items(`{"name":"greet","arguments":[{"name":"who"}]}`)).
			setList("resources/list", items(`{"uri":"file:///a.txt","name":"a"}`)),
		"beta": newFake("beta").
			setList("tools/list", toolItems("search")).
			setList("resources/templates/list", items(`{"uriTemplate":"test://template/{id}/data","name":"t"}`)),
	}
}

func TestRouteToolsCall(t *testing.T) {
	th := routedHub(t)
	c := th.connect("/mcp", "2025-06-18", `{}`)
	args := `{ "b" : [1, 2.50, 1e3], "a":"caf\u00e9",  "n":null }`
	params := `{"name":"alpha__echo","arguments":` + args + `,"_meta":{"trace":"x"}}`
	m := c.call(7, "tools/call", params)
	if m.Error != nil || string(m.ID) != "7" {
		t.Fatalf("reply = %+v %s", m.Error, m.Result)
	}
	got := th.fakes["alpha"].nextCall(t)
	if got.Method != "tools/call" || got.Session != c.sid {
		t.Errorf("fake got %s from session %q, want tools/call from %q", got.Method, got.Session, c.sid)
	}
	if want := strings.Replace(params, `"alpha__echo"`, `"echo"`, 1); string(got.Params) != want {
		t.Errorf("upstream params = %s\nwant %s (only the name rewritten)", got.Params, want)
	}
	if a, _ := jsonrpc.Member(got.Params, "arguments"); string(a) != args {
		t.Errorf("arguments = %s, want the client's bytes %s", a, args)
	}
	// An unprefixed server gets the params exactly as sent.
	params = `{"name":"search","arguments":{"q":"x"}}`
	c.call(8, "tools/call", params)
	if got := th.fakes["beta"].nextCall(t); string(got.Params) != params {
		t.Errorf("beta params = %s, want %s", got.Params, params)
	}
	// A renamed tool routes back to the server's own name.
	c.call(10, "tools/call", `{"name":"alpha__do_thing","arguments":{"x":1}}`)
	if got := th.fakes["alpha"].nextCall(t); string(got.Params) != `{"name":"do thing","arguments":{"x":1}}` {
		t.Errorf("renamed tool: upstream params = %s", got.Params)
	}
	// So does a prefixed prompt, arguments untouched.
	c.call(11, "prompts/get", `{"name":"alpha__greet","arguments":{"who":"w\u00f6rld"}}`)
	if got := th.fakes["alpha"].nextCall(t); got.Method != "prompts/get" || string(got.Params) != `{"name":"greet","arguments":{"who":"w\u00f6rld"}}` {
		t.Errorf("prompts/get: upstream got %s %s", got.Method, got.Params)
	}
	// The per-server endpoint uses the server's own names.
	per := th.connect("/alpha/mcp", "2025-06-18", `{}`)
	per.call(9, "tools/call", `{"name":"echo"}`)
	if got := th.fakes["alpha"].nextCall(t); string(got.Params) != `{"name":"echo"}` {
		t.Errorf("/alpha/mcp params = %s", got.Params)
	}
}

func TestRouteUnknownTool(t *testing.T) {
	th := routedHub(t)
	c := th.connect("/mcp", "2025-06-18", `{}`)
	m := c.call(1, "tools/call", `{"name":"alpha__ecko","arguments":{}}`)
	if m.Error == nil || m.Error.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("unknown tool: %+v, want -32602", m.Error)
	}
	if !strings.Contains(m.Error.Message, "alpha__echo") {
		t.Errorf("message %q does not suggest alpha__echo", m.Error.Message)
	}
	// The bare name of a prefixed tool is unknown on /mcp, but suggested.
	m = c.call(2, "tools/call", `{"name":"echo"}`)
	if m.Error == nil || m.Error.Code != jsonrpc.CodeInvalidParams || !strings.Contains(m.Error.Message, "alpha__echo") {
		t.Errorf("bare name: %+v, want -32602 suggesting alpha__echo", m.Error)
	}
	if n := th.fakes["alpha"].callCount("tools/call"); n != 0 {
		t.Errorf("%d calls reached the upstream", n)
	}
}

func TestRouteUpstreamErrorPassesThrough(t *testing.T) {
	th := routedHub(t)
	want := &jsonrpc.Error{Code: -32042, Message: "quota exceeded", Data: json.RawMessage(`{"retryAfter":5}`)}
	th.fakes["alpha"].setHandler(func(context.Context, *fakeCall) (json.RawMessage, error) { return nil, want })
	for _, path := range []string{"/mcp", "/alpha/mcp"} {
		c := th.connect(path, "2025-06-18", `{}`)
		name := "echo"
		if path == "/mcp" {
			name = "alpha__echo"
		}
		r := c.post(rpc(3, "tools/call", `{"name":"`+name+`"}`), "Accept", "application/json")
		if r.status != http.StatusOK {
			t.Errorf("%s: HTTP %d, want 200 for a JSON-RPC error", path, r.status)
		}
		got := r.msg(t).Error
		if got == nil || got.Code != want.Code || got.Message != want.Message || string(got.Data) != string(want.Data) {
			t.Errorf("%s: error = %+v, want %+v unchanged", path, got, want)
		}
	}
}

func TestRouteResourcesRead(t *testing.T) {
	th := routedHub(t)
	c := th.connect("/mcp", "2025-06-18", `{}`)
	for uri, server := range map[string]string{"file:///a.txt": "alpha", "test://template/123/data": "beta"} {
		params := fmt.Sprintf(`{"uri":%q}`, uri)
		if m := c.call(1, "resources/read", params); m.Error != nil {
			t.Fatalf("read %s: %+v", uri, m.Error)
		}
		if got := th.fakes[server].nextCall(t); got.Method != "resources/read" || string(got.Params) != params {
			t.Errorf("read %s: %s got %s %s", uri, server, got.Method, got.Params)
		}
	}
	for _, uri := range []string{"file:///nope", "test://template/1/2/data"} {
		m := c.call(2, "resources/read", fmt.Sprintf(`{"uri":%q}`, uri))
		if m.Error == nil || m.Error.Code != codeResourceNotFound {
			t.Errorf("read %s: %+v, want -32002", uri, m.Error)
		}
	}
}

func TestRouteListPagination(t *testing.T) {
	defer func(n int) { listPageSize = n }(listPageSize)
	listPageSize = 2
	th := routedHub(t)
	c := th.connect("/mcp", "2025-06-18", `{}`)
	var all []string
	cursor := ""
	for page := 0; ; page++ {
		params := ""
		if cursor != "" {
			params = fmt.Sprintf(`{"cursor":%q}`, cursor)
		}
		m := c.call(page, "tools/list", params)
		if m.Error != nil {
			t.Fatalf("page %d: %+v", page, m.Error)
		}
		var res struct {
			Tools []json.RawMessage `json:"tools"`
		}
		json.Unmarshal(m.Result, &res)
		all = append(all, names(t, res.Tools)...)
		next, has := jsonrpc.Member(m.Result, "nextCursor")
		if !has {
			break
		}
		if string(next) == `""` || page > 5 {
			t.Fatalf("page %d: nextCursor %s", page, next)
		}
		cursor, _ = jsonrpc.StringMember(m.Result, "nextCursor")
	}
	if want := "alpha__echo alpha__slow alpha__ask alpha__do_thing search"; strings.Join(all, " ") != want {
		t.Errorf("pages concatenated = %q, want %q", all, want)
	}
	m := c.call(9, "tools/list", `{"cursor":"bogus"}`)
	if m.Error == nil || m.Error.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("bad cursor: %+v, want -32602", m.Error)
	}
}

func TestRouteProgressOnCallStream(t *testing.T) {
	th := routedHub(t)
	th.fakes["alpha"].setHandler(func(ctx context.Context, fc *fakeCall) (json.RawMessage, error) {
		for i := 1; i <= 2; i++ {
			fc.Peer.Notify(jsonrpc.NewNotification("notifications/progress",
				json.RawMessage(fmt.Sprintf(`{"progressToken":"tok","progress":%d,"total":2}`, i))))
		}
		return json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`), nil
	})
	c := th.connect("/mcp", "2025-06-18", `{}`)
	s := c.postStream(rpc(5, "tools/call", `{"name":"alpha__slow","_meta":{"progressToken":"tok"}}`))
	for i := 1; i <= 2; i++ {
		m, _ := s.nextMsg()
		if m.Method != "notifications/progress" || !strings.Contains(string(m.Params), fmt.Sprintf(`"progress":%d`, i)) {
			t.Fatalf("event %d = %s %s, want progress %d", i, m.Method, m.Params, i)
		}
	}
	m, _ := s.nextMsg()
	if string(m.ID) != "5" || !strings.Contains(string(m.Result), "done") {
		t.Fatalf("last event = id %s %s, want the result of 5", m.ID, m.Result)
	}
	s.wantEnd()
}

func TestRouteServerRequestOnCallStream(t *testing.T) {
	th := routedHub(t)
	answered := make(chan string, 1)
	th.fakes["alpha"].setHandler(func(ctx context.Context, fc *fakeCall) (json.RawMessage, error) {
		res, err := fc.Peer.Request(ctx, "sampling/createMessage", json.RawMessage(`{"messages":[],"maxTokens":5}`))
		if err != nil {
			answered <- "error: " + err.Error()
			return nil, err
		}
		answered <- string(res)
		return json.RawMessage(`{"content":[]}`), nil
	})
	c := th.connect("/mcp", "2025-06-18", `{"sampling":{}}`)
	s := c.postStream(rpc(6, "tools/call", `{"name":"alpha__ask"}`))
	req, _ := s.nextMsg()
	if req.Method != "sampling/createMessage" || !req.IsRequest() {
		t.Fatalf("first event = %s (id %s), want the sampling request", req.Method, req.ID)
	}
	result := `{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}`
	if r := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, result)); r.status != http.StatusAccepted {
		t.Fatalf("posting the client's response: %d %s", r.status, r.body)
	}
	select {
	case got := <-answered:
		if got != result {
			t.Errorf("the upstream got %s, want %s", got, result)
		}
	case <-s.end:
		t.Fatal("stream ended before the upstream got its answer")
	}
	if m, _ := s.nextMsg(); string(m.ID) != "6" || m.Error != nil {
		t.Errorf("final event = id %s %+v, want the result of 6", m.ID, m.Error)
	}
}

func TestRouteCancelledReachesUpstream(t *testing.T) {
	th := routedHub(t)
	done := make(chan error, 2)
	th.fakes["alpha"].setHandler(blockUntilCancelled(done))
	c := th.connect("/mcp", "2025-06-18", `{}`)

	// On an SSE reply, with a numeric id.
	s := c.postStream(rpc(42, "tools/call", `{"name":"alpha__slow"}`))
	th.fakes["alpha"].nextCall(t)
	if r := c.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":42,"reason":"user"}}`); r.status != http.StatusAccepted {
		t.Fatalf("cancelled: %d", r.status)
	}
	waitErr(t, done, "the upstream call of 42 was not cancelled")
	s.stop()

	// On a JSON reply, with a string id, while the POST is still waiting.
	replied := c.postAsync(`{"jsonrpc":"2.0","id":"call-x","method":"tools/call","params":{"name":"alpha__slow"}}`, "Accept", "application/json")
	th.fakes["alpha"].nextCall(t)
	if r := c.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"call-x"}}`); r.status != http.StatusAccepted {
		t.Fatalf("cancelled: %d", r.status)
	}
	waitErr(t, done, `the upstream call of "call-x" was not cancelled`)
	select {
	case r := <-replied:
		if r.status != http.StatusOK || !strings.Contains(string(r.body), `"call-x"`) {
			t.Errorf("the cancelled JSON call answered %d %s", r.status, r.body)
		}
	case <-time.After(waitFor):
		t.Fatal("the cancelled JSON call never answered")
	}
}

func waitErr(t *testing.T, ch <-chan error, msg string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitFor):
		t.Fatal(msg)
	}
}
