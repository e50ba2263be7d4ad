package clientconf

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

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
					t.Fatalf("err %v, want ErrNotEditable", err)
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

// FuzzTOMLBlocks checks the table finder on any text: blocks are in order,
// within the text and start at a header; on valid TOML each header is a
// table the decoder knows, and cutting out an [mcp_servers.NAME] entry's
// tables leaves valid TOML.
func FuzzTOMLBlocks(f *testing.F) {
	data, err := os.ReadFile(filepath.Join(clientSamples, "codex-config.toml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(data))
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
