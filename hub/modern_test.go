package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// modernMeta is the _meta of a 2026-07-28 request; extra members follow.
func modernMeta(extra string) string {
	m := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}`
	if extra != "" {
		m += "," + extra
	}
	return "{" + m + "}"
}

// modernBody is a 2026-07-28 request whose params get the standard _meta
// (params "" = none but _meta).
func modernBody(id int, method, params string) string {
	p := `{"_meta":` + modernMeta("") + `}`
	if params != "" {
		p = strings.Replace(params, "{", `{"_meta":`+modernMeta("")+`,`, 1)
	}
	return rpc(id, method, p)
}

// modernHeaders are the headers a 2026-07-28 client sends with a request
// for method (and the name it names, if any); kv follow and override.
func modernHeaders(method, name string, kv ...string) []string {
	h := []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", method}
	if name != "" {
		h = append(h, "Mcp-Name", name)
	}
	return append(h, kv...)
}

// TestModernChecks: a 2026-07-28 request is checked as the revision says,
// each error echoing the request's id with its code and HTTP status.
func TestModernChecks(t *testing.T) {
	th := startHub(t, twoServers, nil)
	meta := modernMeta("")
	tests := []struct {
		name   string
		body   string
		kv     []string
		status int
		code   int
	}{
		{"no _meta", rpc(7, "server/discover", `{}`), modernHeaders("server/discover", ""), 400, jsonrpc.CodeInvalidParams},
		{"no protocol version", rpc(7, "server/discover", `{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}`), modernHeaders("server/discover", ""), 400, jsonrpc.CodeInvalidParams},
		{"no client capabilities", rpc(7, "server/discover", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`), modernHeaders("server/discover", ""), 400, jsonrpc.CodeInvalidParams},
		{"header and _meta differ", rpc(7, "server/discover", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999","io.modelcontextprotocol/clientCapabilities":{}}}`), modernHeaders("server/discover", ""), 400, jsonrpc.CodeHeaderMismatch},
		{"no version header", modernBody(7, "server/discover", ""), modernHeaders("server/discover", "", "MCP-Protocol-Version", ""), 400, jsonrpc.CodeHeaderMismatch},
		{"unknown log level", rpc(7, "tools/list", `{"_meta":`+modernMeta(`"io.modelcontextprotocol/logLevel":"loud"`)+`}`), modernHeaders("tools/list", ""), 400, jsonrpc.CodeInvalidParams},
		{"initialize is removed", modernBody(7, "initialize", ""), modernHeaders("initialize", ""), 404, jsonrpc.CodeMethodNotFound},
		{"ping is removed", modernBody(7, "ping", ""), modernHeaders("ping", ""), 404, jsonrpc.CodeMethodNotFound},
		{"logging/setLevel is removed", modernBody(7, "logging/setLevel", `{"level":"info"}`), modernHeaders("logging/setLevel", ""), 404, jsonrpc.CodeMethodNotFound},
		{"resources/subscribe is removed", modernBody(7, "resources/subscribe", `{"uri":"x:a"}`), modernHeaders("resources/subscribe", ""), 404, jsonrpc.CodeMethodNotFound},
		{"unknown method", modernBody(7, "unknown/method", ""), modernHeaders("unknown/method", ""), 404, jsonrpc.CodeMethodNotFound},
		{"no Mcp-Method", modernBody(7, "tools/list", ""), modernHeaders("tools/list", "", "Mcp-Method", ""), 400, jsonrpc.CodeHeaderMismatch},
		{"Mcp-Method of another method", modernBody(7, "tools/list", ""), modernHeaders("prompts/list", ""), 400, jsonrpc.CodeHeaderMismatch},
		{"Mcp-Method values are case-sensitive", modernBody(7, "tools/list", ""), modernHeaders("TOOLS/LIST", ""), 400, jsonrpc.CodeHeaderMismatch},
		{"no Mcp-Name", modernBody(7, "tools/call", `{"name":"alpha__a"}`), modernHeaders("tools/call", ""), 400, jsonrpc.CodeHeaderMismatch},
		{"Mcp-Name of another tool", modernBody(7, "tools/call", `{"name":"alpha__a"}`), modernHeaders("tools/call", "alpha__b"), 400, jsonrpc.CodeHeaderMismatch},
		{"Mcp-Name with broken base64", modernBody(7, "resources/read", `{"uri":"x:a"}`), modernHeaders("resources/read", "=?base64?eDph!?="), 400, jsonrpc.CodeHeaderMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := th.send(http.MethodPost, "/mcp", tt.body, tt.kv...)
			if r.status != tt.status {
				t.Fatalf("status = %d %s, want %d", r.status, r.body, tt.status)
			}
			rpcErr(t, r, tt.code, "7")
			if r.header.Get("Mcp-Session-Id") != "" {
				t.Error("a stateless request was given a session id")
			}
		})
	}

	t.Run("unsupported version lists the supported ones", func(t *testing.T) {
		body := rpc(8, "server/discover", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999","io.modelcontextprotocol/clientCapabilities":{}}}`)
		r := th.send(http.MethodPost, "/mcp", body, modernHeaders("server/discover", "", "MCP-Protocol-Version", "v999")...)
		if r.status != 400 {
			t.Fatalf("status = %d %s, want 400", r.status, r.body)
		}
		e := rpcErr(t, r, jsonrpc.CodeUnsupportedProtocolVersion, "8")
		var data struct {
			Supported []string `json:"supported"`
			Requested string   `json:"requested"`
		}
		if err := json.Unmarshal(e.Data, &data); err != nil || data.Requested != "v999" || len(data.Supported) != len(jsonrpc.Versions) || data.Supported[0] != "2026-07-28" {
			t.Errorf("data = %s", e.Data)
		}
	})
	t.Run("GET and DELETE are not allowed", func(t *testing.T) {
		for _, m := range []string{http.MethodGet, http.MethodDelete} {
			r := th.send(m, "/mcp", "", "MCP-Protocol-Version", "2026-07-28")
			if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "POST" {
				t.Errorf("%s: %d Allow %q, want 405 with Allow POST", m, r.status, r.header.Get("Allow"))
			}
		}
	})
	t.Run("a notification is accepted and dropped", func(t *testing.T) {
		r := th.send(http.MethodPost, "/mcp", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"_meta":`+meta+`}}`,
			modernHeaders("notifications/cancelled", "")...)
		if r.status != http.StatusAccepted {
			t.Errorf("status = %d %s, want 202", r.status, r.body)
		}
	})
	t.Run("a response is refused", func(t *testing.T) {
		r := th.send(http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":3,"result":{}}`, modernHeaders("", "")...)
		if r.status != http.StatusBadRequest {
			t.Errorf("status = %d %s, want 400", r.status, r.body)
		}
	})
	t.Run("a session-era header keeps the session era", func(t *testing.T) {
		r := th.send(http.MethodPost, "/mcp", modernBody(9, "tools/list", ""), "MCP-Protocol-Version", "2025-11-25")
		if r.status != 400 || !strings.Contains(string(r.body), "Mcp-Session-Id") {
			t.Errorf("status = %d %s, want the session era's 400 for a missing session", r.status, r.body)
		}
	})
}

