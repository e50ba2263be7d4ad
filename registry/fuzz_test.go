package registry

import (
	"errors"
	"os"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse, ParseServing, Diff, the edit
// checks and the locator: no panics, every *Error and every profile has a
// position, and a registry compared with itself has no changes.
func FuzzParse(f *testing.F) {
	for _, p := range []string{"../hub.toml.example", "default.toml"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		"", "[hub]\nlisten = \"x\"\n", "[servers.a]\ncommand = \"x\"\nenv = { A = \"${B}\" }\n",
		"[servers.\"a b\"]\nurl = \"ftp://\"\n", "servers.a = { url = \"https://h\", headers = { A = \"${\" } }\n",
		"a = \"\"\"\n[x]\n\"\"\"\n", "[[servers]]\n", "[servers]\na.command.x = 1\n", "x = [\n# c\n1,\n]\n",
		"\ufeff[hub]\r\nauth = 'token'\r\n",
		profilesExample, "profiles.p = { servers = [\"a\"], overrides = { \"a__t\" = { args = { x = [{ y = 1 }] } } } }\n[servers.a]\ncommand = \"x\"\n",
		"[servers.a]\ncommand = \"x\"\ntags = [\"t\"]\n[profiles.p]\ntags = [\"t\", \"u\"]\ninclude = [\"a__*\", \"[__x\"]\n[profiles.p.overrides.\"a__t\"]\nargs = { d = 1979-05-27, f = inf }\n[overrides.\"a__t\"]\nname = \"n\"\n[overrides.a__u]\nname = \"n\"\n",
		"[hub]\nseparator = \"-\"\n[servers.a-b]\ncommand = \"x\"\n[overrides.\"a-b-t\"]\ntitle = \"t\"\n[profiles.x]\ninclude = [\"a-*-t\"]\n",
		"[servers.a]\ncommand = \"x\"\ntags = [\"T\", \"t\"]\nenabled = false\n[servers.b]\ncommand = \"y\"\n[profiles.\"\"]\nservers = { a = 1 }\n[profiles.p]\ntags = [\"t\"]\ninclude = [\"a__*\", \"c__*\"]\n[profiles.p.overrides.b__x]\nname = \"n\"\n[overrides.a__y]\nname = \"n\"\n",
	} {
		f.Add([]byte(s))
	}
	env := envOf("B", "1", "GITHUB_TOKEN", "x")
	f.Fuzz(func(t *testing.T, data []byte) {
		// What the hub reads: a registry with its servers' and profiles'
		// problems, or Errors.
		served, err := ParseServing("hub.toml", data, env)
		var serveErrs Errors
		switch {
		case err == nil:
			checkParsed(t, served)
			if c := Diff(served, served); !c.Empty() {
				t.Fatalf("Diff of a registry with itself: %+v", c)
			}
			if again, err := ParseServing("hub.toml", data, env); err != nil || !Diff(served, again).Empty() {
				t.Fatalf("a second parse differs: %v %+v", err, Diff(served, again))
			}
		case !errors.As(err, &serveErrs) || len(serveErrs) == 0:
			t.Fatalf("ParseServing: error is not a non-empty Errors: %T %v", err, err)
		}
		reg, err := Parse("hub.toml", data, env)
		if err == nil {
			if reg == nil {
				t.Fatal("nil registry without error")
			}
			checkParsed(t, reg)
			return
		}
		var errs Errors
		if !errors.As(err, &errs) || len(errs) == 0 {
			t.Fatalf("error is not a non-empty Errors: %T %v", err, err)
		}
		for _, e := range errs {
			if e.Line < 1 || e.Col < 1 {
				t.Fatalf("error without a position: %#v", e)
			}
		}
		// The locator runs on any text without panicking.
		l := locate(data)
		for _, h := range l.headers {
			_, _ = l.serverSpans(h.key[len(h.key)-1], true)
		}
	})
}

// checkParsed checks what Parse or ParseServing returned: every server and
// profile has a line, and the edit checks run on each server.
func checkParsed(t *testing.T, reg *Registry) {
	t.Helper()
	for _, s := range reg.Servers {
		_ = s.String()
		_ = s.Hash()
		if s.Line < 1 && s.Problem == "" {
			t.Fatalf("server %q has line %d", s.Name, s.Line)
		}
		_ = viewsNeed(reg, s.Name, true)
		_ = viewsNeed(reg, s.Name, false)
	}
	for _, p := range reg.Profiles {
		if p.Line < 1 {
			t.Fatalf("profile %q has line %d", p.Name, p.Line)
		}
	}
}
