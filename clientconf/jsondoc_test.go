package clientconf

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tailscale/hujson"
)

// TestClientFileJSONEdits checks the exact text of JSON(C) edits: the new
// member laid out like its siblings, everything else byte for byte.
func TestClientFileJSONEdits(t *testing.T) {
	for _, tc := range []struct {
		name, in, out string
		remove        []string
	}{
		{"new file", "", "{\n  \"s\": {\n    \"hub\": {\n      \"url\": \"http://h/mcp\"\n    }\n  }\n}\n", nil},
		{"compact stays compact", `{"a":1,"s":{"x":{"url":"u"}}}`, `{"a":1,"s":{"x":{"url":"u"},"hub":{"url":"http://h/mcp"}}}`, nil},
		{"missing member, pretty", "{\n  \"a\": 1\n}\n", "{\n  \"a\": 1,\n  \"s\": {\n    \"hub\": {\n      \"url\": \"http://h/mcp\"\n    }\n  }\n}\n", nil},
		{"null member", "{\n  \"s\": null\n}", "{\n  \"s\": {\n    \"hub\": {\n      \"url\": \"http://h/mcp\"\n    }\n  }\n}", nil},
		{"empty object", "{\n  \"s\": {}\n}", "{\n  \"s\": {\n    \"hub\": {\n      \"url\": \"http://h/mcp\"\n    }\n  }\n}", nil},
		{"tabs", "{\n\t\"s\": {\n\t\t\"x\": 1\n\t}\n}", "{\n\t\"s\": {\n\t\t\"x\": 1,\n\t\t\"hub\": {\n\t\t\t\"url\": \"http://h/mcp\"\n\t\t}\n\t}\n}", nil},
		{"crlf", "{\r\n  \"s\": {\r\n    \"x\": 1\r\n  }\r\n}\r\n", "{\r\n  \"s\": {\r\n    \"x\": 1,\r\n    \"hub\": {\r\n      \"url\": \"http://h/mcp\"\r\n    }\r\n  }\r\n}\r\n", nil},
		{"trailing comma and comment kept", "{\n  \"s\": {\n    \"x\": 1, // one\n  },\n}", "{\n  \"s\": {\n    \"x\": 1, // one\n    \"hub\": {\n      \"url\": \"http://h/mcp\"\n    },\n  },\n}", nil},
		{"replace in place, keeping the user's members", "{\n  \"s\": {\n    \"hub\": {\"url\": \"old\", \"alwaysAllow\": [\"t\"], \"disabled\": false},\n    \"y\": 2\n  }\n}",
			"{\n  \"s\": {\n    \"hub\": {\"url\": \"http://h/mcp\", \"alwaysAllow\": [\"t\"], \"disabled\": false},\n    \"y\": 2\n  }\n}", nil},
		{"owned members the entry lacks go, the rest stay",
			"{\n  \"s\": {\n    \"hub\": {\n      \"command\": \"/old/mcphub\",\n      \"args\": [\"stdio\"],\n      \"env\": {\"A\": \"1\"}, // mine\n      \"timeout\": 5\n    }\n  }\n}",
			"{\n  \"s\": {\n    \"hub\": {\n      \"env\": {\"A\": \"1\"}, // mine\n      \"timeout\": 5,\n      \"url\": \"http://h/mcp\"\n    }\n  }\n}", nil},
		{"not an object is replaced", "{\"s\": {\"hub\": \"x\"}}", "{\"s\": {\"hub\": {\"url\":\"http://h/mcp\"}}}", nil},
		{"same entry untouched", "{\"s\": {\"hub\" : { \"url\" : \"http://h/mcp\" }}}", "{\"s\": {\"hub\" : { \"url\" : \"http://h/mcp\" }}}", nil},
		{"remove with its comment", "{\n  \"s\": {\n    \"w\": 0,\n\n    // about x\n    \"x\": 1, // one\n    \"y\": 2,\n  }\n}",
			"{\n  \"s\": {\n    \"w\": 0,\n\n    \"y\": 2,\n    \"hub\": {\n      \"url\": \"http://h/mcp\"\n    },\n  }\n}", []string{"x"}},
		{"remove the last keeps the trailing comma", "{\"s\": {\"hub\": {\"url\": \"http://h/mcp\"}, \"y\": 2,}}", "{\"s\": {\"hub\": {\"url\": \"http://h/mcp\"},}}", []string{"y"}},
		{"remove on a shared line", "{\"s\": {\"a\": 1, \"b\": 2, \"c\": 3}}", "{\"s\": {\"a\": 1, \"c\": 3, \"hub\": {\"url\":\"http://h/mcp\"}}}", []string{"b"}},
		{"escaped names", `{"s":{"a/b~c":1}}`, `{"s":{"hub":{"url":"http://h/mcp"}}}`, []string{"a/b~c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var data []byte
			if tc.in != "" {
				data = []byte(tc.in)
			}
			doc, err := parseJSONDoc("f", data, "s")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := doc.set("hub", hubEntryForTest); err != nil {
				t.Fatal(err)
			}
			for _, r := range tc.remove {
				if err := doc.remove(r); err != nil {
					t.Fatal(err)
				}
			}
			got, err := doc.bytes()
			if err != nil || string(got) != tc.out {
				t.Errorf("got %v\n%s\nwant\n%s", err, got, tc.out)
			}
		})
	}
}