// TestModernDiscover: server/discover gives the view's capabilities, the
// versions the hub serves, and mcphub's serverInfo in _meta.
func TestModernDiscover(t *testing.T) {
	th := startHub(t, twoServers, nil)
	r := th.send(http.MethodPost, "/mcp", modernBody(1, "server/discover", ""), modernHeaders("server/discover", "")...)
	if r.status != 200 {
		t.Fatalf("status = %d %s", r.status, r.body)
	}
	var res struct {
		ResultType        string          `json:"resultType"`
		SupportedVersions []string        `json:"supportedVersions"`
		Capabilities      json.RawMessage `json:"capabilities"`
		TTL               *int            `json:"ttlMs"`
		CacheScope        string          `json:"cacheScope"`
		ProtocolVersion   *string         `json:"protocolVersion"`
		Meta              map[string]struct {
			Name string `json:"name"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(r.msg(t).Result, &res); err != nil {
		t.Fatal(err)
	}
	if res.ResultType != "complete" || res.TTL == nil || res.CacheScope == "" || res.ProtocolVersion != nil {
		t.Errorf("discover = %s", r.body)
	}
	if strings.Join(res.SupportedVersions, ",") != "2026-07-28,2025-11-25,2025-06-18,2025-03-26,2024-11-05" {
		t.Errorf("supportedVersions = %v", res.SupportedVersions)
	}
	if _, ok := jsonrpc.Member(res.Capabilities, "tools"); !ok {
		t.Errorf("capabilities = %s", res.Capabilities)
	}
	if res.Meta[jsonrpc.MetaServerInfo].Name != "mcphub" {
		t.Errorf("_meta = %v, want mcphub's serverInfo", res.Meta)
	}
	if n := th.h.sessions.len(); n != 0 {
		t.Errorf("%d sessions after a stateless request", n)
	}
}

// TestModernCall: a stateless call reaches the upstream on its shared
// connection without the protocol's _meta, and its result says it is
// complete; lists carry the caching hints.
func TestModernCall(t *testing.T) {
	th := startHub(t, twoServers, map[string]*fakeUpstream{"alpha": newFake("alpha").setList("tools/list", toolItems("a"))})
	r := th.send(http.MethodPost, "/mcp", modernBody(2, "tools/call", `{"name":"alpha__a","arguments":{"x":1}}`), modernHeaders("tools/call", "alpha__a")...)
	if r.status != 200 {
		t.Fatalf("status = %d %s", r.status, r.body)
	}
	if rt, _ := jsonrpc.StringMember(r.msg(t).Result, "resultType"); rt != "complete" {
		t.Errorf("result = %s, want resultType complete", r.body)
	}
	c := th.fakes["alpha"].nextCall(t)
	if c.Session != "" {
		t.Errorf("the call came from session %q, want the shared connection", c.Session)
	}
	if name, _ := jsonrpc.StringMember(c.Params, "name"); name != "a" {
		t.Errorf("upstream params = %s", c.Params)
	}
	// The session-era upstream is not told the request's protocol version
	// (it would answer statelessly) but is told what the client declared.
	if _, ok := jsonrpc.MetaMember(c.Params, jsonrpc.MetaProtocolVersion); ok {
		t.Errorf("upstream params carry the request's protocol version: %s", c.Params)
	}
	if caps, _ := jsonrpc.MetaMember(c.Params, jsonrpc.MetaClientCapabilities); string(caps) != "{}" {
		t.Errorf("upstream params lack the client's capabilities: %s", c.Params)
	}

	r = th.send(http.MethodPost, "/mcp", modernBody(3, "tools/list", ""), modernHeaders("tools/list", "")...)
	res := r.msg(t).Result
	ttl, _ := jsonrpc.Member(res, "ttlMs")
	scope, _ := jsonrpc.StringMember(res, "cacheScope")
	rt, _ := jsonrpc.StringMember(res, "resultType")
	if string(ttl) != fmt.Sprint(listTTL.Milliseconds()) || scope != cacheScope || rt != "complete" {
		t.Errorf("tools/list = %s", res)
	}

	// A base64 Mcp-Name names the same tool.
	r = th.send(http.MethodPost, "/mcp", modernBody(4, "tools/call", `{"name":"alpha__a"}`), modernHeaders("tools/call", jsonrpc.EncodeHeaderValue(" alpha__a"))...)
	if r.status != 400 {
		t.Errorf("a name with a space encoded for another name: %d %s", r.status, r.body)
	}
	r = th.send(http.MethodPost, "/mcp", modernBody(5, "tools/call", `{"name":"alpha__a"}`), modernHeaders("tools/call", "=?base64?YWxwaGFfX2E=?=")...)
	if r.status != 200 {
		t.Errorf("a base64 Mcp-Name: %d %s", r.status, r.body)
	}
	if n := th.h.sessions.len(); n != 0 {
		t.Errorf("%d sessions after stateless requests", n)
	}
}

// TestModernResourceNotFound: a stateless client gets -32602 with the URI
// for a resource no server offers (the revision retired -32002).
func TestModernResourceNotFound(t *testing.T) {
	th := startHub(t, twoServers, nil)
	const uri = "test://nonexistent"
	r := th.send(http.MethodPost, "/mcp", modernBody(6, "resources/read", `{"uri":"`+uri+`"}`), modernHeaders("resources/read", uri)...)
	e := rpcErr(t, r, jsonrpc.CodeInvalidParams, "6")
	if got, _ := jsonrpc.StringMember(e.Data, "uri"); got != uri {
		t.Errorf("data = %s", e.Data)
	}
}

// TestModernStream: what the upstream sends about a stateless call comes
// on the call's SSE stream before its result, without event ids: progress
// always, log messages only at the level the request's _meta asks for.
func TestModernStream(t *testing.T) {
	fake := newFake("alpha").setList("tools/list", toolItems("a")).setHandler(func(ctx context.Context, c *fakeCall) (json.RawMessage, error) {
		c.Peer.Notify(jsonrpc.NewNotification("notifications/message", json.RawMessage(`{"level":"debug","data":"low"}`)))
		c.Peer.Notify(jsonrpc.NewNotification("notifications/message", json.RawMessage(`{"level":"warning","data":"high"}`)))
		c.Peer.Notify(jsonrpc.NewNotification("notifications/progress", json.RawMessage(`{"progressToken":"p1","progress":1}`)))
		c.Peer.Notify(jsonrpc.NewNotification("notifications/resources/updated", json.RawMessage(`{"uri":"x:a"}`)))
		return json.RawMessage(`{"content":[]}`), nil
	})
	th := startHub(t, twoServers, map[string]*fakeUpstream{"alpha": fake})
	read := func(level string) []string {
		t.Helper()
		meta := modernMeta(`"progressToken":"p1"`)
		if level != "" {
			meta = modernMeta(`"progressToken":"p1","io.modelcontextprotocol/logLevel":"` + level + `"`)
		}
		s := th.open(http.MethodPost, "/mcp", rpc(1, "tools/call", `{"name":"alpha__a","_meta":`+meta+`}`), modernHeaders("tools/call", "alpha__a")...)
		if ct := s.resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("Content-Type %q, want an SSE stream", ct)
		}
		var got []string
		for {
			ev := s.next()
			if ev.HasID {
				t.Errorf("event %q has an id; the revision does not resume streams", ev.Data)
			}
			m, err := jsonrpc.Decode([]byte(ev.Data))
			if err != nil {
				t.Fatal(err)
			}
			if m.Method == "" {
				got = append(got, "result")
				s.wantEnd()
				return got
			}
			d, _ := jsonrpc.StringMember(m.Params, "data")
			got = append(got, m.Method+" "+d)
		}
	}
	if got := strings.Join(read(""), ", "); got != "notifications/progress , result" {
		t.Errorf("without a log level: %s", got)
	}
	if got := strings.Join(read("info"), ", "); got != "notifications/message high, notifications/progress , result" {
		t.Errorf("at info: %s", got)
	}
}

// TestModernListen: subscriptions/listen acknowledges first, then sends
// only what the client opted in to, each tagged with its subscription id;
// a second filter does not hear what the first does.
func TestModernListen(t *testing.T) {
	fake := newFake("alpha").setList("tools/list", toolItems("a"))
	th := startHub(t, twoServers, map[string]*fakeUpstream{"alpha": fake}, func(o *Options) { o.ListChangedDelay = time.Millisecond })
	open := func(id int, filter string) *sseClient {
		s := th.open(http.MethodPost, "/mcp", modernBody(id, "subscriptions/listen", `{"notifications":`+filter+`}`), modernHeaders("subscriptions/listen", "")...)
		if s.resp.StatusCode != 200 {
			t.Fatalf("listen: %d", s.resp.StatusCode)
		}
		m, _ := s.nextMsg()
		if m.Method != "notifications/subscriptions/acknowledged" {
			t.Fatalf("first message %s, want the acknowledgement", m.Method)
		}
		if sub, _ := jsonrpc.MetaMember(m.Params, jsonrpc.MetaSubscriptionID); string(sub) != fmt.Sprint(id) {
			t.Errorf("ack params = %s, want subscription id %d", m.Params, id)
		}
		return s
	}
	tools := open(41, `{"toolsListChanged":true}`)
	prompts := open(42, `{"promptsListChanged":true}`)
	eventually(t, "both listeners registered", func() bool { return len(th.h.sessions.listenersOf("")) == 2 })

	fake.setList("tools/list", toolItems("a", "b")).changed()
	m, _ := tools.nextMsg()
	if m.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %s, want tools/list_changed", m.Method)
	}
	if sub, _ := jsonrpc.MetaMember(m.Params, jsonrpc.MetaSubscriptionID); string(sub) != "41" {
		t.Errorf("params = %s, want subscription id 41", m.Params)
	}
	// The flush that reached the first listener has passed the second.
	for _, l := range th.h.sessions.listenersOf("") {
		if string(l.id) == "42" && len(l.ch) != 0 {
			t.Errorf("the prompts-only listener was given %d notifications", len(l.ch))
		}
	}
	prompts.stop()
	eventually(t, "a closed listener is dropped", func() bool { return len(th.h.sessions.listenersOf("")) == 1 })
	if n := th.h.sessions.len(); n != 0 {
		t.Errorf("%d sessions for listeners", n)
	}
}

// TestModernInputRequired: a session-era server's requests for input
// reach a stateless client as one input_required result; its retry with
// inputResponses answers them and the call completes. A requestState the
// hub did not mint for that call is refused.
func TestModernInputRequired(t *testing.T) {
	fake := newFake("alpha").setList("tools/list", toolItems("ask")).setHandler(func(ctx context.Context, c *fakeCall) (json.RawMessage, error) {
		// Two asks at once, as the Go SDK sends them: one round.
		type answer struct {
			res json.RawMessage
			err error
		}
		name, roots := make(chan answer, 1), make(chan answer, 1)
		go func() {
			r, err := c.Peer.Request(ctx, "elicitation/create", json.RawMessage(`{"message":"name?","requestedSchema":{"type":"object","properties":{}}}`))
			name <- answer{r, err}
		}()
		go func() {
			r, err := c.Peer.Request(ctx, "roots/list", nil)
			roots <- answer{r, err}
		}()
		n, r := <-name, <-roots
		if n.err != nil || r.err != nil {
			return nil, fmt.Errorf("asks failed: %v %v", n.err, r.err)
		}
		return json.RawMessage(`{"content":[{"type":"text","text":` + string(jsonrpc.Quote(string(n.res)+" "+string(r.res))) + `}]}`), nil
	})
	th := startHub(t, twoServers, map[string]*fakeUpstream{"alpha": fake})
	caps := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"roots":{}}`
	call := func(id int, extra string) reply {
		return th.send(http.MethodPost, "/mcp", rpc(id, "tools/call", `{"name":"alpha__ask","_meta":{`+caps+`}`+extra+`}`), modernHeaders("tools/call", "alpha__ask")...)
	}
	r := call(1, "")
	res := r.msg(t).Result
	var ir struct {
		ResultType    string `json:"resultType"`
		RequestState  string `json:"requestState"`
		InputRequests map[string]struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		} `json:"inputRequests"`
	}
	if err := json.Unmarshal(res, &ir); err != nil || ir.ResultType != "input_required" || len(ir.InputRequests) != 2 || ir.RequestState == "" {
		t.Fatalf("first round: %s", r.body)
	}
	responses := map[string]string{}
	for key, req := range ir.InputRequests {
		switch req.Method {
		case "elicitation/create":
			responses[key] = `{"action":"accept","content":{"name":"Ada"}}`
		case "roots/list":
			responses[key] = `{"roots":[]}`
		default:
			t.Errorf("asked for %s", req.Method)
		}
	}
	var rs []string
	for k, v := range responses {
		rs = append(rs, string(jsonrpc.Quote(k))+":"+v)
	}
	inputs := `,"inputResponses":{` + strings.Join(rs, ",") + `}`

	// A state the hub never minted, or minted for another call, is refused.
	if r := call(2, inputs+`,"requestState":"`+ir.RequestState+`-TAMPERED"`); !strings.Contains(string(r.body), `"code":-32602`) {
		t.Errorf("a tampered requestState: %s", r.body)
	}
	r = call(3, inputs+`,"requestState":"`+ir.RequestState+`"`)
	text, _ := jsonrpc.Member(r.msg(t).Result, "content")
	if !strings.Contains(string(text), "Ada") || !strings.Contains(string(text), "roots") {
		t.Errorf("the retry: %s", r.body)
	}
	// A requestState works once.
	if r := call(4, inputs+`,"requestState":"`+ir.RequestState+`"`); !strings.Contains(string(r.body), `"code":-32602`) {
		t.Errorf("a used requestState: %s", r.body)
	}
	if n := fake.callCount("tools/call"); n != 1 {
		t.Errorf("the upstream saw %d calls, want the one that was parked and resumed", n)
	}
}

// TestModernMissingCapability: a server that asks a stateless client for
// input it did not declare gets an error, and the client -32021 naming
// the capability.
func TestModernMissingCapability(t *testing.T) {
	fake := newFake("alpha").setList("tools/list", toolItems("sample")).setHandler(func(ctx context.Context, c *fakeCall) (json.RawMessage, error) {
		if _, err := c.Peer.Request(ctx, "sampling/createMessage", json.RawMessage(`{"messages":[],"maxTokens":1}`)); err != nil {
			return nil, err
		}
		return json.RawMessage(`{"content":[]}`), nil
	})
	th := startHub(t, twoServers, map[string]*fakeUpstream{"alpha": fake})
	r := th.send(http.MethodPost, "/mcp", modernBody(1, "tools/call", `{"name":"alpha__sample"}`), modernHeaders("tools/call", "alpha__sample")...)
	if r.status != http.StatusBadRequest {
		t.Errorf("status %d, want 400", r.status)
	}
	e := rpcErr(t, r, jsonrpc.CodeMissingRequiredCapability, "1")
	if _, ok := jsonrpc.Member(mustMember(t, e.Data, "requiredCapabilities"), "sampling"); !ok {
		t.Errorf("data = %s", e.Data)
	}
}

func mustMember(t *testing.T, obj json.RawMessage, key string) json.RawMessage {
	t.Helper()
	v, ok := jsonrpc.Member(obj, key)
	if !ok {
		t.Fatalf("%s has no %s", obj, key)
	}
	return v
}

// TestSessionClientStatelessUpstream: a stateless server's input_required
// result reaches a session-era client as requests on its call's stream;
// the hub retries the call with the answers and the server's requestState,
// and the complete result arrives without resultType.
func TestSessionClientStatelessUpstream(t *testing.T) {
	fake := newFake("alpha").setList("tools/list", toolItems("ask"))
	fake.setStatus(UpstreamStatus{State: api.StateConnected, Transport: "fake", Protocol: "2026-07-28", Since: time.Now()})
	retried := make(chan json.RawMessage, 1)
	fake.setHandler(func(ctx context.Context, c *fakeCall) (json.RawMessage, error) {
		if _, ok := jsonrpc.Member(c.Params, "inputResponses"); !ok {
			return json.RawMessage(`{"resultType":"input_required","inputRequests":{"who":{"method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object","properties":{}}}}},"requestState":"server-state-1"}`), nil
		}
		retried <- c.Params
		return json.RawMessage(`{"resultType":"complete","content":[{"type":"text","text":"hello"}]}`), nil
	})
	th := startHub(t, twoServers, map[string]*fakeUpstream{"alpha": fake})
	c := th.connect("/mcp", "2025-11-25", `{"elicitation":{}}`)
	s := c.postStream(rpc(7, "tools/call", `{"name":"alpha__ask","arguments":{"a":1}}`))
	req, _ := s.nextMsg()
	if req.Method != "elicitation/create" || !req.IsRequest() || !strings.Contains(string(req.Params), "name?") {
		t.Fatalf("first event = %s %s, want the elicitation request", req.Method, req.Params)
	}
	if r := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"n":"Ada"}}}`, req.ID)); r.status != http.StatusAccepted {
		t.Fatalf("posting the answer: %d %s", r.status, r.body)
	}
	p := <-retried
	state, _ := jsonrpc.StringMember(p, "requestState")
	resp, _ := jsonrpc.Member(p, "inputResponses")
	args, _ := jsonrpc.Member(p, "arguments")
	if state != "server-state-1" || string(resp) != `{"who":{"action":"accept","content":{"n":"Ada"}}}` || string(args) != `{"a":1}` {
		t.Errorf("the retry's params: %s", p)
	}
	// The stateless server is told this session's capabilities.
	if caps, _ := jsonrpc.MetaMember(p, jsonrpc.MetaClientCapabilities); string(caps) != `{"elicitation":{}}` {
		t.Errorf("the server was told capabilities %s", caps)
	}
	m, _ := s.nextMsg()
	if string(m.ID) != "7" || m.Error != nil || strings.Contains(string(m.Result), "resultType") || !strings.Contains(string(m.Result), "hello") {
		t.Errorf("final event = id %s %s %+v, want the result without resultType", m.ID, m.Result, m.Error)
	}
}

// TestParamHeaders: Mcp-Param-* headers must carry the arguments their
// tool marks with x-mcp-header, as SEP-2243 says.
func TestParamHeaders(t *testing.T) {
	item := json.RawMessage(`{"name":"t","inputSchema":{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"Priority"},
		"on":{"type":"boolean","x-mcp-header":"On"},"q":{"type":"string"},
		"opts":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}}}}}}`)
	for _, tt := range []struct {
		name, args string
		headers    map[string]string
		ok         bool
	}{
		{"plain", `{"region":"eu","n":42,"on":true,"q":"x"}`, map[string]string{"Mcp-Param-Region": "eu", "Mcp-Param-Priority": "42", "Mcp-Param-On": "true"}, true},
		{"base64", `{"region":"Hello"}`, map[string]string{"mcp-param-region": "=?base64?SGVsbG8=?="}, true},
		{"bad padding", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8?="}, false},
		{"bad characters", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVs!!!bG8=?="}, false},
		{"literal that looks encoded", `{"region":"SGVsbG8="}`, map[string]string{"Mcp-Param-Region": "SGVsbG8="}, true},
		{"half a marker is literal", `{"region":"=?base64?SGVsbG8="}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8="}, true},
		{"missing header", `{"region":"eu"}`, nil, false},
		{"other value", `{"region":"eu"}`, map[string]string{"Mcp-Param-Region": "us"}, false},
		{"number compared as a number", `{"n":42}`, map[string]string{"Mcp-Param-Priority": "42.0"}, true},
		{"header without its argument", `{}`, map[string]string{"Mcp-Param-Region": "eu"}, false},
		{"null argument, no header", `{"region":null}`, nil, true},
		{"boolean case matters", `{"on":true}`, map[string]string{"Mcp-Param-On": "True"}, false},
		{"nested argument", `{"opts":{"zone":"z1"}}`, map[string]string{"Mcp-Param-Zone": "z1"}, true},
		{"nested argument without its header", `{"opts":{"zone":"z1"}}`, nil, false},
	} {
		h := http.Header{}
		for k, v := range tt.headers {
			h.Set(k, v)
		}
		e := checkParamHeaders(h, item, json.RawMessage(tt.args))
		if (e == nil) != tt.ok || (e != nil && e.Code != jsonrpc.CodeHeaderMismatch) {
			t.Errorf("%s: %v, want ok=%v", tt.name, e, tt.ok)
		}
	}
}

