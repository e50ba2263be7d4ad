package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// TestEverythingServerModern: against the Go SDK's everything-server, the
// connection finds the stateless era (asked over HTTP, pinned over stdio),
// and works in it: lists and calls carry the era's _meta, progress arrives,
// an input_required result comes back as it is, ping and
// logging/setLevel are answered without the removed methods, and a list
// change arrives on the listen stream.
func TestEverythingServerModern(t *testing.T) {
	bin := everythingServer(t)
	for _, mode := range []string{"http", "stdio"} {
		t.Run(mode, func(t *testing.T) {
			cfg := Config{Name: "everything"}
			if mode == "stdio" {
				cfg.Command, cfg.ProtocolVersion = bin, jsonrpc.Version20260728
			} else {
				cfg.URL = startEverythingHTTP(t, bin, true)
			}
			rec := newRecorder()
			c, logs := startHTTP(t, cfg, rec)
			if !c.Modern() || c.Initialize().ProtocolVersion != jsonrpc.Version20260728 || c.Initialize().ServerInfo.Name != "mcp-conformance-test-server" {
				t.Fatalf("modern %v, initialize %+v\nlogs:\n%s", c.Modern(), c.Initialize(), logs)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := c.Call(ctx, "ping", nil); err != nil {
				t.Errorf("ping: %v", err)
			}
			if _, err := c.Call(ctx, "logging/setLevel", json.RawMessage(`{"level":"debug"}`)); err != nil {
				t.Errorf("logging/setLevel: %v", err)
			}
			raw, err := c.Call(ctx, "tools/list", nil)
			if err != nil || !strings.Contains(string(raw), "test_input_required_result_elicitation") {
				t.Fatalf("tools/list: %v %.200s", err, raw)
			}
			raw, err = c.Call(ctx, "tools/call", json.RawMessage(`{"name":"test_tool_with_progress","arguments":{},"_meta":{"progressToken":"p"}}`))
			if err != nil || !strings.Contains(string(raw), `"resultType":"complete"`) {
				t.Errorf("test_tool_with_progress: %v %s", err, raw)
			}
			if n := len(rec.notifications("notifications/progress")); n < 3 {
				t.Errorf("%d progress notifications, want 3", n)
			}
			raw, err = c.Call(ctx, "tools/call", json.RawMessage(`{"name":"test_input_required_result_elicitation","arguments":{}}`))
			if rt, _ := jsonrpc.StringMember(raw, "resultType"); err != nil || rt != "input_required" {
				t.Errorf("an input_required result: %v %s", err, raw)
			}
			raw, err = c.Call(ctx, "tools/call", json.RawMessage(`{"name":"test_input_required_result_elicitation","arguments":{},
				"inputResponses":{"user_name":{"action":"accept","content":{"name":"Ada"}}}}`))
			if err != nil || !strings.Contains(string(raw), "Hello, Ada!") {
				t.Errorf("the retry with inputResponses: %v %s", err, raw)
			}
			// The listen stream opens in the background; a change made
			// before it is open is not announced, so trigger until one is.
			deadline := time.Now().Add(10 * time.Second)
			for len(rec.notifications("notifications/tools/list_changed")) == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("no tools/list_changed on the listen stream\nlogs:\n%s", logs)
				}
				if _, err := c.Call(ctx, "tools/call", json.RawMessage(`{"name":"test_trigger_tool_change","arguments":{}}`)); err != nil {
					t.Fatalf("test_trigger_tool_change: %v", err)
				}
				select {
				case <-rec.notify:
				case <-time.After(200 * time.Millisecond):
				}
			}
			if n := len(rec.notifications("notifications/subscriptions/acknowledged")); n != 0 {
				t.Errorf("the listen stream's acknowledgement reached the handler %d times", n)
			}
		})
	}
}

