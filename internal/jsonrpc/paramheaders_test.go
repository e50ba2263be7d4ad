package jsonrpc

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcphub/mcphub/internal/httphdr"
)

func tool(props string) json.RawMessage {
	return json.RawMessage(`{"name":"t","inputSchema":{"type":"object","properties":{` + props + `}}}`)
}

func TestParamHeaders(t *testing.T) {
	got, err := ParamHeaders(tool(`"region":{"type":"string","x-mcp-header":"Region"},` +
		`"n":{"type":"integer","x-mcp-header":"Priority"},"plain":{"type":"string"},` +
		`"opts":{"type":"object","properties":{"f":{"type":"boolean","x-mcp-header":"Flag"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprint(got); s != "[{[region] Region} {[n] Priority} {[opts f] Flag}]" {
		t.Errorf("ParamHeaders = %s", s)
	}
	for _, props := range []string{
		`"a":{"type":"string"}`,
		// Keys are matched exactly: these are no annotations.
		`"a":{"type":"number","X-MCP-Header":"A"}`,
		`"a":{"Properties":{"b":{"type":"number","x-mcp-header":"B"}}}`,
	} {
		if hs, err := ParamHeaders(tool(props)); hs != nil || err != nil {
			t.Errorf("ParamHeaders(%s) = %v, %v; want no annotations", props, hs, err)
		}
	}
	// An escaped key is the same key.
	if hs, err := ParamHeaders(tool(`"r":{"type":"string","x-mcp-head\u0065r":"R"}`)); err != nil || len(hs) != 1 || hs[0].Header != "R" {
		t.Errorf("an escaped key: %v, %v", hs, err)
	}
	// A property schema that is true or false reads as one without
	// annotations; the others are still read.
	if hs, err := ParamHeaders(tool(`"any":true,"r":{"type":"string","x-mcp-header":"R"}`)); err != nil || len(hs) != 1 || hs[0].Header != "R" {
		t.Errorf("beside a boolean schema: %v, %v", hs, err)
	}

	// The invalid annotations of the conformance suite's
	// http-invalid-tool-headers, and the property each error names.
	for props, want := range map[string]string{
		`"value":{"type":"string","x-mcp-header":""}`:                                                                            "property value: ",
		`"data":{"type":"object","x-mcp-header":"Data"}`:                                                                         "property data: ",
		`"items":{"type":"array","items":{"type":"string"},"x-mcp-header":"Items"}`:                                              "property items: ",
		`"nil":{"type":"null","x-mcp-header":"Nil"}`:                                                                             "property nil: ",
		`"score":{"type":"number","x-mcp-header":"Score"}`:                                                                       "property score: ",
		`"untyped":{"x-mcp-header":"Untyped"}`:                                                                                   "property untyped: ",
		`"field1":{"type":"string","x-mcp-header":"Region"},"field2":{"type":"string","x-mcp-header":"Region"}`:                  "property field2: ",
		`"field1":{"type":"string","x-mcp-header":"MyField"},"field2":{"type":"string","x-mcp-header":"myfield"}`:                "property field2: ",
		`"value":{"type":"string","x-mcp-header":"My Region"}`:                                                                   "property value: ",
		`"value":{"type":"string","x-mcp-header":"Region:Primary"}`:                                                              "property value: ",
		`"value":{"type":"string","x-mcp-header":"Région"}`:                                                                      "property value: ",
		`"value":{"type":"string","x-mcp-header":"Region\t1"}`:                                                                   "property value: ",
		`"value":{"type":"string","x-mcp-header":7}`:                                                                             "property value: ",
		`"o":{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"A"}}},"p":{"type":"string","x-mcp-header":"a"}`: "property p: ",
	} {
		hs, err := ParamHeaders(tool(props))
		if err == nil || !strings.HasPrefix(err.Error(), want) || hs != nil {
			t.Errorf("ParamHeaders(%s) = %v, %v; want an error starting %q", props, hs, err, want)
		}
	}
}

func TestParamHeaderArg(t *testing.T) {
	args := json.RawMessage(`{"region":"eu","opts":{"f":true},"s":"x"}`)
	for _, tt := range []struct {
		path []string
		want string
		ok   bool
	}{
		{[]string{"region"}, `"eu"`, true},
		{[]string{"opts", "f"}, `true`, true},
		{[]string{"opts", "g"}, ``, false},
		{[]string{"s", "x"}, ``, false},
		{nil, ``, false},
	} {
		v, ok := ParamHeader{Path: tt.path}.Arg(args)
		if string(v) != tt.want || ok != tt.ok {
			t.Errorf("Arg(%v) = %s, %v; want %s, %v", tt.path, v, ok, tt.want, tt.ok)
		}
	}
}

// FuzzParamHeaders: whatever a server lists, what ParamHeaders accepts has
// names a header can carry, unique in any case, each with a path.
func FuzzParamHeaders(f *testing.F) {
	f.Add([]byte(tool(`"region":{"type":"string","x-mcp-header":"Region"}`)))
	f.Add([]byte(tool(`"o":{"type":"object","properties":{"r":{"type":"integer","x-mcp-header":"R"}}}`)))
	f.Add([]byte(tool(`"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"string","x-mcp-header":"a"}`)))
	f.Add([]byte(`{"inputSchema":{"properties":{"x-mcp-header":{}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return // tools come from a decoded tools/list result
		}
		hs, err := ParamHeaders(data)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, h := range hs {
			if !httphdr.ValidName(h.Header) || len(h.Path) == 0 || seen[strings.ToLower(h.Header)] {
				t.Fatalf("ParamHeaders(%q) accepted %v", data, hs)
			}
			seen[strings.ToLower(h.Header)] = true
		}
	})
}
