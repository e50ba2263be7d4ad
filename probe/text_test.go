package probe

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestDescribeCapabilities: each capability with its true flags, sorted;
// "none" when there are none.
func TestDescribeCapabilities(t *testing.T) {
	for raw, want := range map[string]string{
		`{"tools":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{}}`: "logging, resources (listChanged, subscribe), tools (listChanged)",
		`{"prompts":{"listChanged":false}}`: "prompts",
		`{}`:                                "none",
		``:                                  "none",
	} {
		if got := describeCapabilities(json.RawMessage(raw)); got != want {
			t.Errorf("%s: %q, want %q", raw, got, want)
		}
	}
}

// TestCallWriteText: text content as it is, other content by type, an
// error result named so, and a result without content shown raw.
func TestCallWriteText(t *testing.T) {
	for _, tt := range []struct{ result, want string }{
		{`{"content":[{"type":"text","text":"3"},{"type":"image","mimeType":"image/png","data":"AA=="}]}`, "\nresult of t:\n3\n[image image/png]\n"},
		{`{"content":[{"type":"text","text":"no"}],"isError":true}`, "\nerror result of t:\nno\n"},
		{`{"structuredContent":{"a":1}}`, "\nresult of t:\n{\"structuredContent\":{\"a\":1}}\n"},
	} {
		var b bytes.Buffer
		Call{Tool: "t", Result: json.RawMessage(tt.result)}.WriteText(&b)
		if b.String() != tt.want {
			t.Errorf("%s: %q, want %q", tt.result, b.String(), tt.want)
		}
	}
}

// TestReportWriteText: the header table, then every kind of item with its
// count, one line each, descriptions on one line.
func TestReportWriteText(t *testing.T) {
	r := &Report{ProtocolVersion: "2026-07-28", Transport: "streamable-http", Capabilities: json.RawMessage(`{"tools":{}}`),
		Tools:             []json.RawMessage{json.RawMessage(`{"name":"a","description":"line one\nline two"}`)},
		ResourceTemplates: []json.RawMessage{json.RawMessage(`{"uriTemplate":"x://{id}","name":"x"}`)}}
	r.Server.Name, r.Server.Version = "srv", "1.0"
	var b bytes.Buffer
	r.WriteText(&b)
	want := "server        srv 1.0\nprotocol      2026-07-28 over streamable-http\ncapabilities  tools\n" +
		"\ntools (1)\n  a  line one line two\n\nprompts (0)\n\nresources (0)\n\nresource templates (1)\n  x://{id}  x\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
