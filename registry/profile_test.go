package registry

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

const profilesExample = `[servers.github]
command = "gh"
tags = ["coding", "web"]

[servers.fs]
command = "fs"

[profiles.coding]
servers = ["github", "fs"]
tags = ["coding"]
include = ["github__*", "fs__read_*"]
exclude = ["*__delete_*"]
prefixed = true
mode = "search"

[profiles.coding.overrides."github__create_issue"]
name = "new_issue"
title = "New issue"
description = "Opens an issue"
annotations = { readOnlyHint = true, destructiveHint = false, title = "Issue" }
args = { owner = "acme", repo = "web", limit = 10, labels = ["a"], opts = { x = 1, y = "<b>" } }

[profiles.plain]

[overrides."github__search_code"]
description = "Searches code"
`

func raws(kv ...string) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = json.RawMessage(kv[i+1])
	}
	return m
}

func TestParseProfiles(t *testing.T) {
	reg := mustParse(t, profilesExample, envOf())
	want := []*Profile{{
		Name: "coding", Servers: []string{"github", "fs"}, Tags: []string{"coding"},
		Include: []string{"github__*", "fs__read_*"}, Exclude: []string{"*__delete_*"},
		Prefixed: true, Mode: ModeSearch, Line: 8,
		Overrides: map[string]*ToolOverride{"github__create_issue": {
			Name: "new_issue", Title: "New issue", Description: "Opens an issue",
			Annotations: raws("readOnlyHint", "true", "destructiveHint", "false", "title", `"Issue"`),
			Args: raws("owner", `"acme"`, "repo", `"web"`, "limit", "10", "labels", `["a"]`,
				"opts", `{"x":1,"y":"<b>"}`),
		}},
	}, {Name: "plain", Prefixed: true, Mode: ModeFull, Line: 23}}
	if !reflect.DeepEqual(reg.Profiles, want) {
		for i, p := range reg.Profiles {
			t.Errorf("profile %d: %+v", i, *p)
			for k, o := range p.Overrides {
				t.Errorf("  %s: %+v", k, *o)
			}
		}
		t.FailNow()
	}
	wantG := map[string]*ToolOverride{"github__search_code": {Description: "Searches code"}}
	if !reflect.DeepEqual(reg.Overrides, wantG) {
		t.Errorf("global overrides: %+v", reg.Overrides)
	}
	if got := reg.Server("github").Tags; !reflect.DeepEqual(got, []string{"coding", "web"}) {
		t.Errorf("github tags: %v", got)
	}
	if reg.Profile("coding") != reg.Profiles[0] || reg.Profile("nope") != nil {
		t.Error("Profile lookup")
	}
	if reg := mustParse(t, "[servers.a]\ncommand = \"x\"\n", envOf()); reg.Overrides != nil || reg.Profiles != nil {
		t.Errorf("no views: %+v %+v", reg.Profiles, reg.Overrides)
	}
}

// base is the servers every error case is checked against: lines 1-7.
const base = `[servers.github]
command = "gh"
tags = ["coding"]
[servers.gitlab]
command = "gl"
[servers.off]
command = "x"
enabled = false
`

func TestProfileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"bad tag", "[servers.a]\ncommand = \"x\"\ntags = [\"ok\", \"Web\"]\n", []string{
			`3:1: servers.a.tags: entry 2 ("Web") is not a tag; use 1-32 characters of a-z, 0-9 and '-'`}},
		{"bad name", base + "[profiles.Coding]\n", []string{
			`9:1: profiles.Coding: profile name "Coding" is not valid; use 1-32 characters of a-z, 0-9 and '-', starting with a letter or digit (e.g. "coding")`}},
		{"not a table", base + "[profiles]\ncoding = 5\n", []string{
			`10:1: profiles.coding: a profile must be a table; write [profiles.coding] followed by its keys`}},
		{"profiles not a table", base + "profiles = 5\n", nil}, // a root key after a table belongs to it: see below
		{"unknown server", base + "[profiles.p]\nservers = [\"github\", \"githb\"]\n", []string{
			`10:1: profiles.p.servers: entry 2 ("githb") is not a server of this registry; did you mean "github"?`}},
		{"unknown server, no guess", base + "[profiles.p]\nservers = [\"github\", \"zzzzzz\"]\n", []string{
			`10:1: profiles.p.servers: entry 2 ("zzzzzz") is not a server of this registry; its servers are "github", "gitlab", "off"`}},
		{"unknown tag", base + "[profiles.p]\ntags = [\"codin\"]\n", []string{
			`9:1: profiles.p: selects no server: no server of this registry is in its servers or has one of its tags`,
			`10:1: profiles.p.tags: entry 1 ("codin") is not a tag of any server; did you mean "coding"?`}},
		{"only disabled", base + "[profiles.p]\nservers = [\"off\"]\n", []string{
			`9:1: profiles.p: selects no enabled server: its servers and tags choose only "off", which is disabled; enable one, or choose others with servers or tags`}},
		{"none enabled", "[servers.off]\ncommand = \"x\"\nenabled = false\n[profiles.all]\nmode = \"full\"\n", []string{
			`4:1: profiles.all: selects no server: with neither servers nor tags it takes every enabled server, and none is enabled; enable a server or remove the profile`}},
		// Only a glob whose server part is plain text is checked; a
		// disabled server's glob stays valid.
		{"include of another server", base + "[profiles.p]\nservers = [\"github\", \"off\"]\ninclude = [\"githb__*\", \"gitlab__*\", \"off__*\", \"gitl*__*\", \"*__x\", \"git*__y\", \"[g]itlab__*\", \"\\\\gitlab__*\", \"read_*\"]\n", []string{
			`11:1: profiles.p.include: "githb__*" matches no server of this profile: the text before "__" is matched against the names of its servers ("github", "off"); did you mean "github__*"?`,
			`11:1: profiles.p.include: "gitlab__*" matches no server of this profile: the text before "__" is matched against the names of its servers ("github", "off"); "gitlab" is not one of them: add it to servers, or give it one of the profile's tags`}},
		{"include, separator in server names", "[hub]\nseparator = \"-\"\n[servers.my-server]\ncommand = \"x\"\nprefix = \"ms\"\n[profiles.p]\ninclude = [\"my-*\", \"my-server-read\", \"mi-*\"]\n", []string{
			`7:1: profiles.p.include: "mi-*" matches no server of this profile: the text before "-" is matched against the names of its servers ("my-server")`}},
		{"bad include", base + "[profiles.p]\ninclude = [\"[\"]\n", []string{
			`10:1: profiles.p.include: "[" is not a valid pattern; use path.Match syntax: * matches any run of characters, ? one character, [abc] a set`}},
		{"mode", base + "[profiles.p]\nmode = \"fast\"\nprefixed = \"yes\"\n", []string{
			`10:1: profiles.p.mode: "fast" is not a mode; use "full" (the profile's tools as they are, the default) or "search" (three tools that find, describe and call them)`,
			`11:1: profiles.p.prefixed: must be true or false, not a string`}},
		{"unknown profile key", base + "[profiles.p]\nserver = [\"github\"]\n", []string{
			`10:1: profiles.p.server: unknown key; did you mean servers?`}},
		{"unknown top key", base + "[profile.p]\n", []string{
			`9:1: profile: unknown key; did you mean profiles?`}},
		{"override of unknown server", base + "[overrides.\"githb__x\"]\ndescription = \"d\"\n", []string{
			`9:1: overrides.githb__x: names server "githb", which this registry does not have; did you mean "github"?`}},
		{"override without separator", base + "[overrides.search]\ndescription = \"d\"\n", []string{
			`9:1: overrides.search: "search" is not a qualified tool name: it has no "__"; write the server's name, "__" and the tool's own name, as in "github__create_issue"`}},
		{"override without tool", base + "[overrides.\"github__\"]\ndescription = \"d\"\n", []string{
			`9:1: overrides.github__: names no tool; write the tool's own name after "github__"`}},
		{"override sets nothing", base + "[profiles.p.overrides.\"github__x\"]\n", []string{
			`9:1: profiles.p.overrides.github__x: sets nothing; give name, title, description, annotations or args`}},
		{"override not a table", base + "[overrides]\ngithub__x = \"d\"\n", []string{
			`10:1: overrides.github__x: an override must be a table; write [overrides.github__x] followed by name, title, description, annotations or args`}},
		{"overrides not a table", base + "[profiles.p]\noverrides = [1]\n", []string{
			`10:1: profiles.p.overrides: must be a table of tool overrides; write [profiles.p.overrides."SERVER__TOOL"] tables, one per tool`}},
		{"override values", base + `[profiles.p.overrides."github__x"]
name = "new name"
rename = "y"
title = 1
annotations = { readonly = true, destructiveHint = "no" }
args = { when = 2024-01-02, deep = { at = 10:00:00 }, f = nan, list = [1979-05-27T07:32:00Z], "" = 1 }
`, []string{
			`10:1: profiles.p.overrides.github__x.name: "new name" is not a tool name clients accept; use 1-64 characters of A-Z, a-z, 0-9, '_', '.' and '-'`,
			`11:1: profiles.p.overrides.github__x.rename: unknown key; did you mean name?`,
			`12:1: profiles.p.overrides.github__x.title: must be a string, not an integer`,
			`13:17: profiles.p.overrides.github__x.annotations.readonly: unknown key; did you mean readOnlyHint?`,
			`13:34: profiles.p.overrides.github__x.annotations.destructiveHint: must be true or false, not a string`,
			`14:10: profiles.p.overrides.github__x.args.when: is a TOML date or time, which JSON has no type for; quote it as a string, e.g. "2025-01-02T15:04:05Z"`,
			`14:38: profiles.p.overrides.github__x.args.deep.at: is a TOML date or time, which JSON has no type for; quote it as a string, e.g. "2025-01-02T15:04:05Z"`,
			`14:55: profiles.p.overrides.github__x.args.f: nan and inf have no JSON form; use a number or a string`,
			`14:64: profiles.p.overrides.github__x.args.list: is a TOML date or time, which JSON has no type for; quote it as a string, e.g. "2025-01-02T15:04:05Z"`,
			`14:95: profiles.p.overrides.github__x.args."": an argument name must not be empty`}},
		{"same name twice", base + "[overrides.\"github__a\"]\nname = \"n\"\n[overrides.\"gitlab__b\"]\nname = \"n\"\n[profiles.p.overrides.\"gitlab__c\"]\nname = \"n\"\n", []string{
			`12:1: overrides.gitlab__b.name: "n" is also the name of overrides.github__a (line 10); two tools of one view cannot share a name`,
			`14:1: profiles.p.overrides.gitlab__c.name: "n" is also the name of overrides.github__a (line 10) in profile "p"; two tools of one view cannot share a name`}},
		{"inline profile", "profiles.p = { servers = [\"nope\"], overrides = { \"github__x\" = { name = \"a b\" } } }\n" + base, []string{
			`1:1: profiles.p: selects no server: no server of this registry is in its servers or has one of its tags`,
			`1:16: profiles.p.servers: entry 1 ("nope") is not a server of this registry; its servers are "github", "gitlab", "off"`,
			`1:66: profiles.p.overrides.github__x.name: "a b" is not a tool name clients accept; use 1-64 characters of A-Z, a-z, 0-9, '_', '.' and '-'`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == nil {
				return
			}
			errs := parseErrors(t, tc.src, envOf())
			var got []string
			for _, e := range errs {
				got = append(got, strings.TrimPrefix(e.Error(), "hub.toml:"))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
	// profiles = 5 at the root.
	errs := parseErrors(t, "profiles = 5\n"+base, envOf())
	if len(errs) != 1 || errs[0].Error() != "hub.toml:1:1: profiles: profiles must be a table of profiles; write [profiles.NAME] tables" {
		t.Errorf("profiles = 5: %v", errs)
	}
}

// A profile's problem does not refuse the file for the hub, nor mark a
// server failed; a server's problem does not become a profile's.
func TestParseServingProfiles(t *testing.T) {
	src := base + `[servers.needs]
command = "x"
tags = "web"
env = { T = "${NOPE}" }
[profiles.bad]
servers = ["github", "githb"]
mode = "fast"
[profiles.good]
servers = ["needs"]
[profiles.web]
tags = ["web"]
[profiles]
scalar = 1
`
	reg, err := ParseServing("hub.toml", []byte(src), envOf())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*Profile{}
	for _, p := range reg.Profiles {
		got[p.Name] = p
	}
	bad := got["bad"]
	if bad == nil || bad.Problem != `hub.toml:14:1: profiles.bad.servers: entry 2 ("githb") is not a server of this registry; did you mean "github"?`+"\n"+
		`hub.toml:15:1: profiles.bad.mode: "fast" is not a mode; use "full" (the profile's tools as they are, the default) or "search" (three tools that find, describe and call them)` {
		t.Errorf("bad: %+v", bad)
	}
	// What parsed is kept; a bad mode stays the default.
	if !reflect.DeepEqual(bad.Servers, []string{"github", "githb"}) || bad.Mode != ModeFull || !bad.Prefixed {
		t.Errorf("bad kept: %+v", bad)
	}
	// A server's unset variable, or its tags of the wrong type, are its
	// own problems.
	if got["good"].Problem != "" || got["web"].Problem != "" {
		t.Errorf("a server's problem became a profile's: %q %q", got["good"].Problem, got["web"].Problem)
	}
	if s := got["scalar"]; s == nil || !reflect.DeepEqual(*s, Profile{Name: "scalar", Prefixed: true, Mode: ModeFull, Line: 21,
		Problem:   "hub.toml:21:1: profiles.scalar: a profile must be a table; write [profiles.scalar] followed by its keys",
		problemID: "profiles.scalar: a profile must be a table; write [profiles.scalar] followed by its keys"}) {
		t.Errorf("scalar: %+v", s)
	}
	for _, s := range reg.Servers {
		if (s.Problem != "") != (s.Name == "needs") {
			t.Errorf("server %s: problem %q", s.Name, s.Problem)
		}
	}
	if p := reg.Server("needs").Problem; strings.Contains(p, "profiles") {
		t.Errorf("needs: %q", p)
	}
	// [overrides] is like [hub]: its problem refuses the file.
	_, err = ParseServing("hub.toml", []byte(base+"[overrides.\"nope__x\"]\nname = \"y\"\n"), envOf())
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Key != "overrides.nope__x" {
		t.Errorf("overrides: %v", err)
	}
	// Parse refuses a bad profile.
	if _, err := Parse("hub.toml", []byte(base+"[profiles.p]\nservers = [\"x\"]\n"), envOf()); err == nil {
		t.Error("Parse accepted a bad profile")
	}
}

func TestDiffViews(t *testing.T) {
	old, err := ParseServing("hub.toml", []byte(profilesExample), envOf())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, src string
		views     bool
		toggled   []string
	}{
		{"moved", "# a comment\n\n" + profilesExample, false, nil},
		{"profile", strings.Replace(profilesExample, `mode = "search"`, `mode = "full"`, 1), true, nil},
		{"profile override", strings.Replace(profilesExample, `limit = 10`, `limit = 11`, 1), true, nil},
		{"global override", strings.Replace(profilesExample, `"Searches code"`, `"Finds code"`, 1), true, nil},
		{"tags", strings.Replace(profilesExample, `tags = ["coding", "web"]`, `tags = ["coding"]`, 1), true, []string{"github"}},
		{"problem", strings.Replace(profilesExample, "[profiles.plain]\n", "[profiles.plain]\nx = 1\n", 1), true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			new, err := ParseServing("hub.toml", []byte(tc.src), envOf())
			if err != nil {
				t.Fatal(err)
			}
			c := Diff(old, new)
			if c.Views != tc.views || !reflect.DeepEqual(c.Toggled, tc.toggled) || c.Empty() == tc.views {
				t.Errorf("changes %+v, want Views %v, Toggled %v", c, tc.views, tc.toggled)
			}
		})
	}
	if c := Diff(nil, old); !c.Views {
		t.Error("nil to profiles: no Views")
	}
	plain := mustParse(t, "[servers.a]\ncommand = \"x\"\n", envOf())
	if c := Diff(nil, plain); c.Views {
		t.Error("nil to no profiles: Views")
	}
}