// TestModernPartialRetry: a retry that answers only some of the inputs
// asked for is asked again for the rest, under a new requestState.
func TestModernPartialRetry(t *testing.T) {
	fake := newFake("alpha").setList("tools/list", toolItems("ask")).setHandler(func(ctx context.Context, c *fakeCall) (json.RawMessage, error) {
		r, err := c.Peer.Request(ctx, "roots/list", nil)
		if err != nil {
			return nil, err
		}
		return json.RawMessage(`{"content":[{"type":"text","text":` + string(jsonrpc.Quote(string(r))) + `}]}`), nil
	})
	th := startHub(t, twoServers, map[string]*fakeUpstream{"alpha": fake})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}}}`
	call := func(id int, extra string) json.RawMessage {
		r := th.send(http.MethodPost, "/mcp", rpc(id, "tools/call", `{"name":"alpha__ask",`+meta+extra+`}`), modernHeaders("tools/call", "alpha__ask")...)
		return r.msg(t).Result
	}
	res := call(1, "")
	state1, _ := jsonrpc.StringMember(res, "requestState")
	res = call(2, `,"requestState":"`+state1+`","inputResponses":{"wrong-key":{}}`)
	state2, _ := jsonrpc.StringMember(res, "requestState")
	if !jsonrpc.InputRequired(res) || state2 == "" || state2 == state1 || !strings.Contains(string(res), "roots/list") {
		t.Fatalf("a retry answering nothing: %s", res)
	}
	res = call(3, `,"requestState":"`+state2+`","inputResponses":{"roots-1":{"roots":[{"uri":"file:///r"}]}}`)
	if !strings.Contains(string(res), "file:///r") {
		t.Errorf("the full retry: %s", res)
	}
}

// TestModernForeignState: a requestState minted by another mcphub (one
// that serves this hub, say) is the upstream's own and reaches it.
func TestModernForeignState(t *testing.T) {
	th := startHub(t, twoServers, map[string]*fakeUpstream{"alpha": newFake("alpha").setList("tools/list", toolItems("a"))})
	r := th.send(http.MethodPost, "/mcp", modernBody(1, "tools/call", `{"name":"alpha__a","requestState":"mcphub-mrtr:other:abc"}`), modernHeaders("tools/call", "alpha__a")...)
	if r.status != 200 || r.msg(t).Error != nil {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if state, _ := jsonrpc.StringMember(th.fakes["alpha"].nextCall(t).Params, "requestState"); state != "mcphub-mrtr:other:abc" {
		t.Errorf("the upstream got requestState %q", state)
	}
}

// TestModernClientLeaves: a client that closes its stream cancels the call
// upstream, and what the upstream sends after is dropped, not written.
func TestModernClientLeaves(t *testing.T) {
	done := make(chan error, 1)
	fake := newFake("alpha").setList("tools/list", toolItems("slow")).setHandler(func(ctx context.Context, c *fakeCall) (json.RawMessage, error) {
		for i := 1; ; i++ {
			c.Peer.Notify(jsonrpc.NewNotification("notifications/progress", fmt.Appendf(nil, `{"progressToken":"p","progress":%d}`, i)))
			select {
			case <-ctx.Done():
				done <- ctx.Err()
				return nil, ctx.Err()
			case <-time.After(time.Millisecond):
			}
		}
	})
	th := startHub(t, twoServers, map[string]*fakeUpstream{"alpha": fake})
	s := th.open(http.MethodPost, "/mcp", rpc(1, "tools/call", `{"name":"alpha__slow","_meta":`+modernMeta(`"progressToken":"p"`)+`}`), modernHeaders("tools/call", "alpha__slow")...)
	if m, _ := s.nextMsg(); m.Method != "notifications/progress" {
		t.Fatalf("first event %s", m.Method)
	}
	s.stop()
	select {
	case err := <-done:
		if err == nil {
			t.Error("the call ended without a cancellation")
		}
	case <-time.After(waitFor):
		t.Fatal("the upstream call was not cancelled when the client left")
	}
}

// TestParkedCap: past the limit of calls waiting for input, the one
// waiting longest is cancelled; a call that ends while parked is dropped.
func TestParkedCap(t *testing.T) {
	var p parkedCalls
	a := newMRTRCall(context.Background(), "", "tools/call", "x", clientCaps{})
	b := newMRTRCall(context.Background(), "", "tools/call", "y", clientCaps{})
	sa := p.park(a, 1)
	sb := p.park(b, 1)
	if a.ctx.Err() == nil || p.take(sa, "") != nil {
		t.Error("the older call was kept past the limit")
	}
	p.forget(b)
	if p.take(sb, "") != nil {
		t.Error("a forgotten call could still be taken")
	}
	if !p.ours(sb) || p.ours("mcphub-mrtr:other:x") {
		t.Error("ours misjudges requestStates")
	}
	// A call is its caller's: another caller's retry neither takes it nor
	// ends it.
	c := newMRTRCall(context.Background(), "", "tools/call", "z", clientCaps{})
	c.principal = "key:owner"
	sc := p.park(c, 0)
	if p.owns(sc, "key:other") || p.take(sc, "key:other") != nil || c.ctx.Err() != nil || !p.owns(sc, "key:owner") {
		t.Error("another caller took or ended a parked call")
	}
	if p.take(sc, "key:owner") != c {
		t.Error("its caller could not take its parked call")
	}
}

// TestPreflightParamHeaders: a preflight may ask for Mcp-Param-* headers.
func TestPreflightParamHeaders(t *testing.T) {
	th := startHub(t, twoServers, nil)
	r := th.send(http.MethodOptions, "/mcp", "", "Origin", "http://127.0.0.1:5173", "Access-Control-Request-Headers", "mcp-method, mcp-param-region, x-other")
	allow := r.header.Get("Access-Control-Allow-Headers")
	if !strings.Contains(allow, "Mcp-Method") || !strings.Contains(allow, "mcp-param-region") || strings.Contains(allow, "x-other") {
		t.Errorf("Access-Control-Allow-Headers = %q", allow)
	}
}

// TestModernLogLevel: a stateless request's logLevel is asked of the
// upstreams while it runs (the session era has one level per connection),
// and the default is asked again when it ends.
func TestModernLogLevel(t *testing.T) {
	release := make(chan struct{})
	fake := newFake("alpha").setList("tools/list", toolItems("a")).setHandler(func(ctx context.Context, c *fakeCall) (json.RawMessage, error) {
		<-release
		return json.RawMessage(`{"content":[]}`), nil
	})
	th := startHub(t, twoServers, map[string]*fakeUpstream{"alpha": fake})
	levels := func() string {
		fake.mu.Lock()
		defer fake.mu.Unlock()
		return strings.Join(fake.levels, ",")
	}
	got := make(chan reply, 1)
	go func() {
		got <- th.send(http.MethodPost, "/mcp", rpc(1, "tools/call", `{"name":"alpha__a","_meta":`+modernMeta(`"io.modelcontextprotocol/logLevel":"debug"`)+`}`), modernHeaders("tools/call", "alpha__a")...)
	}()
	eventually(t, "debug asked of the upstream", func() bool { return strings.HasSuffix(levels(), "debug") })
	close(release)
	if r := <-got; r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	eventually(t, "the default asked again", func() bool { return strings.HasSuffix(levels(), "debug,info") })
}
