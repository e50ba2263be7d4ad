package clientconf

import (
	"testing"
)

var hubEntryForTest = Entry{{"url", "http://h/mcp"}}

// TestClientFileSetIsIdempotent: setting the entry a second time changes
// nothing and says so; the first time says whether it added or updated.
func TestClientFileSetIsIdempotent(t *testing.T) {
	stdio := Entry{{"command", "/bin/mcphub"}, {"args", []string{"stdio", "--config", "/c/hub.toml"}}}
	remote := Entry{{"url", "http://h/mcp"}, {"http_headers", map[string]string{"Authorization": "Bearer t"}}}
	for _, tc := range []struct {
		name, in string
		toml     bool
		e        Entry
		first    setAction
	}{
		{"json new", `{"s": {}}`, false, stdio, setAdded},
		{"json stale", "{\n  \"s\": {\n    \"hub\": {\"url\": \"x\", \"alwaysAllow\": [\"t\"]}\n  }\n}", false, stdio, setUpdated},
		{"toml new", "a = 1\n", true, remote, setAdded},
		{"toml stale", "[mcp_servers.hub]\ncommand = \"x\"\nenabled = false\n[mcp_servers.hub.http_headers]\nX = \"y\"\n", true, remote, setUpdated},
		{"toml same", "[mcp_servers.hub]\nurl = \"http://h/mcp\"\n[mcp_servers.hub.http_headers]\nAuthorization = \"Bearer t\"\n", true, remote, setUnchanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parse := func(data []byte) clientDoc {
				var doc clientDoc
				var err error
				if tc.toml {
					doc, err = parseTOMLDoc("f", data)
				} else {
					doc, err = parseJSONDoc("f", data, "s")
				}
				if err != nil {
					t.Fatal(err)
				}
				return doc
			}
			doc := parse([]byte(tc.in))
			if got, err := doc.set("hub", tc.e); err != nil || got != tc.first {
				t.Fatalf("first set: %v, %v; want %v", got, err, tc.first)
			}
			once, _ := doc.bytes()
			doc = parse(once)
			if got, err := doc.set("hub", tc.e); err != nil || got != setUnchanged {
				t.Errorf("second set: %v, %v; want no change", got, err)
			}
			if twice, _ := doc.bytes(); string(twice) != string(once) {
				t.Errorf("the second set changed\n%s\ninto\n%s", once, twice)
			}
		})
	}
}
