package jsonrpc

import (
	"testing"
	"unicode/utf8"
)

func TestStripHopMeta(t *testing.T) {
	for in, want := range map[string]string{
		`{"name":"a"}`: `{"name":"a"}`,
		`{"name":"a","_meta":{"progressToken":1}}`:                                                          `{"name":"a","_meta":{"progressToken":1}}`,
		`{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`:                     `{"name":"a"}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":"t"},"name":"a"}`: `{"_meta":{"progressToken":"t"},"name":"a"}`,
		`{"_meta":{"x":1,"io.modelcontextprotocol/logLevel":"info"},"a":2}`:                                 `{"_meta":{"x":1},"a":2}`,
		// What the request says of its client stays for the server to read.
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c"}}}`: `{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c"}}}`,
		// Other keys of the protocol's namespace (the tasks extension's) stay.
		`{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`: `{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t"}}}`,
	} {
		if got := string(StripHopMeta([]byte(in))); got != want {
			t.Errorf("StripHopMeta(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestSetMeta(t *testing.T) {
	for in, want := range map[string]string{
		``:                        `{"_meta":{"k":1}}`,
		`{"a":1}`:                 `{"a":1,"_meta":{"k":1}}`,
		`{"_meta":{"x":2},"a":1}`: `{"_meta":{"x":2,"k":1},"a":1}`,
		`{"_meta":{"k":0}}`:       `{"_meta":{"k":1}}`,
	} {
		got, err := SetMeta([]byte(in), "k", []byte(`1`))
		if err != nil || string(got) != want {
			t.Errorf("SetMeta(%s) = %s, %v, want %s", in, got, err, want)
		}
	}
}

func TestHeaderValue(t *testing.T) {
	for plain, wire := range map[string]string{
		"get_weather":     "get_weather",
		"file:///a b.txt": "file:///a b.txt",
		"  spaced  ":      "=?base64?ICBzcGFjZWQgIA==?=",
		"日本語":             "=?base64?5pel5pys6Kqe?=",
		"=?base64?abc?=":  "=?base64?PT9iYXNlNjQ/YWJjPz0=?=",
		"line\nbreak":     "=?base64?bGluZQpicmVhaw==?=",
		"":                "",
	} {
		if got := EncodeHeaderValue(plain); got != wire {
			t.Errorf("EncodeHeaderValue(%q) = %q, want %q", plain, got, wire)
		}
		if got, err := DecodeHeaderValue(wire); err != nil || got != plain {
			t.Errorf("DecodeHeaderValue(%q) = %q, %v, want %q", wire, got, err, plain)
		}
	}
	// Without both markers a value is taken as it is.
	for _, v := range []string{"SGVsbG8=", "=?base64?SGVsbG8=", "SGVsbG8=?="} {
		if got, err := DecodeHeaderValue(v); err != nil || got != v {
			t.Errorf("DecodeHeaderValue(%q) = %q, %v, want it unchanged", v, got, err)
		}
	}
	for _, v := range []string{"=?base64?SGVsbG8?=", "=?base64?SGVs!!!bG8=?=", "=?base64?/w==?="} {
		if _, err := DecodeHeaderValue(v); err == nil {
			t.Errorf("DecodeHeaderValue(%q) accepted a broken value", v)
		}
	}
}

func FuzzHeaderValue(f *testing.F) {
	for _, s := range []string{"", "a", " a ", "=?base64?YQ==?=", "=?base64??=", "日本", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, err := DecodeHeaderValue(s); err == nil && !utf8.ValidString(got) && got != s {
			t.Fatalf("DecodeHeaderValue(%q) = %q, not UTF-8", s, got)
		}
		if !utf8.ValidString(s) {
			return
		}
		wire := EncodeHeaderValue(s)
		for i := 0; i < len(wire); i++ {
			if c := wire[i]; c < 0x20 || c > 0x7e {
				t.Fatalf("EncodeHeaderValue(%q) = %q, not visible ASCII", s, wire)
			}
		}
		if got, err := DecodeHeaderValue(wire); err != nil || got != s {
			t.Fatalf("round trip of %q: %q, %v", s, got, err)
		}
	})
}