// TestModernWire: the stateless era's requests carry the version in the
// header and _meta, Mcp-Method and Mcp-Name (base64 where needed), the
// client's own capabilities unless the request names others, and
// no session; there is no GET stream and no DELETE.
func TestModernWire(t *testing.T) {
	const badTool = `,{"name":"bad","inputSchema":{"type":"object","properties":{"score":{"type":"number","x-mcp-header":"Score"}}}}`
	listed := `{"resultType":"complete","tools":[{"name":"w","inputSchema":{"type":"object","properties":{
				"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"Priority"},
				"opts":{"type":"object","properties":{"f":{"type":"boolean","x-mcp-header":"Flag"}}},"x":{"type":"number"},
				"gone":{"type":"string","x-mcp-header":"Gone"},"plain":{"type":"string"}}}}` + badTool + `,{"name":"ok"}],"ttlMs":0,"cacheScope":"private"}`
	var mu sync.Mutex
	var seen []*http.Request
	var bodies []*jsonrpc.Message
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m *jsonrpc.Message
		if r.Method == http.MethodPost {
			var buf strings.Builder
			b := make([]byte, 4096)
			for {
				n, err := r.Body.Read(b)
				buf.Write(b[:n])
				if err != nil {
					break
				}
			}
			m, _ = jsonrpc.Decode([]byte(buf.String()))
		}
		mu.Lock()
		seen, bodies = append(seen, r.Clone(context.Background())), append(bodies, m)
		mu.Unlock()
		if m == nil {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var res string
		switch m.Method {
		case "server/discover":
			res = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"wire","version":"9"}},"ttlMs":0,"cacheScope":"private"}`
		case "subscriptions/listen":
			<-r.Context().Done()
			return
		case "tools/list":
			res = listed
		case "tools/call":
			if name, _ := jsonrpc.StringMember(m.Params, "name"); name == "ask" {
				if _, ok := jsonrpc.Member(m.Params, "inputResponses"); !ok {
					res = `{"resultType":"input_required","inputRequests":{"k":{"method":"roots/list"}},"requestState":"s1"}`
					break
				}
				state, _ := jsonrpc.Member(m.Params, "requestState")
				resp, _ := jsonrpc.Member(m.Params, "inputResponses")
				res = `{"resultType":"complete","content":[{"type":"text","text":` + string(jsonrpc.Quote(string(state)+" "+string(resp))) + `}]}`
				break
			}
			res = `{"resultType":"complete","content":[]}`
		default:
			res = `{"resultType":"complete","content":[]}`
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(jsonrpc.NewResponse(m.ID, json.RawMessage(res)).Encode())
	}))
	defer srv.Close()
	rec := newRecorder()
	c, logs := startHTTP(t, Config{Name: "wire", URL: srv.URL, Capabilities: json.RawMessage(`{"sampling":{}}`)}, rec)
	if !c.Modern() || c.Initialize().ServerInfo.Name != "wire" {
		t.Fatalf("modern %v, %+v\n%s", c.Modern(), c.Initialize(), logs)
	}
	// The capabilities of the client the hub relays for travel as given.
	if _, err := c.Call(context.Background(), "tools/call", json.RawMessage(`{"name":"日本","arguments":{},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(context.Background(), "resources/read", json.RawMessage(`{"uri":"file:///a"}`)); err != nil {
		t.Fatal(err)
	}
	// A tool whose x-mcp-header cannot be honoured is left out of the
	// list, with a warning; the others keep their bytes.
	list, err := c.Call(context.Background(), "tools/list", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(listed, badTool, "", 1); string(list) != want {
		t.Errorf("tools/list = %s\nwant %s", list, want)
	}
	if !strings.Contains(logs.String(), "tool=bad") || !strings.Contains(logs.String(), "property score") {
		t.Errorf("no warning names the tool left out and why:\n%s", logs)
	}
	if _, err := c.Call(context.Background(), "tools/call", json.RawMessage(`{"name":"w","arguments":{"region":" eu ","n":4.2e1,"opts":{"f":false},"x":1.5,"gone":null,"plain":"p"}}`)); err != nil {
		t.Fatal(err)
	}
	// An input_required result is answered through the handler (roots/list
	// as the recorder answers it) and the call made again with the state.
	rec.answer = func(m *jsonrpc.Message) (json.RawMessage, error) { return json.RawMessage(`{"roots":[]}`), nil }
	res, err := c.CallAnswering(context.Background(), "tools/call", json.RawMessage(`{"name":"ask"}`))
	if err != nil || !strings.Contains(string(res), `\"s1\" {\"k\":{\"roots\":[]}}`) {
		t.Errorf("CallAnswering: %v %s", err, res)
	}
	c.Close()
	mu.Lock()
	defer mu.Unlock()
	for i, r := range seen {
		m := bodies[i]
		if m == nil {
			t.Errorf("a %s request; a stateless client only POSTs", r.Method)
			continue
		}
		if r.Header.Get("Mcp-Session-Id") != "" || r.Header.Get("MCP-Protocol-Version") != "2026-07-28" || r.Header.Get("Mcp-Method") != m.Method {
			t.Errorf("%s: headers %v", m.Method, r.Header)
		}
		if v, _ := jsonrpc.MetaMember(m.Params, jsonrpc.MetaProtocolVersion); string(v) != `"2026-07-28"` {
			t.Errorf("%s: _meta protocol version %s", m.Method, v)
		}
		caps, _ := jsonrpc.MetaMember(m.Params, jsonrpc.MetaClientCapabilities)
		switch m.Method {
		case "tools/call":
			if name, _ := jsonrpc.StringMember(m.Params, "name"); name != "日本" {
				break
			}
			if r.Header.Get("Mcp-Name") != "=?base64?5pel5pys?=" || string(caps) != `{"elicitation":{}}` {
				t.Errorf("tools/call: Mcp-Name %q, capabilities %s", r.Header.Get("Mcp-Name"), caps)
			}
		case "resources/read":
			if r.Header.Get("Mcp-Name") != "file:///a" || string(caps) != `{"sampling":{}}` {
				t.Errorf("resources/read: Mcp-Name %q, capabilities %s", r.Header.Get("Mcp-Name"), caps)
			}
		}
		if name, _ := jsonrpc.StringMember(m.Params, "name"); name == "w" {
			want := map[string]string{"Mcp-Param-Region": "=?base64?IGV1IA==?=", "Mcp-Param-Priority": "42", "Mcp-Param-Flag": "false", "Mcp-Param-Gone": ""}
			for k, v := range want {
				if got := r.Header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		}
	}
}

// TestResumedSessionRenewsWithoutProbe: a connection that resumed a
// stored session knows its era: when the session expires it initializes
// a new one at once, with no server/discover (which would go out on the
// dead session and wait for itself).
func TestResumedSessionRenewsWithoutProbe(t *testing.T) {
	f := newFakeStreamable(t)
	first, _ := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP}, nil)
	st := first.State()
	first.cancel() // gone without a DELETE, as a hub killed -9
	if st.SessionID == "" {
		t.Fatal("no session to resume")
	}
	f.expire = map[string]int{st.SessionID: 0}
	c, logs := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP, Resume: &st}, nil)
	before := len(f.requests(func(s seenReq) bool { return s.rpc() == "server/discover" }))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if res, err := callTool(ctx, c, "echo", `{}`); err != nil || !strings.Contains(string(res), "echo") {
		t.Fatalf("a call on the expired session: %s %v\nlogs:\n%s", res, err, logs)
	}
	if n := len(f.requests(func(s seenReq) bool { return s.rpc() == "server/discover" })); n != before {
		t.Errorf("the renewal asked server/discover %d times", n-before)
	}
	if c.Modern() {
		t.Error("the renewed connection went stateless")
	}
}