func TestProfileSelection(t *testing.T) {
	gh := &Server{Name: "github", Tags: []string{"coding", "web"}}
	fs := &Server{Name: "fs"}
	for _, tc := range []struct {
		p      Profile
		gh, fs bool
	}{
		{Profile{}, true, true},
		{Profile{Servers: []string{"fs"}}, false, true},
		{Profile{Tags: []string{"web"}}, true, false},
		{Profile{Servers: []string{"fs"}, Tags: []string{"coding"}}, true, true},
		{Profile{Tags: []string{"other"}}, false, false},
	} {
		if tc.p.SelectsServer(gh) != tc.gh || tc.p.SelectsServer(fs) != tc.fs {
			t.Errorf("%+v: github %v fs %v", tc.p, tc.p.SelectsServer(gh), tc.p.SelectsServer(fs))
		}
	}
	p := Profile{Include: []string{"github__*", "fs__read_*"}, Exclude: []string{"*__delete_*"}}
	for name, want := range map[string]bool{
		"github__create_issue": true, "github__delete_repo": false, "fs__read_file": true, "fs__write_file": false,
	} {
		if p.AllowsTool(name) != want {
			t.Errorf("AllowsTool(%s) = %v", name, !want)
		}
	}
	if all := (Profile{Exclude: []string{"*__delete_*"}}); !all.AllowsTool("fs__write") || all.AllowsTool("fs__delete_x") {
		t.Error("no include: every tool but the excluded")
	}
}

