package registry

import (
	"errors"
	"os"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse and to the locator: no panics,
// and every *Error has a position.
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
	} {
		f.Add([]byte(s))
	}
	env := envOf("B", "1", "GITHUB_TOKEN", "x")
	f.Fuzz(func(t *testing.T, data []byte) {
		reg, err := Parse("hub.toml", data, env)
		if err == nil {
			if reg == nil {
				t.Fatal("nil registry without error")
			}
			for _, s := range reg.Servers {
				_ = s.String()
				_ = s.Hash()
				if s.Line < 1 {
					t.Fatalf("server %q has line %d", s.Name, s.Line)
				}
			}
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
