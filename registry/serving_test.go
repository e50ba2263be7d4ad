package registry

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

// One server's bad entry marks that server failed; the rest of the same
// save is served.
func TestParseServingKeepsGoodServers(t *testing.T) {
	src := `
[servers.good]
command = "good-server"

[servers.needs-var]
command = "x"
env = { TOKEN = "${MISSING_TOKEN}" }

[servers.bad-url]
url = "ftp://nowhere"

[servers.dup]
command = "y"
prefix = "good"

[servers.scalar]
`
	src += "\n[servers]\nnot-a-table = 5\n"
	reg, err := ParseServing("/x/hub.toml", []byte(src), env(nil))
	if err != nil {
		t.Fatalf("ParseServing: %v", err)
	}
	problems := map[string]string{}
	for _, s := range reg.Servers {
		problems[s.Name] = s.Problem
	}
	if problems["good"] != "" {
		t.Errorf("good server has a problem: %s", problems["good"])
	}
	for name, want := range map[string]string{
		"needs-var":   "${MISSING_TOKEN} is not set",
		"bad-url":     "servers.bad-url.url",
		"dup":         `prefix "good" is also used by server "good"`,
		"scalar":      "has neither command nor url",
		"not-a-table": "must be a table",
	} {
		if !strings.Contains(problems[name], want) {
			t.Errorf("%s: problem %q does not say %q", name, problems[name], want)
		}
		if !strings.HasPrefix(problems[name], "/x/hub.toml:") {
			t.Errorf("%s: problem %q does not start with file:line", name, problems[name])
		}
	}
	if !slices.IsSortedFunc(reg.Servers, func(a, b *Server) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("servers are not sorted by name")
	}
	// Parse, for validate and edits, still refuses the whole file.
	if _, err := Parse("/x/hub.toml", []byte(src), env(nil)); err == nil {
		t.Fatal("Parse accepted a file with bad entries")
	}
}

// A problem outside any server refuses the file: the hub keeps its last
// good registry.
func TestParseServingRefusesHubProblems(t *testing.T) {
	for _, src := range []string{
		"[hub]\nauth = \"maybe\"\n[servers.a]\ncommand = \"a\"\n",
		"[servers.a\ncommand = 1",
	} {
		_, err := ParseServing("hub.toml", []byte(src), env(nil))
		var errs Errors
		if !errors.As(err, &errs) {
			t.Errorf("%q: err = %v, want Errors", src, err)
		}
	}
}

// Fixing a server's problem changes its Hash, so the hub replaces the
// failed entry with a real connection.
func TestProblemIsPartOfHash(t *testing.T) {
	// The prefix is a live setting, outside Hash: only the problem tells
	// that b must now connect.
	src := "[servers.a]\ncommand = \"a\"\nprefix = \"p\"\n[servers.b]\ncommand = \"b\"\nprefix = \"%s\"\n"
	before, _ := ParseServing("hub.toml", fmt.Appendf(nil, src, "p"), env(nil))
	after, _ := ParseServing("hub.toml", fmt.Appendf(nil, src, "q"), env(nil))
	if before.Server("b").Problem == "" || after.Server("b").Problem != "" {
		t.Fatalf("problems: before %q, after %q", before.Server("b").Problem, after.Server("b").Problem)
	}
	if c := Diff(before, after); !slices.Equal(c.Changed, []string{"b"}) {
		t.Errorf("Diff = %+v, want a changed", c)
	}
}