func TestToolOverrideMerge(t *testing.T) {
	reg := mustParse(t, profilesExample+`
[overrides."github__create_issue"]
name = "global_name"
description = "global"
annotations = { readOnlyHint = false, openWorldHint = true }
args = { owner = "other", extra = true }
`, envOf())
	if q := reg.Qualified("github", "create_issue"); q != "github__create_issue" {
		t.Fatalf("Qualified: %s", q)
	}
	coding := reg.Profile("coding")
	got := reg.ToolOverride(coding, "github__create_issue")
	want := &ToolOverride{Name: "new_issue", Title: "New issue", Description: "Opens an issue",
		Annotations: raws("readOnlyHint", "true", "destructiveHint", "false", "title", `"Issue"`, "openWorldHint", "true"),
		Args: raws("owner", `"acme"`, "repo", `"web"`, "limit", "10", "labels", `["a"]`,
			"opts", `{"x":1,"y":"<b>"}`, "extra", "true")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merged:\n got %+v\nwant %+v", got, want)
	}
	// The global override alone, for /mcp and a profile without its own.
	g := reg.Overrides["github__create_issue"]
	if reg.ToolOverride(nil, "github__create_issue") != g || reg.ToolOverride(reg.Profile("plain"), "github__create_issue") != g {
		t.Error("global override not returned as it is")
	}
	// The merge does not change the global one.
	if g.Name != "global_name" || string(g.Args["owner"]) != `"other"` || len(g.Annotations) != 2 {
		t.Errorf("global changed: %+v", g)
	}
	if reg.ToolOverride(coding, "fs__read") != nil {
		t.Error("override of an unchanged tool")
	}
	if o := reg.ToolOverride(coding, "github__search_code"); o == nil || o.Description != "Searches code" {
		t.Errorf("global in a profile: %+v", o)
	}
}

