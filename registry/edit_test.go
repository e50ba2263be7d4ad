package registry

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const commented = `# My registry. Keep this comment.
[hub]
listen = "127.0.0.1:7733"   # trailing comment

# The first server.
[servers.alpha]
command = "a"   # why a
args = ["--x"]

# Beta does things.
# Two comment lines.
[servers.beta]
command = "b"
enabled = true # keep me

[servers.beta.env]
B = "1"

[servers.gamma]
url = "https://g.example/mcp"
# gamma's commented-out key
# transport = "sse"
`

func writeFile(t *testing.T, text string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hub.toml")
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // beat the umask
		t.Fatal(err)
	}
	return path
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != want {
		t.Errorf("mode = %v, want %v", st.Mode().Perm(), want)
	}
}

func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestAddServerAppendsAndKeepsEverything(t *testing.T) {
	path := writeFile(t, commented, 0o640)
	prefix := ""
	spec := ServerSpec{
		Name:           "new",
		Command:        `C:\tools\srv "q"`,
		Args:           []string{"-y", "pkg@1", "tab\there", "ünï", "$HOME"},
		Env:            map[string]string{"TOKEN": "${TOK}", "weird key": "line\nbreak", "Z": "$$lit"},
		Cwd:            "~/src",
		Disabled:       true,
		Prefix:         &prefix,
		Share:          "session",
		Allow:          []string{"get_*"},
		Deny:           []string{"get_secret"},
		ConnectTimeout: 90 * time.Second,
		CallTimeout:    10 * time.Minute,
	}
	if err := AddServer(path, spec, false); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, path)
	if !strings.HasPrefix(got, commented+"\n[servers.new]\n") {
		t.Fatalf("the original text is not kept byte for byte:\n%s", got)
	}
	for _, want := range []string{`command = "C:\\tools\\srv \"q\""`, `connect_timeout = "1m30s"`, `call_timeout = "10m"`,
		`"weird key" = "line\nbreak"`, "[servers.new.env]", `enabled = false`, `prefix = ""`} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %s in\n%s", want, got)
		}
	}
	assertMode(t, path, 0o640)
	assertNoTempFiles(t, filepath.Dir(path))
	reg, err := Parse(path, []byte(got), envOf())
	if err != nil {
		t.Fatal(err)
	}
	if !specEqual(reg.Server("new").Spec(), spec) {
		t.Errorf("round trip: %+v", reg.Server("new").Spec())
	}
}

func TestAddServerDuplicateAndForce(t *testing.T) {
	path := writeFile(t, commented, 0o600)
	err := AddServer(path, ServerSpec{Name: "beta", Command: "x"}, false)
	if err == nil || !errors.Is(err, ErrServerExists) ||
		!strings.Contains(err.Error(), `server "beta" already exists in hub.toml (use --force to replace it)`) {
		t.Fatalf("duplicate: %v", err)
	}
	if readFile(t, path) != commented {
		t.Fatal("a refused add changed the file")
	}
	if err := AddServer(path, ServerSpec{Name: "beta", URL: "https://b.example/mcp"}, true); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(commented, "[servers.beta]\ncommand = \"b\"\nenabled = true # keep me\n\n[servers.beta.env]\nB = \"1\"\n",
		"[servers.beta]\nurl = \"https://b.example/mcp\"\n", 1)
	if got := readFile(t, path); got != want {
		t.Fatalf("force replace\n got:\n%s\nwant:\n%s", got, want)
	}
}

func TestAddServerCreatesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "hub.toml")
	if err := AddServer(path, ServerSpec{Name: "a", Command: "x"}, false); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "[servers.a]\ncommand = \"x\"\n" {
		t.Fatalf("new file: %q", got)
	}
	assertMode(t, path, 0o600)
}