func TestInheritance(t *testing.T) {
	src := `
[hub]
token_env = "HUB_TOKEN"
env_passthrough = ["AWS_*", "GOPATH"]

[servers.plain]
command = "a"
env_passthrough = ["GOPATH", "JAVA_HOME"]

[servers.all]
command = "b"
inherit_env = true
env = { OWN = "${OWN_SECRET}" }

[servers.other]
url = "https://example.com/mcp"
headers = { Authorization = "Bearer ${REMOTE_TOKEN}" }

[servers.aws]
url = "https://aws.example.com/mcp"
headers = { "X-Key" = "${AWS_SECRET_ACCESS_KEY}" }

[servers.named]
command = "c"
env_passthrough = ["AWS_SECRET_ACCESS_KEY"]

[servers.lower]
command = "e"
env_passthrough = ["aws_*"]

[servers.parked]
command = "d"
enabled = false
env = { K = "${NOT_SET_ANYWHERE}" }
`
	reg, err := Parse("hub.toml", []byte(src), env(map[string]string{"OWN_SECRET": "s", "REMOTE_TOKEN": "r", "AWS_SECRET_ACCESS_KEY": "a"}))
	if err != nil {
		t.Fatal(err)
	}
	plain, all, other := reg.Server("plain"), reg.Server("all"), reg.Server("other")
	if want := []string{"AWS_*", "GOPATH", "JAVA_HOME"}; !slices.Equal(plain.EnvAllow, want) {
		t.Errorf("plain EnvAllow = %q, want %q", plain.EnvAllow, want)
	}
	// AWS_* would pass another server's secret: it is held back. The
	// hub's own secrets never pass.
	hub := []string{"MCPHUB_SECRET_KEY", "MCPHUB_SECRET_KEY_FILE", "MCPHUB_STORE", "PGPASSWORD", "PGPASSFILE", "PGSSLPASSWORD"}
	if want := append([]string{"AWS_SECRET_ACCESS_KEY", "HUB_TOKEN"}, hub...); !slices.Equal(plain.EnvDeny, want) {
		t.Errorf("plain EnvDeny = %q, want %q", plain.EnvDeny, want)
	}
	// A glob in another case matches as Windows would: still held back.
	if want := append([]string{"AWS_SECRET_ACCESS_KEY", "HUB_TOKEN"}, hub...); !slices.Equal(reg.Server("lower").EnvDeny, want) {
		t.Errorf("lower EnvDeny = %q, want %q", reg.Server("lower").EnvDeny, want)
	}
	// Named exactly, it passes: the user asked for that one.
	if want := append([]string{"HUB_TOKEN"}, hub...); !slices.Equal(reg.Server("named").EnvDeny, want) {
		t.Errorf("named EnvDeny = %q, want %q", reg.Server("named").EnvDeny, want)
	}
	// A secret no one can inherit (not set) is not in any deny list.
	if want := append([]string{"AWS_SECRET_ACCESS_KEY", "HUB_TOKEN", "OWN_SECRET", "REMOTE_TOKEN"}, hub...); !all.InheritEnv || !slices.Equal(all.EnvDeny, want) {
		t.Errorf("all: InheritEnv %v, EnvDeny = %q, want %q", all.InheritEnv, all.EnvDeny, want)
	}
	if other.EnvAllow != nil || other.EnvDeny != nil {
		t.Errorf("a remote server got inheritance settings: %q %q", other.EnvAllow, other.EnvDeny)
	}
	if got := reg.SecretEnvNames(); !slices.Equal(got, []string{"AWS_SECRET_ACCESS_KEY", "HUB_TOKEN", "NOT_SET_ANYWHERE", "OWN_SECRET", "REMOTE_TOKEN"}) {
		t.Errorf("SecretEnvNames = %q", got)
	}

	// A remote server cannot take env_passthrough, and a bad glob is named.
	bad := "[servers.r]\nurl = \"https://example.com/mcp\"\ninherit_env = true\n[servers.s]\ncommand = \"s\"\nenv_passthrough = [\"[\"]\n"
	_, err = Parse("hub.toml", []byte(bad), env(nil))
	for _, want := range []string{"servers.r.inherit_env: inherit_env applies only to stdio servers", "servers.s.env_passthrough"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to say %q", err, want)
		}
	}
}

