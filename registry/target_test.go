package registry

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestTargetResolve: a command line names exactly one kind of server, with
// only the flags that kind takes, and the messages say what to do.
func TestTargetResolve(t *testing.T) {
	for _, tt := range []struct {
		name    string
		t       Target
		command []string
		want    ServerSpec
		err     string
	}{
		{name: "remote", t: Target{URL: "https://x.example/mcp", Transport: "sse", Headers: []string{"Authorization: Bearer ${T}", "X-A=b"}},
			want: ServerSpec{URL: "https://x.example/mcp", Transport: "sse", Headers: map[string]string{"Authorization": "Bearer ${T}", "X-A": "b"}}},
		{name: "stdio", t: Target{Env: []string{" K =v=w"}, Cwd: "/tmp"}, command: []string{"npx", "-y", "srv"},
			want: ServerSpec{Command: "npx", Args: []string{"-y", "srv"}, Env: map[string]string{"K": "v=w"}, Cwd: "/tmp"}},
		{name: "both", t: Target{URL: "https://x.example/mcp"}, command: []string{"npx"}, err: "give either --url or a command after --, not both"},
		{name: "neither", err: "give the server's command after -- (stdio) or --url URL (remote); see mcphub add --help"},
		{name: "env with url", t: Target{URL: "https://x.example/mcp", Env: []string{"K=v"}}, err: "--env and --cwd apply to stdio servers"},
		{name: "header with command", t: Target{Headers: []string{"X-A=b"}}, command: []string{"srv"}, err: "--header and --transport apply to --url"},
		{name: "transport with command", t: Target{Transport: "sse"}, command: []string{"srv"}, err: "--header and --transport apply to --url"},
		{name: "bad env", t: Target{Env: []string{"novalue"}}, command: []string{"srv"}, err: `--env "novalue": want KEY=VALUE`},
		{name: "header twice", t: Target{URL: "https://x.example/mcp", Headers: []string{"X-A=1", "x-a: 2"}}, err: "--header x-a is given twice (as X-A too); give it once"},
		{name: "framing header", t: Target{URL: "https://x.example/mcp", Headers: []string{"Content-Type=text/plain"}}, err: "--header: "},
	} {
		got, err := tt.t.Resolve(tt.command, "", "add")
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: %v, want %q", tt.name, err, tt.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case got.URL != tt.want.URL || got.Transport != tt.want.Transport || got.Command != tt.want.Command || got.Cwd != tt.want.Cwd ||
			!slices.Equal(got.Args, tt.want.Args) || !maps.Equal(got.Headers, tt.want.Headers) || !maps.Equal(got.Env, tt.want.Env):
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// TestTargetResolveDefaultTransport: probe's flags start from transport
// "auto", which a stdio command keeps without complaint.
func TestTargetResolveDefaultTransport(t *testing.T) {
	if _, err := (Target{Transport: "auto"}).Resolve([]string{"srv"}, "auto", "probe"); err != nil {
		t.Errorf("the default transport with a command: %v", err)
	}
}

// TestServerSpecKind: a URL makes a remote server, else it is stdio.
func TestServerSpecKind(t *testing.T) {
	if k := (ServerSpec{URL: "https://x.example/mcp"}).Kind(); k != KindRemote {
		t.Errorf("a spec with a URL is %s", k)
	}
	if k := (ServerSpec{Command: "srv"}).Kind(); k != KindStdio {
		t.Errorf("a spec with a command is %s", k)
	}
}
