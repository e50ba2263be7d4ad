package clientconf

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/tailscale/hujson"
)

var hubEntryForTest = Entry{{"url", "http://h/mcp"}}

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
		// Right under a key and right above a header, "# trailing" is
		// neither table's: cutting either keeps it.
		{"arr", "", "[[arr]]\nb = 2\n"},
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
		{"replace in place, keeping the user's keys and subtables",
			"[mcp_servers.hub]\nurl = \"old\" # was\nstartup_timeout_sec = 30\nenabled = false\n\n[mcp_servers.hub.env]\nA = \"1\"\n\n[mcp_servers.hub.tools.search]\napproval_mode = \"approve\"\n\n[mcp_servers.hub.http_headers]\nX = \"1\"\n\n[z]\nb = 1\n",
			"[mcp_servers.hub]\nurl = \"http://h/mcp\"\nstartup_timeout_sec = 30\nenabled = false\n\n[mcp_servers.hub.env]\nA = \"1\"\n\n[mcp_servers.hub.tools.search]\napproval_mode = \"approve\"\n\n[z]\nb = 1\n", nil, ""},
		{"from stdio to url", "[mcp_servers.hub]\ncommand = \"/old/mcphub\"\nargs = [\n  \"stdio\",\n]\nenabled = true\n",
			"[mcp_servers.hub]\nenabled = true\nurl = \"http://h/mcp\"\n", nil, ""},
		{"dotted owned keys", "[mcp_servers.hub]\nurl = \"http://h/mcp\"\nhttp_headers.Authorization = \"Bearer x\"\ntool_timeout_sec = 9", "[mcp_servers.hub]\nurl = \"http://h/mcp\"\ntool_timeout_sec = 9", nil, ""},
		{"only subtables", "[mcp_servers.hub.tools.search]\napproval_mode = \"approve\"\n",
			"[mcp_servers.hub]\nurl = \"http://h/mcp\"\n\n[mcp_servers.hub.tools.search]\napproval_mode = \"approve\"\n", nil, ""},
		{"header without a newline", "[mcp_servers.hub]", "[mcp_servers.hub]\nurl = \"http://h/mcp\"\n", nil, ""},
		{"same entry untouched", "[mcp_servers.hub] # mine\nurl = 'http://h/mcp' # same\n", "[mcp_servers.hub] # mine\nurl = 'http://h/mcp' # same\n", nil, ""},
		{"the file's header comment stays", "# Codex configuration, managed by hand\n# see the docs\n[mcp_servers.g]\ncommand = \"c\"\n\n[profiles.x]\nmodel = \"m\"\n",
			"# Codex configuration, managed by hand\n# see the docs\n\n[profiles.x]\nmodel = \"m\"\n\n[mcp_servers.hub]\nurl = \"http://h/mcp\"\n", []string{"g"}, ""},
		{"a comment after blank lines at the top stays", "\n# about the file\n[mcp_servers.g]\ncommand = \"c\"\n",
			"\n# about the file\n\n[mcp_servers.hub]\nurl = \"http://h/mcp\"\n", []string{"g"}, ""},
		{"the previous table's commented-out key stays", "[a]\nx = 1\n# y = 2\n[mcp_servers.g]\ncommand = \"c\"\n\n[b]\nz = 3\n",
			"[a]\nx = 1\n# y = 2\n\n[b]\nz = 3\n\n[mcp_servers.hub]\nurl = \"http://h/mcp\"\n", []string{"g"}, ""},
		{"a comment under the header's own body stays", "[mcp_servers.g]\ncommand = \"c\"\n# about b\n[b]\nz = 3\n",
			"# about b\n[b]\nz = 3\n\n[mcp_servers.hub]\nurl = \"http://h/mcp\"\n", []string{"g"}, ""},
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
			_, err = doc.set("hub", hubEntryForTest)
			for _, r := range tc.remove {
				if err == nil {
					err = doc.remove(r)
				}
			}
			if tc.err != "" {
				if !errors.Is(err, ErrNotEditable) {
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
		// decoded already. Setting it again changes nothing, and the
		// entry keeps every key mcphub does not own.
		if doc, err := parseTOMLDoc("f", []byte(text)); err == nil {
			if _, err := doc.set("hub", hubEntryForTest); err == nil {
				once, _ := doc.bytes()
				again, err := parseTOMLDoc("f", once)
				if err != nil {
					t.Fatalf("set left a file that does not parse: %v\n%q", err, once)
				}
				if act, err := again.set("hub", hubEntryForTest); err != nil || act != setUnchanged {
					t.Fatalf("a second set: %v, %v\n%q", act, err, once)
				}
				before, _ := tomlServers(m)["hub"].(map[string]any)
				after, _ := decodeTOML("f", string(once))
				kept, _ := tomlServers(after)["hub"].(map[string]any)
				for k, v := range before {
					if !slices.Contains(ownedKeys, k) && !sameValue(v, kept[k]) {
						t.Fatalf("set lost the entry's %q:\n%q\n%q", k, text, once)
					}
				}
			}
		}
		for name := range names {
			doc, err := parseTOMLDoc("f", []byte(text))
			if err != nil {
				t.Fatal(err)
			}
			if err := doc.remove(name); err != nil && !errors.Is(err, ErrNotEditable) {
				t.Fatalf("removing %q from %q: %v", name, text, err)
			}
		}
	})
}

// FuzzJSONRemove removes each server of any JSON(C) text: the result
// parses, stays standard JSON when it was, holds every other member as it
// was, and setting the hub's entry then holds it.
func FuzzJSONRemove(f *testing.F) {
	for _, name := range []string{"vscode-mcp.json", "gemini-settings.json", "cursor-mcp.json"} {
		if data, err := os.ReadFile(filepath.Join("testdata", "clients", name)); err == nil {
			f.Add(string(data))
		}
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
