package registry_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcphub/mcphub/registry"
)

// hubTOML is a small registry: one stdio server whose secret comes from the
// environment, and one remote server.
const hubTOML = `
[hub]
listen = "127.0.0.1:7733"

[servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]
env = { GITHUB_TOKEN = "${GITHUB_TOKEN}" }

[servers.deepwiki]
url = "https://mcp.deepwiki.com/mcp"
`

// env stands in for the process environment, so the example does not depend
// on the machine it runs on.
func env(name string) (string, bool) {
	if name == "GITHUB_TOKEN" {
		return "ghp_example", true
	}
	return "", false
}

// Parse fills in every default and expands ${VAR} with the lookup function it
// is given. A Server prints without its secret values.
func ExampleParse() {
	reg, err := registry.Parse("hub.toml", []byte(hubTOML), env)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(reg.Hub.URL("/mcp"))
	for _, s := range reg.Servers {
		fmt.Println(s.Kind(), s)
	}
	// Output:
	// http://127.0.0.1:7733/mcp
	// remote deepwiki: auto https://mcp.deepwiki.com/mcp
	// stdio github: npx -y @modelcontextprotocol/server-github env{GITHUB_TOKEN=***}
}

// Validation is part of Parse: a registry with problems gives no Registry
// but an Errors value that lists every problem with its position.
func ExampleParse_invalid() {
	const bad = `
[servers.notes]
command = "notes-server"
url = "http://localhost:9000/mcp"

[servers.search]
url = "ftp://example.com"
`
	reg, err := registry.Parse("hub.toml", []byte(bad), env)
	fmt.Println(reg == nil)
	fmt.Println(err)

	// Each problem is also an *Error, with its position and key.
	var problems registry.Errors
	if errors.As(err, &problems) {
		fmt.Println(len(problems), problems[1].Line, problems[1].Key)
	}
	// Output:
	// true
	// hub.toml:2:1: servers.notes: both command and url are set; a server is either stdio (command) or remote (url)
	// hub.toml:7:1: servers.search.url: must be an http:// or https:// URL with a host, e.g. "https://example.com/mcp"; its scheme is "ftp"
	// 2 7 servers.search.url
}

// Server looks a server up by name; an unknown name gives nil.
func ExampleRegistry_Server() {
	reg, err := registry.Parse("hub.toml", []byte(hubTOML), env)
	if err != nil {
		fmt.Println(err)
		return
	}
	gh := reg.Server("github")
	fmt.Println(gh.Command, gh.Prefix, gh.Enabled, gh.CallTimeout)
	fmt.Println(reg.Server("gitlab") == nil)
	// Output:
	// npx github true 5m0s
	// true
}

// Diff tells a running hub which servers a saved registry file touches: a
// new secret needs a new connection (Changed), a new allow list does not
// (Toggled).
func ExampleDiff() {
	old, err := registry.Parse("hub.toml", []byte(hubTOML), env)
	if err != nil {
		fmt.Println(err)
		return
	}
	rotated := func(name string) (string, bool) {
		if name == "GITHUB_TOKEN" {
			return "ghp_rotated", true
		}
		return "", false
	}
	edited := hubTOML + `allow = ["read_*"]

[servers.memory]
command = "mcp-memory"
`
	cur, err := registry.Parse("hub.toml", []byte(edited), rotated)
	if err != nil {
		fmt.Println(err)
		return
	}
	c := registry.Diff(old, cur)
	fmt.Println("added:", c.Added)
	fmt.Println("changed:", c.Changed)
	fmt.Println("toggled:", c.Toggled)
	// Output:
	// added: [memory]
	// changed: [github]
	// toggled: [deepwiki]
}

// AddServer and RemoveServer edit the file as text, so comments survive,
// and write it only when the result is a valid registry.
func ExampleAddServer() {
	dir, err := os.MkdirTemp("", "registry-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "hub.toml")
	if err := os.WriteFile(path, []byte("# My servers.\n\n[servers.notes]\ncommand = \"notes-server\"\n"), 0o600); err != nil {
		fmt.Println(err)
		return
	}

	err = registry.AddServer(path, registry.ServerSpec{
		Name: "deepwiki",
		URL:  "https://mcp.deepwiki.com/mcp",
	}, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Adding a name that exists needs force.
	err = registry.AddServer(path, registry.ServerSpec{Name: "notes", Command: "other"}, false)
	fmt.Println(errors.Is(err, registry.ErrServerExists))

	if err := registry.RemoveServer(path, "notes"); err != nil {
		fmt.Println(err)
		return
	}
	data, _ := os.ReadFile(path)
	fmt.Print(string(data))
	// Output:
	// true
	// # My servers.
	//
	// [servers.deepwiki]
	// url = "https://mcp.deepwiki.com/mcp"
}

// validate sums up a registry file: a valid one in a line, one with
// problems as each problem with its position.
func ExampleValidate() {
	dir, _ := os.MkdirTemp("", "mcphub-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "hub.toml")
	os.WriteFile(path, []byte("[servers.notes]\ncommand = \"notes-mcp\"\n"), 0o600)
	v, err := registry.Validate(path)
	fmt.Println(err == nil, v.Summary() == path+" is valid: 1 servers (1 enabled)")

	os.WriteFile(path, []byte("[servers.notes]\nargs = [\"x\"]\n"), 0o600)
	v, err = registry.Validate(path)
	var errs registry.Errors
	if errors.As(err, &errs) {
		fmt.Println(v.Valid, len(v.Problems) == len(errs), v.Problems[0].Key, v.Problems[0].Line)
	}
	// Output:
	// true true
	// false true servers.notes 1
}