func TestAddServerValidation(t *testing.T) {
	t.Setenv("MCPHUB_TEST_SET", "1")
	other := "[servers.other]\ncommand = \"x\"\nenv = { T = \"${MCPHUB_TEST_UNSET}\" }\n"
	tests := []struct {
		name string
		spec ServerSpec
		err  string
	}{
		{"unset var in another server does not block", ServerSpec{Name: "a", Command: "x"}, ""},
		{"set var in the new server", ServerSpec{Name: "a", Command: "x", Env: map[string]string{"T": "${MCPHUB_TEST_SET}"}}, ""},
		// Whether a variable is set is the hub's environment's business
		// (the CLI asks the hub): it never blocks an edit.
		{"unset var in the new server", ServerSpec{Name: "a", Command: "x", Env: map[string]string{"T": "${MCPHUB_TEST_UNSET}"}}, ""},
		{"unset var in a disabled new server", ServerSpec{Name: "a", Command: "x", Disabled: true, Env: map[string]string{"T": "${MCPHUB_TEST_UNSET}"}}, ""},
		{"invalid shape", ServerSpec{Name: "a", Command: "x", URL: "https://h"}, "servers.a: both command and url are set"},
		{"invalid name", ServerSpec{Name: "A b", Command: "x"}, `(e.g. "a-b")`},
		{"duplicate prefix", ServerSpec{Name: "a", Command: "x", Prefix: ptr("other")}, `prefix "other" is also used`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, other, 0o600)
			err := AddServer(path, tt.spec, false)
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
			if readFile(t, path) != other {
				t.Fatal("a refused add changed the file")
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestEditRefusesBrokenFile(t *testing.T) {
	// A problem outside any server's entry refuses every edit.
	path := writeFile(t, "[hub]\nauth = \"maybe\"\n[servers.a]\ncommand = \"x\"\n", 0o600)
	err := AddServer(path, ServerSpec{Name: "b", Command: "x"}, false)
	var errs Errors
	if err == nil || !errors.As(err, &errs) || errs[0].Line != 2 || !strings.Contains(err.Error(), "fix them first") {
		t.Fatalf("err = %v", err)
	}

	// Another server's bad entry does not block an edit: the hub serves
	// the rest and shows that one failed, and so may edits.
	broken := "[servers.a]\ncommand = \"x\"\nshare = \"all\"\n"
	path = writeFile(t, broken, 0o600)
	if err := AddServer(path, ServerSpec{Name: "b", Command: "x"}, false); err != nil {
		t.Fatalf("add beside a bad entry: %v", err)
	}
	if err := SetEnabled(path, "b", false); err != nil {
		t.Fatalf("disable beside a bad entry: %v", err)
	}
	// An edit that leaves the bad server enabled with its problem is
	// refused; one that disables it is not.
	if err := SetEnabled(path, "a", true); err != nil {
		t.Fatalf("enabling what is enabled changes nothing: %v", err)
	}
	if err := SetEnabled(path, "a", false); err != nil {
		t.Fatalf("disabling the bad server: %v", err)
	}
	if err := SetEnabled(path, "a", true); err == nil || !strings.Contains(err.Error(), "share") {
		t.Fatalf("enabling the bad server again: err = %v, want its problem", err)
	}
	// An edit may not add a problem of its own.
	if err := AddServer(path, ServerSpec{Name: "c", URL: "ftp://x"}, false); err == nil {
		t.Fatal("an add with a bad url was accepted")
	}
	if err := RemoveServer(path, "b"); err != nil {
		t.Fatal(err)
	}
	// Removing the broken server is allowed: it fixes the file.
	if err := RemoveServer(path, "a"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "" {
		t.Fatalf("after removing the only server: %q", got)
	}
	path = writeFile(t, "[servers.a\n", 0o600)
	if err := RemoveServer(path, "a"); err == nil || !strings.Contains(err.Error(), "does not parse") {
		t.Fatalf("syntax error: %v", err)
	}
}

func TestRemoveServer(t *testing.T) {
	tests := []struct {
		name, remove, want string
	}{
		{"middle with comments and subtable", "beta", `# My registry. Keep this comment.
[hub]
listen = "127.0.0.1:7733"   # trailing comment

# The first server.
[servers.alpha]
command = "a"   # why a
args = ["--x"]

[servers.gamma]
url = "https://g.example/mcp"
# gamma's commented-out key
# transport = "sse"
`},
		{"first", "alpha", `# My registry. Keep this comment.
[hub]
listen = "127.0.0.1:7733"   # trailing comment

# Beta does things.
# Two comment lines.
[servers.beta]
command = "b"
enabled = true # keep me

[servers.beta.env]
B = "1"

[servers.gamma]
url = "https://g.example/mcp"
# gamma's commented-out key
# transport = "sse"
`},
		{"last with trailing comments", "gamma", commented[:strings.Index(commented, "[servers.gamma]")-1]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, commented, 0o640)
			if err := RemoveServer(path, tt.remove); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, path); got != tt.want {
				t.Fatalf("got:\n%s\nwant:\n%s", got, tt.want)
			}
			assertMode(t, path, 0o640)
			assertNoTempFiles(t, filepath.Dir(path))
		})
	}
}

func TestRemoveServerScatteredTables(t *testing.T) {
	text := "[servers.a]\ncommand = \"x\"\n# b's comment\n[servers.b]\ncommand = \"y\"\n\n[servers.a.env]\nK = \"v\"\n\n[servers.c]\ncommand = \"z\"\n"
	path := writeFile(t, text, 0o600)
	if err := RemoveServer(path, "a"); err != nil {
		t.Fatal(err)
	}
	want := "# b's comment\n[servers.b]\ncommand = \"y\"\n\n[servers.c]\ncommand = \"z\"\n"
	if got := readFile(t, path); got != want {
		t.Fatalf("got:\n%q\nwant:\n%q", got, want)
	}
}

func TestRemoveServerErrors(t *testing.T) {
	path := writeFile(t, commented, 0o600)
	err := RemoveServer(path, "delta")
	if !errors.Is(err, ErrUnknownServer) || !strings.Contains(err.Error(), `no server "delta" in hub.toml; known servers: alpha, beta, gamma`) {
		t.Fatalf("unknown: %v", err)
	}
	dotted := "[servers]\na.command = \"x\"\n"
	path = writeFile(t, dotted, 0o600)
	if err := RemoveServer(path, "a"); err == nil || !strings.Contains(err.Error(), "not written as a [servers.a] table") {
		t.Fatalf("dotted: %v", err)
	}
	path = writeFile(t, "", 0o600)
	if err := RemoveServer(path, "a"); err == nil || !strings.Contains(err.Error(), "it has no servers") {
		t.Fatalf("empty: %v", err)
	}
}

func TestSetEnabled(t *testing.T) {
	path := writeFile(t, commented, 0o640)
	if err := SetEnabled(path, "beta", false); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(commented, "enabled = true # keep me", "enabled = false # keep me", 1)
	if got := readFile(t, path); got != want {
		t.Fatalf("replace:\n%s", got)
	}
	if err := SetEnabled(path, "gamma", false); err != nil {
		t.Fatal(err)
	}
	want = strings.Replace(want, "[servers.gamma]\n", "[servers.gamma]\nenabled = false\n", 1)
	if got := readFile(t, path); got != want {
		t.Fatalf("insert:\n%s", got)
	}
	assertMode(t, path, 0o640)

	// Already in that state: nothing is written.
	st1, _ := os.Stat(path)
	if err := os.Chmod(path, 0o400); err != nil { // a write would have to replace it
		t.Fatal(err)
	}
	if err := SetEnabled(path, "alpha", true); err != nil {
		t.Fatal(err)
	}
	if st2, _ := os.Stat(path); !os.SameFile(st1, st2) {
		t.Error("a no-op SetEnabled replaced the file")
	}
	if err := SetEnabled(path, "nope", true); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("unknown: %v", err)
	}
}