// TestClientFileJSONRemovals checks the exact text left by removing
// members: the comments that are not the member's stay, and a strict file
// stays strict whatever its layout.
func TestClientFileJSONRemovals(t *testing.T) {
	for _, tc := range []struct {
		name, in, out string
		remove        []string
	}{
		{"space before the comma", `{"s":{"x":1 ,"y":2}}`, `{"s":{"x":1 }}`, []string{"y"}},
		{"comma first, the last", "{\n  \"s\": { \"x\": 1\n       , \"y\": 2\n       }\n}", "{\n  \"s\": { \"x\": 1\n       }\n}", []string{"y"}},
		{"comma first, the first", "{\n  \"s\": { \"x\": 1\n       , \"y\": 2\n       }\n}", "{\n  \"s\": { \"y\": 2\n       }\n}", []string{"x"}},
		{"comma first, the middle", "{\"s\": { \"x\": 1\n     , \"y\": 2\n     , \"z\": 3\n     }}", "{\"s\": { \"x\": 1\n     , \"z\": 3\n     }}", []string{"y"}},
		{"newline before the comma", "{\"s\": {\n  \"x\": 1\n  ,\n  \"y\": 2\n}}", "{\"s\": {\n  \"x\": 1\n}}", []string{"y"}},
		{"the only one", `{"s": {"a": 1}}`, `{"s": {}}`, []string{"a"}},
		{"all of them, pretty", "{\n  \"s\": {\n    \"a\": 1,\n    \"b\": 2\n  }\n}", "{\n  \"s\": {\n  }\n}", []string{"a", "b"}},
		{"section comment at the start of the object stays",
			"{\n  \"s\": {\n    // ---- work servers ----\n    \"x\": 1,\n    \"y\": 2\n  }\n}",
			"{\n  \"s\": {\n    // ---- work servers ----\n    \"y\": 2\n  }\n}", []string{"x"}},
		{"commented-out member above the first stays",
			"{\n  \"s\": {\n    // \"old\": {\"url\": \"u\"},\n    \"x\": 1,\n    \"y\": 2\n  }\n}",
			"{\n  \"s\": {\n    // \"old\": {\"url\": \"u\"},\n    \"y\": 2\n  }\n}", []string{"x"}},
		{"commented-out member under the previous one stays",
			"{\n  \"s\": {\n    \"w\": 0,\n    // \"v\": 1,\n    \"x\": 1\n  }\n}",
			"{\n  \"s\": {\n    \"w\": 0\n    // \"v\": 1,\n  }\n}", []string{"x"}},
		{"section comment set apart by a blank line stays, the member's goes",
			"{\n  \"s\": {\n    // ---- work servers ----\n\n    // about x\n    \"x\": 1,\n    \"y\": 2\n  }\n}",
			"{\n  \"s\": {\n    // ---- work servers ----\n\n    \"y\": 2\n  }\n}", []string{"x"}},
		{"a paragraph at the end goes with its blank line",
			"{\n  \"s\": {\n    \"a\": 1,\n\n    // about b\n    \"b\": 2 // two\n  }\n}",
			"{\n  \"s\": {\n    \"a\": 1\n  }\n}", []string{"b"}},
		{"a paragraph between blank lines leaves one",
			"{\n  \"s\": {\n    \"a\": 1,\n\n    /* about\n       b */\n    \"b\": 2,\n\n    \"c\": 3\n  }\n}",
			"{\n  \"s\": {\n    \"a\": 1,\n\n    \"c\": 3\n  }\n}", []string{"b"}},
		{"crlf", "{\r\n  \"s\": {\r\n    \"a\": 1, // one\r\n    \"b\": 2\r\n  }\r\n}\r\n", "{\r\n  \"s\": {\r\n    \"b\": 2\r\n  }\r\n}\r\n", []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := parseJSONDoc("f", []byte(tc.in), "s")
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range tc.remove {
				if err := doc.remove(r); err != nil {
					t.Fatal(err)
				}
			}
			got, err := doc.bytes()
			if err != nil || string(got) != tc.out {
				t.Errorf("got %v\n%s\nwant\n%s", err, got, tc.out)
			}
			if json.Valid([]byte(tc.in)) && !json.Valid(got) {
				t.Errorf("a strict file is no longer standard JSON:\n%s", got)
			}
		})
	}
}