const editProfiles = `[servers.github]
command = "gh"
tags = ["coding"]

[servers.fs]
command = "fs"

[servers.web]
command = "w"
tags = ["coding"]

[profiles.files]
servers = ["fs"]

[profiles.coding]
tags = ["coding"]

[profiles.coding.overrides."fs__read"]
description = "Reads"
`

func TestEditKeepsProfilesWhole(t *testing.T) {
	path := writeFile(t, editProfiles, 0o600)
	for _, tc := range []struct {
		name string
		edit func() error
		want string
	}{
		{"remove named", func() error { return RemoveServer(path, "fs") },
			`registry: not removing server "fs" from hub.toml: profile "coding" changes one of its tools in profiles.coding.overrides.fs__read; remove that table first; ` +
				`profile "files" names it in profiles.files.servers; remove it from profiles.files.servers first (nothing was changed)`},
		{"disable the only one", func() error { return SetEnabled(path, "fs", false) },
			`registry: not disabling server "fs" in hub.toml: profile "files" would select no enabled server, as "fs" is the only one it selects; ` +
				`give it another (in profiles.files.servers or profiles.files.tags) first, or remove [profiles.files] (nothing was changed)`},
	} {
		err := tc.edit()
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s:\n got %v\nwant %s", tc.name, err, tc.want)
		}
		if got := readFile(t, path); got != editProfiles {
			t.Fatalf("%s: the file changed:\n%s", tc.name, got)
		}
	}
	// Disabling one of two tagged servers leaves the profile one.
	if err := SetEnabled(path, "web", false); err != nil {
		t.Fatal(err)
	}
	// Now github is coding's only enabled server.
	err := RemoveServer(path, "github")
	if err == nil || !strings.Contains(err.Error(), `profile "coding" would select no enabled server, as "github" is the only one it selects`) {
		t.Fatalf("remove the last tagged: %v", err)
	}
	if err := RemoveServer(path, "web"); err != nil {
		t.Fatal(err)
	}
	// A global override of the server blocks its removal too.
	path = writeFile(t, "[servers.a]\ncommand = \"x\"\n[servers.b]\ncommand = \"y\"\n[overrides.\"a__t\"]\nname = \"z\"\n", 0o600)
	err = RemoveServer(path, "a")
	if err == nil || !strings.Contains(err.Error(), `overrides.a__t changes one of its tools; remove that table first`) {
		t.Fatalf("global override: %v", err)
	}
}

