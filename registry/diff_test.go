package registry

import (
	"reflect"
	"testing"
)

func TestDiff(t *testing.T) {
	old := `[servers.same]
command = "x"
[servers.gone]
command = "x"
[servers.cmd]
command = "x"
[servers.env]
command = "x"
env = { T = "${TOK}" }
[servers.off]
command = "x"
[servers.allow]
command = "x"
[servers.share]
command = "x"
`
	new := `# a comment moves every line; that is not a change
[servers.same]
command = "x"
[servers.cmd]
command = "y"
[servers.env]
command = "x"
env = { T = "${TOK}" }
[servers.off]
command = "x"
enabled = false
[servers.allow]
command = "x"
allow = ["a_*"]
call_timeout = "1m"
[servers.share]
command = "x"
share = "session"
[servers.added]
command = "x"
`
	o := mustParse(t, old, envOf("TOK", "1"))
	n := mustParse(t, new, envOf("TOK", "2")) // same text, new secret value
	got := Diff(o, n)
	want := Changes{
		Added:     []string{"added"},
		Removed:   []string{"gone"},
		Changed:   []string{"cmd", "env", "share"},
		Toggled:   []string{"allow", "off"},
		Unchanged: []string{"same"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Diff\n got %+v\nwant %+v", got, want)
	}
	if got.Empty() {
		t.Error("Empty() on a non-empty diff")
	}
}

func TestDiffEdges(t *testing.T) {
	r := mustParse(t, "[servers.b]\ncommand = \"x\"\n[servers.a]\ncommand = \"x\"\n", envOf())
	if d := Diff(nil, r); !reflect.DeepEqual(d.Added, []string{"a", "b"}) || !d.HubChanged {
		t.Errorf("nil old: %+v", d)
	}
	if d := Diff(r, nil); !reflect.DeepEqual(d.Removed, []string{"a", "b"}) {
		t.Errorf("nil new: %+v", d)
	}
	if d := Diff(r, r); !d.Empty() || len(d.Unchanged) != 2 {
		t.Errorf("same: %+v", d)
	}
	h := mustParse(t, "[hub]\nseparator = \".\"\n[servers.b]\ncommand = \"x\"\n[servers.a]\ncommand = \"x\"\n", envOf())
	if d := Diff(r, h); !d.HubChanged || d.Empty() || len(d.Unchanged) != 2 {
		t.Errorf("hub change: %+v", d)
	}
	if d := Diff(nil, nil); !d.Empty() {
		t.Errorf("nil, nil: %+v", d)
	}
}