// Changing what a server inherits reconnects it; so does a new secret that
// an inherit_env server must now lose.
func TestInheritanceChangesHash(t *testing.T) {
	base := "[servers.a]\ncommand = \"a\"\ninherit_env = true\n[servers.b]\ncommand = \"b\"\n"
	more := base + "[servers.c]\ncommand = \"c\"\nenv = { K = \"${NEW_SECRET}\" }\n"
	lookup := env(map[string]string{"NEW_SECRET": "x"})
	r1, _ := Parse("hub.toml", []byte(base), lookup)
	r2, _ := Parse("hub.toml", []byte(more), lookup)
	c := Diff(r1, r2)
	if !slices.Equal(c.Changed, []string{"a"}) || !slices.Equal(c.Unchanged, []string{"b"}) {
		t.Errorf("Diff = %+v: want a (inherit_env) changed and b unchanged", c)
	}
	r3, _ := Parse("hub.toml", []byte("[hub]\nenv_passthrough = [\"X\"]\n"+base), lookup)
	if c := Diff(r1, r3); !slices.Equal(c.Changed, []string{"a", "b"}) {
		t.Errorf("Diff after [hub] env_passthrough = %+v: want both changed", c)
	}
}

func TestVars(t *testing.T) {
	s := ServerSpec{Env: map[string]string{"A": "${X}-${Y}", "B": "$$literal"}, Headers: map[string]string{"H": "Bearer ${Z}"}, Cwd: "${X}/dir"}
	if got := s.Vars(); !slices.Equal(got, []string{"X", "Y", "Z"}) {
		t.Errorf("Vars = %q", got)
	}
}

func TestSpecKeepsInheritance(t *testing.T) {
	spec := ServerSpec{Name: "a", Command: "a", EnvPassthrough: []string{"AWS_*"}, InheritEnv: true}
	text, err := encodeServer(spec)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := Parse("hub.toml", []byte(text), env(nil))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if got := reg.Servers[0].Spec(); !specEqual(got, spec) {
		t.Errorf("round trip: %+v, want %+v", got, spec)
	}
}

// An edit elsewhere that only moves a failed entry down the file leaves
// its Hash alone: the hub does not refuse it again as if it had changed.
func TestProblemHashIgnoresPosition(t *testing.T) {
	entry := "[servers.b]\ncommand = \"b\"\nenv = { T = \"${UNSET_T}\" }\n"
	before, _ := ParseServing("hub.toml", []byte(entry), env(nil))
	after, _ := ParseServing("hub.toml", []byte("# a comment\n\n[servers.a]\ncommand = \"a\"\n"+entry), env(nil))
	b0, b1 := before.Server("b"), after.Server("b")
	if b0.Problem == "" || b0.Problem == b1.Problem {
		t.Fatalf("problems %q and %q: want both set, at different lines", b0.Problem, b1.Problem)
	}
	if b0.Hash() != b1.Hash() {
		t.Error("moving a failed entry changed its Hash")
	}
}

// A failed server does not keep its prefix from a good one: the good one
// is served and the failed one is told of the clash too.
func TestFailedServerYieldsItsPrefix(t *testing.T) {
	src := "[servers.a]\ncommand = \"a\"\nprefix = \"p\"\nenv = { T = \"${UNSET_T}\" }\n[servers.b]\ncommand = \"b\"\nprefix = \"p\"\n"
	reg, err := ParseServing("hub.toml", []byte(src), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if p := reg.Server("b").Problem; p != "" {
		t.Errorf("b failed because of a's prefix: %s", p)
	}
	if p := reg.Server("a").Problem; !strings.Contains(p, "UNSET_T") || !strings.Contains(p, `also used by server "b"`) {
		t.Errorf("a's problem = %q, want the unset variable and the prefix clash", p)
	}
}

// The store's password reaches no stdio server: a variable [store] url
// refers to is held back like the hub's token, even from a server that
// inherits everything or names it.
func TestStorePasswordIsHeldBack(t *testing.T) {
	reg, err := Parse("hub.toml", []byte(`
[store]
url = "postgres://team:${TEAM_PG_PW}@db:5432/mcphub"

[servers.all]
command = "a"
inherit_env = true

[servers.named]
command = "b"
env_passthrough = ["TEAM_PG_PW"]
`), env(map[string]string{"TEAM_PG_PW": "pw"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"all", "named"} {
		if deny := reg.Server(name).EnvDeny; !slices.Contains(deny, "TEAM_PG_PW") || !slices.Contains(deny, "PGPASSWORD") {
			t.Errorf("%s: EnvDeny = %q; want the store's password variables", name, deny)
		}
	}
}