// Tags round-trip through an edit.
func TestAddServerTags(t *testing.T) {
	path := writeFile(t, editProfiles, 0o600)
	spec := ServerSpec{Name: "fs", Command: "fs2", Tags: []string{"coding", "files"}}
	if err := AddServer(path, spec, true); err != nil {
		t.Fatal(err)
	}
	reg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := reg.Server("fs").Spec(); !reflect.DeepEqual(got.Tags, spec.Tags) || !strings.Contains(readFile(t, path), `tags = ["coding", "files"]`) {
		t.Errorf("tags: %+v\n%s", got, readFile(t, path))
	}
}

// twoServers is github (tagged coding) and gitlab: lines 1-5.
const twoServers = "[servers.github]\ncommand = \"gh\"\ntags = [\"coding\"]\n[servers.gitlab]\ncommand = \"gl\"\n"

func serving(t *testing.T, src string) *Registry {
	t.Helper()
	reg, err := ParseServing("hub.toml", []byte(src), envOf())
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// A key of the wrong type is the profile's problem, which the hub does not
// serve; what its selection would be is not guessed at, so it is the only
// problem.
func TestProfileWrongTypes(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"servers = { github = true }", "hub.toml:7:1: profiles.p.servers: must be an array of strings, like [\"a\", \"b\"], not a table"},
		{"tags = \"coding\"", "hub.toml:7:1: profiles.p.tags: must be an array of strings, like [\"a\", \"b\"], not a string"},
		{"servers = [\"github\"]\nexclude = \"*__delete_*\"", "hub.toml:8:1: profiles.p.exclude: must be an array of strings, like [\"a\", \"b\"], not a string"},
		{"servers = [\"github\"]\nexclude = [\"*__delete_*\", 1]", "hub.toml:8:1: profiles.p.exclude: entry 2 must be a string, not an integer"},
		{"servers = [\"github\"]\n[profiles.p.overrides.\"github__push\"]\nargs = { owner = \"acme\", repo = 1979-05-27 }",
			"hub.toml:9:26: profiles.p.overrides.github__push.args.repo: is a TOML date or time, which JSON has no type for; quote it as a string, e.g. \"2025-01-02T15:04:05Z\""},
	} {
		if p := serving(t, twoServers+"[profiles.p]\n"+tc.src+"\n").Profile("p"); p.Problem != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.src, p.Problem, tc.want)
		}
	}
}

