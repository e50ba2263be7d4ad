package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDecodeKinds(t *testing.T) {
	tests := []struct {
		in     string
		kind   Kind
		method string
		id     string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, KindRequest, "tools/list", `1`},
		{`{"jsonrpc":"2.0","id":"1","method":"ping","params":{}}`, KindRequest, "ping", `"1"`},
		{`{"jsonrpc":"2.0","id":1.0,"method":"ping"}`, KindRequest, "ping", `1.0`},
		{`{"jsonrpc":"2.0","id":-7e2,"method":"ping"}`, KindRequest, "ping", `-7e2`},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, KindNotification, "notifications/initialized", ``},
		{`{"jsonrpc":"2.0","method":"x","params":null}`, KindNotification, "x", ``},
		{`{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}`, KindResponse, "", `3`},
		{`{"jsonrpc":"2.0","id":3,"result":null}`, KindResponse, "", `3`},
		{`{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"nope"}}`, KindErrorResponse, "", `"a"`},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}`, KindErrorResponse, "", `null`},
		{"  \n{\"method\" : \"m\\u0061\", \"jsonrpc\":\"2.0\" , \"id\" : \"x\\\"y\" }\t", KindRequest, "ma", `"x\"y"`},
		{`{"jsonrpc":"2.0","id":1,"method":"a","extra":{"nested":[1,{"id":2}]}}`, KindRequest, "a", `1`},
		{`{"jsonrpc":"2.0","id":1,"method":"a","params":[1,2]}`, KindRequest, "a", `1`},
	}
	for _, tt := range tests {
		m, err := Decode([]byte(tt.in))
		if err != nil {
			t.Errorf("Decode(%s): %v", tt.in, err)
			continue
		}
		if m.Kind() != tt.kind || m.Method != tt.method || string(m.ID) != tt.id {
			t.Errorf("Decode(%s) = kind %v method %q id %s; want %v %q %s", tt.in, m.Kind(), m.Method, m.ID, tt.kind, tt.method, tt.id)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	tests := []struct {
		in       string
		code     int
		sentinel error
		why      string
		id       string // the id the error can be answered under, "" for none
	}{
		{`{"jsonrpc":"2.0","id":1,"method":`, CodeParseError, ErrParse, "not valid JSON", ""},
		{``, CodeParseError, ErrParse, "not valid JSON", ""},
		{"\xff", CodeParseError, ErrParse, "not valid JSON", ""},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\xffb\"}", CodeParseError, ErrParse, "not valid UTF-8", ""},
		{`[{"jsonrpc":"2.0","id":1,"method":"a"}]`, CodeInvalidRequest, ErrBatch, "batches", ""},
		{`"hello"`, CodeInvalidRequest, ErrInvalidRequest, "must be an object", ""},
		{`{"id":1,"method":"a"}`, CodeInvalidRequest, ErrInvalidRequest, `"2.0"`, "1"},
		{`{"jsonrpc":"1.0","id":1,"method":"a"}`, CodeInvalidRequest, ErrInvalidRequest, `"2.0"`, "1"},
		{`{"jsonrpc":2.0,"id":1,"method":"a"}`, CodeInvalidRequest, ErrInvalidRequest, `"2.0"`, "1"},
		{`{"JSONRPC":"2.0","id":1,"method":"a"}`, CodeInvalidRequest, ErrInvalidRequest, `"2.0"`, "1"},
		{`{"jsonrpc":"2.0","id":null,"method":"a"}`, CodeInvalidRequest, ErrInvalidRequest, "string or a number", ""},
		{`{"jsonrpc":"2.0","id":{},"method":"a"}`, CodeInvalidRequest, ErrInvalidRequest, "string or a number", ""},
		{`{"jsonrpc":"2.0","id":true,"method":"a"}`, CodeInvalidRequest, ErrInvalidRequest, "string or a number", ""},
		{`{"jsonrpc":"2.0","id":1,"method":""}`, CodeInvalidRequest, ErrInvalidRequest, "non-empty string", "1"},
		{`{"jsonrpc":"2.0","id":1,"method":5}`, CodeInvalidRequest, ErrInvalidRequest, "non-empty string", "1"},
		{`{"jsonrpc":"2.0","id":1,"Method":"a"}`, CodeInvalidRequest, ErrInvalidRequest, "needs a method", "1"},
		{`{"jsonrpc":"2.0","id":1,"method":"a","params":3}`, CodeInvalidRequest, ErrInvalidRequest, "params", "1"},
		{`{"jsonrpc":"2.0","id":1,"method":"a","result":{}}`, CodeInvalidRequest, ErrInvalidRequest, "must not carry result", "1"},
		{`{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`, CodeInvalidRequest, ErrInvalidRequest, "both result and error", "1"},
		{`{"jsonrpc":"2.0","id":1}`, CodeInvalidRequest, ErrInvalidRequest, "needs a method", "1"},
		{`{"jsonrpc":"2.0","result":{}}`, CodeInvalidRequest, ErrInvalidRequest, "must carry an id", ""},
		{`{"jsonrpc":"2.0","id":null,"result":{}}`, CodeInvalidRequest, ErrInvalidRequest, "null id", ""},
		{`{"jsonrpc":"2.0","id":1,"error":"boom"}`, CodeInvalidRequest, ErrInvalidRequest, "error must be an object", "1"},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"x"}}`, CodeInvalidRequest, ErrInvalidRequest, "error.code", "1"},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":1}}`, CodeInvalidRequest, ErrInvalidRequest, "error.message", "1"},
		{strings.Repeat("[", 20000) + strings.Repeat("]", 20000), CodeParseError, ErrParse, "not valid JSON", ""},
	}
	for _, tt := range tests {
		m, err := Decode([]byte(tt.in))
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Decode(%.60s) err = %v; want *Error", tt.in, err)
			continue
		}
		if e.Code != tt.code || !errors.Is(err, tt.sentinel) || !strings.Contains(e.Message, tt.why) {
			t.Errorf("Decode(%.60s) = %d %q; want %d %v containing %q", tt.in, e.Code, e.Message, tt.code, tt.sentinel, tt.why)
		}
		gotID := ""
		if m != nil {
			gotID = string(m.ID)
		}
		if gotID != tt.id {
			t.Errorf("Decode(%.60s) answerable id = %q; want %q", tt.in, gotID, tt.id)
		}
	}
}

