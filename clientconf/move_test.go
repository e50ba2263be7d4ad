package clientconf

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mcphub/mcphub/registry"
)

// TestPlanMove sorts a client's entries the way connect --move does: what
// the hub runs and older entries for the same view go; entries that only
// look alike, or that point at another view of the hub, stay with a note.
func TestPlanMove(t *testing.T) {
	reg, err := registry.Parse("/cfg/hub.toml", []byte(`[hub]
listen = "127.0.0.1:7733"

[servers.github]
command = "/usr/bin/npx"
args = ["-y", "@modelcontextprotocol/server-github"]

[servers.docs]
url = "https://docs.example/mcp/"

[servers.files]
command = "npx"
args = ["server-files"]
env = { ROOT = "/srv" }
`), envOf())
	if err != nil {
		t.Fatal(err)
	}
	doc, err := parseJSONDoc("f", []byte(`{"mcpServers": {
	  "mcphub": {"url": "http://127.0.0.1:7733/mcp"},
	  "old-hub": {"url": "http://localhost:7733/mcp"},
	  "hub-github": {"url": "http://127.0.0.1:7733/github/mcp"},
	  "hub-work": {"command": "mcphub", "args": ["stdio", "--profile", "work"]},
	  "gh": {"command": "npx.cmd", "args": ["-y", "@modelcontextprotocol/server-github"]},
	  "docs": {"url": "https://docs.example/mcp"},
	  "files": {"command": "npx", "args": ["server-files"], "env": {"ROOT": "/tmp"}},
	  "other": {"command": "uvx", "args": ["other"]}
	}}`), "mcpServers")
	if err != nil {
		t.Fatal(err)
	}
	// With no Config, every "mcphub stdio" entry is this hub.
	self := registry.Self{Listens: []string{reg.Hub.Listen}}
	p, err := planMove(doc, reg, self, "mcphub", "")
	if err != nil {
		t.Fatal(err)
	}
	removed := map[string]string{}
	for i, e := range p.remove {
		removed[e.name] = p.why[i]
	}
	want := map[string]string{
		"old-hub": `it points at this hub too; "mcphub" replaces it`,
		"gh":      `the hub serves it as "github"`,
		"docs":    `the hub serves it as "docs"`,
	}
	if !reflect.DeepEqual(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	var kept []string
	for _, e := range p.keep {
		kept = append(kept, e.name)
	}
	if want := []string{"files", "hub-github", "hub-work", "other"}; !reflect.DeepEqual(slices.Sorted(slices.Values(kept)), want) {
		t.Errorf("kept %v, want %v", kept, want)
	}
	for name, want := range map[string]string{
		"files":      "its env ROOT has another value",
		"hub-github": `only the hub's server "github"`,
		"hub-work":   `the hub's profile "work"`,
		"other":      "",
	} {
		if got := p.notes[name]; want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("note for %s = %q, want it to say %q", name, got, want)
		}
	}
	// Connecting profile work, the entry for that profile is an older copy
	// too; one server's endpoint still is not.
	p, _ = planMove(doc, reg, self, "mcphub", "work")
	if !slicesHave(p.remove, "hub-work") || !slicesHave(p.keep, "hub-github") {
		t.Errorf("with --profile work: remove %v keep %v", p.remove, p.keep)
	}
}

// slicesHave reports whether list holds an entry called name.
func slicesHave(list []clientEntry, name string) bool {
	return slices.ContainsFunc(list, func(e clientEntry) bool { return e.name == name })
}

// TestCommandBase: one command, however a client spells its path.
func TestCommandBase(t *testing.T) {
	for _, c := range []string{"npx", "/usr/local/bin/npx", `C:\Program Files\nodejs\npx.cmd`, "NPX.exe"} {
		if got := commandBase(c); !strings.EqualFold(got, "npx") {
			t.Errorf("commandBase(%q) = %q", c, got)
		}
	}
}

// TestExpandClientValue: a value mcphub cannot know here is never taken
// for equal.
func TestExpandClientValue(t *testing.T) {
	t.Setenv("CLIENTCONF_SET", "v")
	for _, tc := range []struct {
		in       string
		prompted bool
		want     string
		ok       bool
	}{
		{"plain", false, "plain", true},
		{"${CLIENTCONF_SET}", false, "v", true},
		{"${CLIENTCONF_SET}", true, "", false},
		{"${CLIENTCONF_UNSET_X}", false, "", false},
		{"$$HOME", false, "", false},
		{"a$$1", false, "a$1", true},
		{"a$$b", false, "", false},
	} {
		got, ok := expandClientValue(tc.in, tc.prompted)
		if got != tc.want || ok != tc.ok {
			t.Errorf("expandClientValue(%q, %v) = %q, %v; want %q, %v", tc.in, tc.prompted, got, ok, tc.want, tc.ok)
		}
	}
}