// A server's invalid tag is its own problem: it selects nothing, and no
// profile's tags are called unknown because of it.
func TestInvalidServerTag(t *testing.T) {
	reg := serving(t, "[servers.a]\ncommand = \"x\"\ntags = [\"ok\", \"Web\"]\n[servers.b]\ncommand = \"y\"\n[profiles.p]\ntags = [\"web\"]\n[profiles.q]\ntags = [\"wbe\", \"ok\"]\n")
	for _, name := range []string{"p", "q"} {
		if p := reg.Profile(name).Problem; p != "" {
			t.Errorf("server a's problem became profile %s's: %s", name, p)
		}
	}
	a := reg.Server("a")
	if !reflect.DeepEqual(a.Tags, []string{"ok"}) || !strings.Contains(a.Problem, `entry 2 ("Web") is not a tag`) {
		t.Errorf("a: tags %q, problem %q", a.Tags, a.Problem)
	}
	if reg.Profile("p").SelectsServer(a) {
		t.Error("an invalid tag selects its server")
	}
}

// Moving a profile with a problem changes no view.
func TestDiffMovedBadProfile(t *testing.T) {
	src := twoServers + "[profiles.p]\nservers = [\"github\", \"nope\"]\n"
	old, moved := serving(t, src), serving(t, "# note\n"+src)
	if c := Diff(old, moved); c.Views || !c.Empty() {
		t.Errorf("moved: %+v", c)
	}
	if old.Profile("p").Problem == moved.Profile("p").Problem {
		t.Error("the problem's position did not move")
	}
	if c := Diff(old, serving(t, strings.Replace(src, "nope", "nada", 1))); !c.Views {
		t.Error("another problem: no Views")
	}
}

// A profile with an invalid name, even "", is a bad profile like another:
// it does not refuse the file for the hub, nor block an edit.
func TestEmptyProfileName(t *testing.T) {
	src := twoServers + "[profiles.\"\"]\nservers = [\"github\"]\n"
	p := serving(t, src).Profile("")
	if p == nil || !strings.Contains(p.Problem, `profile name "" is not valid`) {
		t.Fatalf("profile \"\": %+v", p)
	}
	if _, err := Parse("hub.toml", []byte(src), envOf()); err == nil {
		t.Error("Parse accepted it")
	}
	path := writeFile(t, src, 0o600)
	if err := SetEnabled(path, "gitlab", false); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); !strings.Contains(got, "[servers.gitlab]\nenabled = false\n") {
		t.Errorf("not disabled:\n%s", got)
	}
}