// FuzzJSONRemove removes each server of any JSON(C) text: the result
// parses, stays standard JSON when it was, holds every other member as it
// was, and setting the hub's entry then holds it.
func FuzzJSONRemove(f *testing.F) {
	for _, name := range []string{"vscode-mcp.json", "gemini-settings.json", "cursor-mcp.json"} {
		data, err := os.ReadFile(filepath.Join(clientSamples, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	for _, s := range []string{
		`{"s":{"x":1 ,"y":2}}`, "{\"s\": { \"x\": 1\n , \"y\": 2\n }}", "{\"s\": {\n  // c\n  \"x\": 1, // d\n\n  /* e */ \"y\": 2,\n}}",
		"{\"s\": {\"a\": 1 /* x */ , \"b\": [1,\n2] // y\n}}", "{\"s\": {}}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		doc, err := parseJSONDoc("f", []byte(text), "s")
		if err != nil {
			return
		}
		obj, _, err := doc.servers(false)
		if obj == nil || err != nil {
			return
		}
		var names []string
		for _, m := range obj.Members {
			names = append(names, m.Name.Value.(hujson.Literal).String())
		}
		strict := json.Valid([]byte(text))
		for _, name := range names {
			doc, _ := parseJSONDoc("f", []byte(text), "s")
			want := map[string]string{}
			obj, _, _ := doc.servers(false)
			for _, m := range obj.Members {
				if n := m.Name.Value.(hujson.Literal).String(); n != name {
					want[n] = valueText(m.Value)
				}
			}
			if err := doc.remove(name); err != nil {
				t.Fatal(err)
			}
			out, err := doc.bytes()
			if err != nil {
				t.Fatalf("removing %q from %q: %v", name, text, err)
			}
			if strict && !json.Valid(out) {
				t.Fatalf("removing %q from %q left %q", name, text, out)
			}
			again, err := parseJSONDoc("f", out, "s")
			if err != nil {
				t.Fatalf("removing %q from %q left %q: %v", name, text, out, err)
			}
			obj, _, _ = again.servers(false)
			got := map[string]string{}
			for _, m := range obj.Members {
				got[m.Name.Value.(hujson.Literal).String()] = valueText(m.Value)
			}
			if len(want) != len(got) {
				// Duplicate names: the removal takes the first.
				continue
			}
			for n, v := range want {
				if got[n] != v {
					t.Fatalf("removing %q from %q changed %q:\n%q", name, text, n, out)
				}
			}
			if _, err := again.set("hub", hubEntryForTest); err != nil {
				t.Fatalf("set after removing %q from %q: %v", name, text, err)
			}
			if out, err := again.bytes(); err != nil || (strict && !json.Valid(out)) {
				t.Fatalf("set after removing %q from %q: %v\n%q", name, text, err, out)
			}
		}
	})
}

// valueText is a member's value as compact standard JSON.
func valueText(v hujson.Value) string {
	var x any
	if err := json.Unmarshal(standard(v), &x); err != nil {
		return "invalid: " + err.Error()
	}
	b, _ := json.Marshal(x)
	return string(b)
}
