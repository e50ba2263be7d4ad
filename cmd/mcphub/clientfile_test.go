package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

var hubEntryForTest = entry{{"url", "http://h/mcp"}}

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
		{"replace in place", "{\n  \"s\": {\n    \"hub\": {\"url\": \"old\", \"x\": 1},\n    \"y\": 2\n  }\n}", "{\n  \"s\": {\n    \"hub\": {\n      \"url\": \"http://h/mcp\"\n    },\n    \"y\": 2\n  }\n}", nil},
		{"same entry untouched", "{\"s\": {\"hub\" : { \"url\" : \"http://h/mcp\" }}}", "{\"s\": {\"hub\" : { \"url\" : \"http://h/mcp\" }}}", nil},
		{"remove with its comment", "{\n  \"s\": {\n    // about x\n    \"x\": 1,\n    \"y\": 2,\n  }\n}", "{\n  \"s\": {\n    \"y\": 2,\n    \"hub\": {\n      \"url\": \"http://h/mcp\"\n    },\n  }\n}", []string{"x"}},
		{"remove the last keeps the trailing comma", "{\"s\": {\"hub\": {\"url\": \"http://h/mcp\"}, \"y\": 2,}}", "{\"s\": {\"hub\": {\"url\": \"http://h/mcp\"},}}", []string{"y"}},
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
			if err := doc.set("hub", hubEntryForTest); err != nil {
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

// TestClientFileTOMLBlocks checks where tables begin and end.
func TestClientFileTOMLBlocks(t *testing.T) {
	text := `# top
a = 1

# about x
[mcp_servers.x]  # x
command = "c"
s = """
[mcp_servers.fake]
"""
args = [
  "[not.a.table]",
  ['nested'],
]
# x's last comment

# about x.env
[mcp_servers.x.env]
K = "v"
# trailing
[[arr]]
b = 2
`
	type span struct{ key, lead, body string }
	var got []span
	for _, b := range tomlBlocks(text) {
		got = append(got, span{strings.Join(b.key, "."), text[b.lead:b.start], text[b.start:b.end]})
	}
	want := []span{
		{"mcp_servers.x", "# about x\n", "[mcp_servers.x]  # x\ncommand = \"c\"\ns = \"\"\"\n[mcp_servers.fake]\n\"\"\"\nargs = [\n  \"[not.a.table]\",\n  ['nested'],\n]\n# x's last comment\n"},
		{"mcp_servers.x.env", "# about x.env\n", "[mcp_servers.x.env]\nK = \"v\"\n"},
		{"arr", "# trailing\n", "[[arr]]\nb = 2\n"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("blocks\n%q\nwant\n%q", got, want)
	}
}

// TestClientFileTOMLEdits checks the exact text of Codex edits.
func TestClientFileTOMLEdits(t *testing.T) {
	for _, tc := range []struct {
		name, in, out string
		remove        []string
		err           string
	}{
		{"new file", "", "[mcp_servers.hub]\nurl = \"http://h/mcp\"\n", nil, ""},
		{"append after a blank line", "a = 1", "a = 1\n\n[mcp_servers.hub]\nurl = \"http://h/mcp\"\n", nil, ""},
		{"replace in place, subtables go", "[mcp_servers.hub]\nurl = \"old\"\n\n[mcp_servers.hub.env]\nA = \"1\"\n\n[z]\nb = 1\n",
			"[mcp_servers.hub]\nurl = \"http://h/mcp\"\n\n[z]\nb = 1\n", nil, ""},
		{"remove between tables", "[a]\nx = 1\n\n# gone\n[mcp_servers.g]\ncommand = \"c\"\n\n[b]\ny = 2\n",
			"[a]\nx = 1\n\n[b]\ny = 2\n\n[mcp_servers.hub]\nurl = \"http://h/mcp\"\n", []string{"g"}, ""},
		{"remove the last table", "[a]\nx = 1\n\n[mcp_servers.g]\ncommand = \"c\"\n",
			"[a]\nx = 1\n\n[mcp_servers.hub]\nurl = \"http://h/mcp\"\n", []string{"g"}, ""},
		{"quoted name", "[mcp_servers.\"my server\"]\ncommand = \"c\"\n", "[mcp_servers.hub]\nurl = \"http://h/mcp\"\n", []string{"my server"}, ""},
		{"crlf", "[a]\r\nx = 1\r\n", "[a]\r\nx = 1\r\n\r\n[mcp_servers.hub]\r\nurl = \"http://h/mcp\"\r\n", nil, ""},
		{"inline entry", "[mcp_servers]\nhub = { url = \"x\" }\n", "", nil, "inline"},
		{"dotted keys", "mcp_servers.hub.url = \"x\"\n", "", nil, "inline"},
		{"inline entry to remove", "[mcp_servers]\ng = { command = \"c\" }\n", "", []string{"g"}, "inline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := parseTOMLDoc("f", []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			err = doc.set("hub", hubEntryForTest)
			for _, r := range tc.remove {
				if err == nil {
					err = doc.remove(r)
				}
			}
			if tc.err != "" {
				if !errors.Is(err, errNotEditable) {
					t.Fatalf("err %v, want errNotEditable", err)
				}
				return
			}
			got, _ := doc.bytes()
			if err != nil || string(got) != tc.out {
				t.Errorf("got %v\n%s\nwant\n%s", err, got, tc.out)
			}
		})
	}
	if _, err := parseTOMLDoc("dir/config.toml", []byte("a = 1\nb = ?\n")); err == nil || !strings.HasPrefix(err.Error(), "dir/config.toml:2: ") {
		t.Errorf("a file that does not parse: %v, want dir/config.toml:2: ...", err)
	}
}

// TestClientFileBackupsAndReplace: backups keep the old bytes and mode and
// never overwrite each other; a file that changed since it was read is not
// replaced.
func TestClientFileBackupsAndReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "c.json")
	now := time.Date(2026, 5, 1, 12, 30, 45, 0, time.FixedZone("x", 3600))

	f, _ := readClientFile(path)
	if b, err := f.replace([]byte("one"), now); err != nil || b != "" {
		t.Fatalf("new file: backup %q, %v", b, err)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("a new file must have mode 0600: %v", err)
	}
	os.Chmod(path, 0o640)
	var backups []string
	for _, next := range []string{"two", "three"} {
		f, _ := readClientFile(path)
		b, err := f.replace([]byte(next), now)
		if err != nil {
			t.Fatal(err)
		}
		backups = append(backups, b)
	}
	base := path + ".mcphub-backup-20260501T113045Z"
	if !slices.Equal(backups, []string{base, base + "-2"}) {
		t.Errorf("backups %q", backups)
	}
	for i, want := range []string{"one", "two"} {
		data, _ := os.ReadFile(backups[i])
		info, _ := os.Stat(backups[i])
		if string(data) != want || info.Mode().Perm() != 0o640 {
			t.Errorf("backup %d: %q mode %v", i, data, info.Mode().Perm())
		}
	}

	f, _ = readClientFile(path)
	os.WriteFile(path, []byte("changed by the client"), 0o640)
	if _, err := f.replace([]byte("four"), now.Add(time.Second)); !errors.Is(err, errChanged) {
		t.Errorf("replace over a changed file: %v", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "changed by the client" {
		t.Errorf("the client's change was lost: %q", data)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 3 {
		t.Errorf("left behind: %v", entries)
	}

	// A symlink stays a link; the file it points to is edited.
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(path, link); err == nil {
		f, _ := readClientFile(link)
		if _, err := f.replace([]byte("via link"), now); err != nil {
			t.Fatal(err)
		}
		if info, _ := os.Lstat(link); info.Mode()&os.ModeSymlink == 0 {
			t.Error("the symlink was replaced by a file")
		}
		if data, _ := os.ReadFile(path); string(data) != "via link" {
			t.Errorf("target: %q", data)
		}
	}
}

// FuzzTOMLBlocks checks the table finder on any text: blocks are in order,
// within the text and start at a header; on valid TOML each header is a
// table the decoder knows, and cutting out an [mcp_servers.NAME] entry's
// tables leaves valid TOML.
func FuzzTOMLBlocks(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("testdata", "clients", "codex-config.toml")); err == nil {
		f.Add(string(data))
	}
	for _, s := range []string{
		"[a]\nx = 1\n", "[mcp_servers.a]\ncommand = 'c'\n[mcp_servers.a.env]\nK='v'\n",
		"s = '''\n[mcp_servers.x]\n'''\n[mcp_servers.y]\nurl = \"u\"\n",
		"a = [\n[1],\n]\n[mcp_servers.z] # c\n", "x = \"\"\"\\\"\"\"\n[t]\n", "[[mcp_servers.a.x]]\n",
		"[mcp_servers]\na = { url = \"u\" }\n[mcp_servers.b]\n", "# c\n\n[a]\r\nb = 1\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		blocks := tomlBlocks(text)
		prev := 0
		for _, b := range blocks {
			if b.lead < prev || b.lead > b.start || b.start >= b.end || b.end > len(text) ||
				!strings.HasPrefix(strings.TrimLeft(text[b.start:], " \t"), "[") {
				t.Fatalf("bad block %+v in %q", b, text)
			}
			prev = b.end
		}
		var m map[string]any
		md, err := toml.Decode(text, &m)
		if err != nil {
			return
		}
		names := map[string]bool{}
		for _, b := range blocks {
			if !md.IsDefined(b.key...) {
				t.Fatalf("header %q is not a table of %q", b.key, text)
			}
			if len(b.key) >= 2 && b.key[0] == "mcp_servers" {
				names[b.key[1]] = true
			}
		}
		// Setting an entry never panics; what it writes, commit has
		// decoded already.
		if doc, err := parseTOMLDoc("f", []byte(text)); err == nil {
			_ = doc.set("hub", hubEntryForTest)
		}
		for name := range names {
			doc, err := parseTOMLDoc("f", []byte(text))
			if err != nil {
				t.Fatal(err)
			}
			if err := doc.remove(name); err != nil && !errors.Is(err, errNotEditable) {
				t.Fatalf("removing %q from %q: %v", name, text, err)
			}
		}
	})
}