// Two overrides giving one name clash in a profile that shows both tools,
// the global one and the profile's, whichever comes later in the file.
func TestOverrideNamesAcrossTables(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"[overrides.\"github__a\"]\nname = \"n\"\n[profiles.p.overrides.\"gitlab__c\"]\nname = \"n\"\n",
			`hub.toml:9:1: profiles.p.overrides.gitlab__c.name: "n" is also the name of overrides.github__a (line 7) in profile "p"; two tools of one view cannot share a name`},
		{"[profiles.p.overrides.\"gitlab__c\"]\nname = \"n\"\n[overrides.\"github__a\"]\nname = \"n\"\n",
			`hub.toml:9:1: overrides.github__a.name: "n" is also the name of profiles.p.overrides.gitlab__c (line 7) in profile "p"; two tools of one view cannot share a name`},
		{"[profiles.p.overrides.\"gitlab__c\"]\nname = \"n\"\n[profiles.p.overrides.\"gitlab__d\"]\nname = \"n\"\n",
			`hub.toml:9:1: profiles.p.overrides.gitlab__d.name: "n" is also the name of profiles.p.overrides.gitlab__c (line 7) in profile "p"; two tools of one view cannot share a name`},
	} {
		if p := serving(t, twoServers+tc.src).Profile("p"); p.Problem != tc.want {
			t.Errorf("%s\n got %s\nwant %s", tc.src, p.Problem, tc.want)
		}
		if _, err := Parse("hub.toml", []byte(twoServers+tc.src), envOf()); err == nil {
			t.Errorf("Parse accepted:\n%s", tc.src)
		}
	}
	// The profile's override replaces the global name; a tool the profile
	// does not show cannot clash.
	for _, src := range []string{
		"[overrides.\"github__a\"]\nname = \"n\"\n[overrides.\"gitlab__c\"]\nname = \"m\"\n[profiles.p.overrides.\"github__a\"]\nname = \"m2\"\n",
		"[overrides.\"github__a\"]\nname = \"n\"\n[profiles.p]\nservers = [\"gitlab\"]\n[profiles.p.overrides.\"gitlab__c\"]\nname = \"n\"\n",
		"[overrides.\"github__a\"]\nname = \"n\"\n[profiles.p]\nexclude = [\"github__*\"]\n[profiles.p.overrides.\"gitlab__c\"]\nname = \"n\"\n",
	} {
		if _, err := Parse("hub.toml", []byte(twoServers+src), envOf()); err != nil {
			t.Errorf("%s\n%v", src, err)
		}
	}
}

// A disabled server is parked: an include glob that names it stays valid.
// Removing a server that a glob names, or whose tag a profile selects by
// and no other server has, is refused with what to change first.
func TestEditIncludeAndTags(t *testing.T) {
	src := twoServers + "[profiles.p]\nservers = [\"github\", \"gitlab\"]\ninclude = [\"github__*\", \"gitlab__*\"]\n"
	path := writeFile(t, src, 0o600)
	if err := SetEnabled(path, "gitlab", false); err != nil {
		t.Fatalf("disable gitlab: %v", err)
	}
	if _, err := Load(path); err != nil {
		t.Fatal(err)
	}

	src = twoServers + "[servers.fs]\ncommand = \"fs\"\n[profiles.all]\ninclude = [\"gitlab__*\", \"fs__*\"]\n[profiles.c]\ntags = [\"coding\"]\nservers = [\"fs\"]\n"
	path = writeFile(t, src, 0o600)
	for _, tc := range []struct{ name, want string }{
		{"gitlab", `registry: not removing server "gitlab" from hub.toml: profile "all" names it in profiles.all.include ("gitlab__*"); remove or change that glob first (nothing was changed)`},
		{"github", `registry: not removing server "github" from hub.toml: profile "c" selects by tag "coding", which no other server has; remove the tag from profiles.c.tags first (nothing was changed)`},
	} {
		if err := RemoveServer(path, tc.name); err == nil || err.Error() != tc.want {
			t.Errorf("remove %s:\n got %v\nwant %s", tc.name, err, tc.want)
		}
	}
	if got := readFile(t, path); got != src {
		t.Fatalf("the file changed:\n%s", got)
	}
	for _, name := range []string{"gitlab", "github"} {
		if err := SetEnabled(path, name, false); err != nil {
			t.Errorf("disable %s: %v", name, err)
		}
	}
}

// Keys of inline tables inside arrays have no path: the locator must not
// record them as top-level keys.
func TestLocateInlineTableInArray(t *testing.T) {
	l := locate([]byte("x = [{ servers = 1 }]\n[servers.a]\ncommand = \"x\"\n"))
	if l.entry("servers") >= 0 {
		t.Error("an inline table in an array recorded its key")
	}
	if ln, col := l.pos([]string{"servers"}); ln != 2 || col != 1 {
		t.Errorf("pos(servers) = %d:%d", ln, col)
	}
}
