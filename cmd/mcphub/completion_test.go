package main

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// completions runs mcphub __complete, as a shell's completion script does,
// and returns the candidates it printed, without their descriptions.
func completions(t *testing.T, e *goldenEnv, args ...string) []string {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(append([]string{"--config", e.config, "--data-dir", e.dataDir, "__complete"}, args...), &out, &errOut)
	if code != 0 {
		t.Fatalf("mcphub __complete %s: exit %d\n%s\n%s", strings.Join(args, " "), code, out.String(), errOut.String())
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if line == "" || strings.HasPrefix(line, ":") {
			continue // the directive
		}
		name, _, _ := strings.Cut(line, "\t")
		got = append(got, name)
	}
	return got
}

// TestCompletionScripts: cobra's completion command prints each shell's
// script.
func TestCompletionScripts(t *testing.T) {
	for shell, want := range map[string]string{"bash": "__start_mcphub", "zsh": "#compdef mcphub", "fish": "complete -c mcphub", "powershell": "Register-ArgumentCompleter"} {
		code, out, errOut := runCLI(t, "completion", shell)
		if code != 0 || !strings.Contains(out, want) || errOut != "" {
			t.Errorf("mcphub completion %s: exit %d, stderr %q, script without %q", shell, code, errOut, want)
		}
	}
}

// TestCompletionServerNames: the commands that take a server NAME complete
// it from the registry (enable offers the disabled ones, disable and
// restart the enabled ones), only as their first argument; a registry that
// does not load completes nothing and prints nothing.
func TestCompletionServerNames(t *testing.T) {
	e := goldenNewEnv(t)
	e.writeRegistry(t, fmt.Sprintf(goldenRegistry, e.closedAddr(t)))
	all := []string{"flaky", "github", "internal", "notes"}
	enabled := []string{"flaky", "github", "internal"}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"remove", ""}, all},
		{[]string{"remove", "gi"}, []string{"github"}},
		{[]string{"remove", "github", ""}, nil},
		{[]string{"enable", ""}, []string{"notes"}},
		{[]string{"disable", ""}, enabled},
		{[]string{"restart", ""}, enabled},
		{[]string{"restart", "f"}, []string{"flaky"}},
		{[]string{"logs", ""}, all},
		{[]string{"tools", "ls", ""}, enabled},
		{[]string{"prompts", "ls", "g"}, []string{"github"}},
		{[]string{"tools", "l"}, []string{"ls"}},
		{[]string{"stdio", "--server", ""}, enabled},
		{[]string{"stdio", "--server", "i"}, []string{"internal"}},
	} {
		if got := completions(t, e, tc.args...); !slices.Equal(got, tc.want) {
			t.Errorf("mcphub __complete %q = %q, want %q", tc.args, got, tc.want)
		}
	}
	var out bytes.Buffer
	run([]string{"--config", e.config, "__complete", "remove", ""}, &out, &bytes.Buffer{})
	if !strings.Contains(out.String(), "github\tstdio\n") || !strings.Contains(out.String(), "notes\tstdio, disabled\n") {
		t.Errorf("completions lack their descriptions:\n%s", out.String())
	}

	e.writeRegistry(t, goldenSyntaxErrorRegistry)
	var errOut bytes.Buffer
	out.Reset()
	run([]string{"--config", e.config, "--data-dir", e.dataDir, "__complete", "remove", ""}, &out, &errOut)
	if got := completions(t, e, "remove", ""); got != nil {
		t.Errorf("a broken registry completes %q", got)
	}
	if strings.Contains(out.String()+errOut.String(), "hub.toml:") {
		t.Errorf("completion printed the registry's problems:\n%s\n%s", out.String(), errOut.String())
	}
}

// TestCompletionSessionIDs: sessions rm completes the running hub's
// session IDs, described by their client.
func TestCompletionSessionIDs(t *testing.T) {
	h, addr, reg := controlHub(t, hubConfig{}, "")
	e := goldenNewEnv(t)
	e.addPort(addr)
	e.writeRegistry(t, reg)
	if got := completions(t, e, "sessions", "rm", ""); got != nil {
		t.Errorf("no session yet, but completions %q", got)
	}
	s := h.connect("/mcp", nil)
	id := s.ID()
	if got := completions(t, e, "sessions", "rm", ""); !slices.Equal(got, []string{id}) {
		t.Errorf("mcphub __complete sessions rm = %q, want the session %q", got, id)
	}
}