func TestIDsRoundTripByteForByte(t *testing.T) {
	for _, id := range []string{`1`, `"1"`, `1.0`, `1e3`, `-0`, `"\u00e9"`, `"é"`, `12345678901234567890123`} {
		in := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"x","arguments":{"a":[1, 2]}}}`
		m, err := Decode([]byte(in))
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		out := m.Encode()
		if string(out) != in {
			t.Errorf("round trip:\n got %s\nwant %s", out, in)
		}
		again, err := Decode(out)
		if err != nil || !bytes.Equal(again.ID, []byte(id)) {
			t.Errorf("id %s came back as %s (%v)", id, again.ID, err)
		}
	}
	ids := map[string]bool{}
	for _, id := range []string{`1`, `"1"`, `1.0`} {
		m, _ := Decode([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"a"}`))
		ids[string(m.ID)] = true
	}
	if len(ids) != 3 {
		t.Errorf("1, \"1\" and 1.0 must stay distinct ids; got %v", ids)
	}
}

func TestEncodeIsValidJSONAndMatchesEncodingJSON(t *testing.T) {
	msgs := []*Message{
		NewRequest(IntID(42), "tools/call", json.RawMessage(`{"name":"echo"}`)),
		NewNotification("notifications/progress", json.RawMessage(`{"progressToken":"t","progress":1}`)),
		NewNotification("weird \"method\"\n\x01<>&\u2028\xff", nil),
		NewResponse(Quote("id-1"), nil),
		NewErrorResponse(nil, Errorf(CodeInvalidParams, "unknown tool %q", "x\ty")),
		NewErrorResponse(IntID(1), NewError(-32000, "boom").WithData(json.RawMessage(`{"why":"x"}`))),
	}
	for _, m := range msgs {
		b := m.Encode()
		if !json.Valid(b) {
			t.Fatalf("invalid JSON: %s", b)
		}
		var generic map[string]any
		if err := json.Unmarshal(b, &generic); err != nil {
			t.Fatal(err)
		}
		if generic["jsonrpc"] != "2.0" {
			t.Errorf("%s: jsonrpc member missing", b)
		}
		back, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(%s): %v", b, err)
		}
		if back.Kind() != m.Kind() {
			t.Errorf("%s: kind %v; want %v", b, back.Kind(), m.Kind())
		}
		if m.Method != "" && back.Method != strings.ToValidUTF8(m.Method, "\uFFFD") {
			t.Errorf("method %q came back as %q", m.Method, back.Method)
		}
		if m.Error != nil && (back.Error.Code != m.Error.Code || back.Error.Message != m.Error.Message || string(back.Error.Data) != string(m.Error.Data)) {
			t.Errorf("error %+v came back as %+v", m.Error, back.Error)
		}
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "quote\"back\\slash", "ctl\x00\x1f\x7f", "tab\tnl\nret\r", "ünï", "bad\xffutf8\xc3"} {
		var want string
		got := AppendString(nil, s)
		if err := json.Unmarshal(got, &want); err != nil {
			t.Fatalf("AppendString(%q) = %s: %v", s, got, err)
		}
		if want != strings.ToValidUTF8(s, "\uFFFD") {
			t.Errorf("AppendString(%q) decodes to %q", s, want)
		}
	}
}

