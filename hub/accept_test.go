package hub

import (
	"testing"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// TestAcceptMatrix is seed 003's compatibility matrix: what each Accept
// header allows, and whether a tools/call, a cheap tools/list, and a request
// carrying _meta.progressToken are answered as SSE. post_sse = false forces
// JSON in every row.
func TestAcceptMatrix(t *testing.T) {
	call := &jsonrpc.Message{ID: jsonrpc.IntID(1), Method: "tools/call", Params: []byte(`{"name":"a__b","arguments":{}}`)}
	list := &jsonrpc.Message{ID: jsonrpc.IntID(2), Method: "tools/list"}
	progress := &jsonrpc.Message{ID: jsonrpc.IntID(3), Method: "prompts/get",
		Params: []byte(`{"name":"p","_meta":{"progressToken":"tok-1"}}`)}

	tests := []struct {
		name, header string
		mode         acceptMode
		prefersSSE   bool
		// SSE answers for tools/call, tools/list and the progress request
		// when post_sse is on.
		call, list, progress bool
	}{
		{"compliant", "application/json, text/event-stream", acceptBoth, false, true, false, true},
		{"compliant no space", "application/json,text/event-stream", acceptBoth, false, true, false, true},
		{"sse ranked first", "text/event-stream, application/json", acceptBoth, true, true, true, true},
		{"q prefers sse", "application/json;q=0.5, text/event-stream", acceptBoth, true, true, true, true},
		{"q prefers json", "text/event-stream;q=0.5, application/json;q=0.8", acceptBoth, false, true, false, true},
		{"equal q keeps order", "application/json;q=0.9, text/event-stream;q=0.9", acceptBoth, false, true, false, true},
		{"case and spaces", " Application/JSON , TEXT/Event-Stream ", acceptBoth, false, true, false, true},
		{"application/* counts as json", "application/*, text/event-stream", acceptBoth, false, true, false, true},
		{"sse refused with q=0 beside json", "application/json, text/event-stream;q=0", acceptJSONOnly, false, false, false, false},
		{"sse refused with q=0 alone", "text/event-stream;q=0", acceptInvalid, false, false, false, false},
		{"json refused with q=0", "application/json;q=0, text/event-stream", acceptSSEOnly, false, true, true, true},
		{"json only (MCP Inspector)", "application/json", acceptJSONOnly, false, false, false, false},
		{"wildcard is json only", "*/*", acceptJSONOnly, false, false, false, false},
		{"sse only", "text/event-stream", acceptSSEOnly, false, true, true, true},
		{"empty", "", acceptInvalid, false, false, false, false},
		{"garbage", "garbage;;;=", acceptInvalid, false, false, false, false},
		{"unrelated type", "text/html", acceptInvalid, false, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Asked twice in a row: parseAccept keeps the last header's
			// answer, and the table's headers follow one another.
			a := parseAccept(tt.header)
			for range 2 {
				if a.mode != tt.mode || a.prefersSSE != tt.prefersSSE {
					t.Fatalf("parseAccept(%q) = {%s, prefersSSE=%v}, want {%s, prefersSSE=%v}",
						tt.header, a.mode, a.prefersSSE, tt.mode, tt.prefersSSE)
				}
				a = parseAccept(tt.header)
			}
			for _, c := range []struct {
				what string
				m    *jsonrpc.Message
				want bool
			}{{"tools/call", call, tt.call}, {"tools/list", list, tt.list}, {"progressToken request", progress, tt.progress}} {
				if got := useSSE(a, true, c.m); got != c.want {
					t.Errorf("post_sse=true, %s: useSSE = %v, want %v", c.what, got, c.want)
				}
				if useSSE(a, false, c.m) {
					t.Errorf("post_sse=false, %s: useSSE = true, want JSON", c.what)
				}
			}
		})
	}
}

// TestMayStream pins which requests count as possibly streaming.
func TestMayStream(t *testing.T) {
	tests := []struct {
		method, params string
		want           bool
	}{
		{"tools/call", `{"name":"x"}`, true},
		{"tools/list", ``, false},
		{"tools/list", `{"_meta":{}}`, false},
		{"resources/read", `{"uri":"a://b","_meta":{"progressToken":7}}`, true},
		{"prompts/get", `{"progressToken":7}`, false}, // only _meta.progressToken counts
	}
	for _, tt := range tests {
		m := &jsonrpc.Message{ID: jsonrpc.IntID(1), Method: tt.method}
		if tt.params != "" {
			m.Params = []byte(tt.params)
		}
		if got := mayStream(m); got != tt.want {
			t.Errorf("mayStream(%s %s) = %v, want %v", tt.method, tt.params, got, tt.want)
		}
	}
}