func TestSetEnabledWithUnsetVariable(t *testing.T) {
	text := "[servers.a]\ncommand = \"x\"\nenabled = false\nenv = { T = \"${MCPHUB_TEST_UNSET}\" }\n[servers.b]\ncommand = \"x\""
	path := writeFile(t, text, 0o600)
	// An unset variable blocks no edit, of its own server or another.
	if err := SetEnabled(path, "b", false); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != strings.Replace(text, "[servers.b]\n", "[servers.b]\nenabled = false\n", 1) {
		t.Fatalf("got %q", got)
	}
}

func TestEditKeepsSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "dotfiles", "hub.toml")
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, []byte(commented), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "hub.toml")
	if err := os.Symlink(target, link); err != nil {
		t.Skip("no symlinks here:", err)
	}
	if err := RemoveServer(link, "gamma"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced by a file")
	}
	if strings.Contains(readFile(t, target), "gamma") {
		t.Fatal("the target was not edited")
	}
}

func TestWriteAtomicDetectsConcurrentChange(t *testing.T) {
	path := writeFile(t, "a", 0o600)
	if _, err := writeAtomic(path, []byte("old"), true, []byte("new"), 0o600); !errors.Is(err, errConcurrent) {
		t.Fatalf("err = %v", err)
	}
	if readFile(t, path) != "a" {
		t.Fatal("overwrote a concurrent change")
	}
	assertNoTempFiles(t, filepath.Dir(path))
}