func TestIsBatch(t *testing.T) {
	for in, want := range map[string]bool{"[]": true, " \n[1]": true, "{}": false, "": false, "  ": false, "x[": false} {
		if IsBatch([]byte(in)) != want {
			t.Errorf("IsBatch(%q) != %v", in, want)
		}
	}
}

func TestVersions(t *testing.T) {
	for i := 1; i < len(Versions); i++ {
		if Versions[i-1] >= Versions[i] {
			t.Fatalf("Versions out of order at %d", i)
		}
	}
	if NegotiateVersion("2025-06-18") != "2025-06-18" || NegotiateVersion("1999-01-01") != LatestSessionVersion {
		t.Error("NegotiateVersion must keep a supported version and answer the latest otherwise")
	}
	if EraOf("2024-11-05") != EraSession || EraOf("2026-07-28") != EraStateless || EraOf("x") != EraUnknown {
		t.Error("EraOf misclassifies")
	}
	if !AtLeast("2025-11-25", "2025-06-18") || AtLeast("2025-03-26", "2025-06-18") {
		t.Error("AtLeast")
	}
}

func TestIntID(t *testing.T) {
	n, ok := ParseIntID(IntID(-12))
	if !ok || n != -12 {
		t.Errorf("ParseIntID(IntID(-12)) = %d %v", n, ok)
	}
	if _, ok := ParseIntID(json.RawMessage(`"12"`)); ok {
		t.Error("a string id is not an integer id")
	}
}

// FuzzDecode checks that Decode never panics, that whatever it accepts
// re-encodes to JSON it accepts again with the same envelope, and that its
// verdict on validity agrees with encoding/json.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"x","result":{"a":[1,"]}"]}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"m","data":null}}`,
		`{"jsonrpc":"2.0","method":"n\u0000","params":{"\"k":"v"}}`,
		`[{"jsonrpc":"2.0"}]`, `{`, `"`, `{"a":{"b":{"c":[]}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || (e.Code != CodeParseError && e.Code != CodeInvalidRequest) {
				t.Fatalf("Decode error %v is not a JSON-RPC parse or invalid-request error", err)
			}
			if (e.Code == CodeParseError) == (json.Valid(data) && utf8.Valid(data)) {
				t.Fatalf("parse-error verdict %v disagrees with json.Valid and utf8.Valid", e.Code)
			}
			if m != nil && (m.ID == nil || !json.Valid(m.ID)) {
				t.Fatalf("answerable id %q is not valid JSON", m.ID)
			}
			return
		}
		out := m.Encode()
		if !json.Valid(out) {
			t.Fatalf("Encode produced invalid JSON %q from %q", out, data)
		}
		back, err := Decode(out)
		if err != nil {
			t.Fatalf("re-decode of %q: %v", out, err)
		}
		if back.Kind() != m.Kind() || back.Method != m.Method || !bytes.Equal(back.ID, m.ID) ||
			!bytes.Equal(back.Params, m.Params) || !bytes.Equal(back.Result, m.Result) {
			t.Fatalf("round trip changed the envelope: %q -> %q", data, out)
		}
	})
}

func BenchmarkDecodeToolCall(b *testing.B) {
	data := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"github__create_issue","arguments":{"title":"a bug","body":"` + strings.Repeat("x", 512) + `"},"_meta":{"progressToken":"p-17"}}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeResponse(b *testing.B) {
	m := NewResponse(IntID(17), json.RawMessage(`{"content":[{"type":"text","text":"`+strings.Repeat("y", 512)+`"}]}`))
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = m.Append(buf[:0])
	}
}
