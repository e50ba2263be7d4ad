package jsonrpc

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMember(t *testing.T) {
	obj := json.RawMessage(`{"name":"x","arguments":{"name":"inner"},"_meta":{"progressToken":7}}`)
	if v, ok := Member(obj, "name"); !ok || string(v) != `"x"` {
		t.Errorf("Member name = %s %v", v, ok)
	}
	if v, ok := Member(obj, "_meta"); !ok || string(v) != `{"progressToken":7}` {
		t.Errorf("Member _meta = %s", v)
	}
	if _, ok := Member(obj, "missing"); ok {
		t.Error("Member found a missing key")
	}
	if s, ok := StringMember(obj, "name"); !ok || s != "x" {
		t.Errorf("StringMember = %q", s)
	}
	if _, ok := Member(json.RawMessage(`[1]`), "a"); ok {
		t.Error("Member on an array")
	}
}

func TestSetMemberKeepsOtherBytes(t *testing.T) {
	tests := []struct{ in, key, val, want string }{
		{`{"name":"a__echo","arguments":{"x": 1.50, "y":"\u00e9"}}`, "name", `"echo"`, `{"name":"echo","arguments":{"x": 1.50, "y":"\u00e9"}}`},
		{`{"arguments":{}}`, "name", `"n"`, `{"arguments":{},"name":"n"}`},
		{`{}`, "k", `1`, `{"k":1}`},
		{` { } `, "k", `1`, ` { "k":1} `},
		{``, "k", `1`, `{"k":1}`},
		{`{"a":1,"k":{"deep":[1,2]},"b":2}`, "k", `null`, `{"a":1,"k":null,"b":2}`},
		{`{"\u006b":1}`, "k", `2`, `{"\u006b":2}`},
	}
	for _, tt := range tests {
		got, err := SetMember(json.RawMessage(tt.in), tt.key, json.RawMessage(tt.val))
		if err != nil || string(got) != tt.want {
			t.Errorf("SetMember(%s, %s, %s) = %s, %v; want %s", tt.in, tt.key, tt.val, got, err, tt.want)
		}
		if !json.Valid(got) {
			t.Errorf("SetMember(%s) gave invalid JSON %s", tt.in, got)
		}
	}
	if _, err := SetMember(json.RawMessage(`[]`), "k", json.RawMessage(`1`)); err == nil {
		t.Error("SetMember on an array must fail")
	}
}

func TestDeleteMember(t *testing.T) {
	tests := []struct{ in, key, want string }{
		{`{"a":1,"b":2,"c":3}`, "b", `{"a":1,"c":3}`},
		{`{"a":1,"b":2,"c":3}`, "a", `{"b":2,"c":3}`},
		{`{"a":1,"b":2,"c":3}`, "c", `{"a":1,"b":2}`},
		{`{"a":1}`, "a", `{}`},
		{`{"a":1}`, "z", `{"a":1}`},
		{`{ "a" : 1 , "b" : 2 }`, "a", `{ "b" : 2 }`},
	}
	for _, tt := range tests {
		got, err := DeleteMember(json.RawMessage(tt.in), tt.key)
		if err != nil || string(got) != tt.want || !json.Valid(got) {
			t.Errorf("DeleteMember(%s, %s) = %s, %v; want %s", tt.in, tt.key, got, err, tt.want)
		}
	}
}

func FuzzSetMember(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":{"c":[1,2]}}`), "b", []byte(`"x"`))
	f.Add([]byte(`{}`), "k", []byte(`{"z":null}`))
	f.Fuzz(func(t *testing.T, obj []byte, key string, val []byte) {
		if !json.Valid(obj) || !json.Valid(val) || !utf8.ValidString(key) {
			return // mcphub only sets members with valid UTF-8 names
		}
		out, err := SetMember(obj, key, val)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("SetMember(%s, %q, %s) = invalid %s", obj, key, val, out)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("result is not an object: %s", out)
		}
		got, ok := Member(out, key)
		if !ok {
			t.Fatalf("key %q missing after SetMember: %s", key, out)
		}
		var a, b any
		json.Unmarshal(got, &a)
		json.Unmarshal(val, &b)
		if string(mustJSON(a)) != string(mustJSON(b)) {
			t.Fatalf("member %q = %s; want %s", key, got, val)
		}
		del, err := DeleteMember(out, key)
		if err != nil || !json.Valid(del) {
			t.Fatalf("DeleteMember(%s) = %s, %v", out, del, err)
		}
	})
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func TestMembersVisitsEachTopLevelMemberOnce(t *testing.T) {
	obj := json.RawMessage(`{"name":"x","arguments":{"name":"inner"},"na\u006de2":[1, 2]}`)
	var got []string
	if !Members(obj, func(k []byte, v json.RawMessage) { got = append(got, string(k)+"="+string(v)) }) {
		t.Fatal("Members refused an object")
	}
	want := []string{`name="x"`, `arguments={"name":"inner"}`, `name2=[1, 2]`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Members visited %q, want %q", got, want)
	}
	for _, notObject := range []string{`[1]`, `"s"`, ``, `null`} {
		if Members(json.RawMessage(notObject), func([]byte, json.RawMessage) { t.Errorf("visited a member of %q", notObject) }) {
			t.Errorf("Members(%q) reported an object", notObject)
		}
	}
	if Members(json.RawMessage(`{}`), func([]byte, json.RawMessage) { t.Error("visited a member of {}") }) != true {
		t.Error("Members({}) reported no object")
	}
}
