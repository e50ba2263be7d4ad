package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/registry"
)

const addLong = `Add an MCP server to the registry.

A stdio server is a command mcphub starts; put it after --:

  mcphub add github --env GITHUB_PERSONAL_ACCESS_TOKEN='${GITHUB_TOKEN}' -- npx -y @modelcontextprotocol/server-github

A remote server is a URL (Streamable HTTP, or the legacy HTTP+SSE transport):

  mcphub add deepwiki --url https://mcp.deepwiki.com/mcp
  mcphub add internal --url https://mcp.example.com/mcp --header 'Authorization=Bearer ${API_TOKEN}'

Values may use ${VAR}, expanded from mcphub's environment when the hub reads
the registry, so secrets need not be written into hub.toml (quote them so
your shell leaves them alone). add asks the running hub whether it has each
variable (or checks this shell when no hub runs) and warns when it does not:
such a server shows failed, naming the variable, while the others run.

NAME is 1-32 characters of a-z, 0-9 and '-'. The registry is validated
before it is written, and the edit keeps the file's comments and every other
server as they were. A running hub applies the change on its own.

A stdio server inherits a safe set of mcphub's environment (PATH, HOME,
locale, temporary directories, proxy and CA-bundle variables; see README);
--env-passthrough adds names, --inherit-env passes everything but secrets.

--json prints what was added, without any env or header value:
  {"name": "github", "kind": "stdio", "file": "/path/to/hub.toml",
   "enabled": true, "warnings": ["GITHUB_TOKEN is not set in ..."]}
kind is "stdio" or "remote"; warnings are the ones printed on stderr.`

// addFlags are add's flags: the server (Target), and its other settings
// (set, which spec completes).
type addFlags struct {
	registry.Target
	set                     registry.ServerSpec
	prefix                  string
	noPrefix, force, asJSON bool
}

// addResult is what add did, its --json answer.
type addResult struct {
	Name     string   `json:"name"`
	Kind     string   `json:"kind"` // stdio or remote
	File     string   `json:"file"`
	Enabled  bool     `json:"enabled"`
	Warnings []string `json:"warnings"`
}

func newAddCmd(a *app) *cobra.Command {
	var f addFlags
	cmd := &cobra.Command{
		Use:   "add NAME (--url URL | -- COMMAND [ARGS...])",
		Short: "Add a stdio or remote MCP server to the registry",
		Long:  addLong,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, err := f.spec(args[0], args[1:], cmd.ArgsLenAtDash())
			if err != nil {
				return err
			}
			if err := a.ensureRegistry(); err != nil {
				return err
			}
			if err := registry.AddServer(a.configPath, spec, f.force); err != nil {
				if errors.Is(err, registry.ErrServerExists) {
					return err
				}
				return a.printRegistryErrors(err)
			}
			res := addResult{Name: spec.Name, Kind: string(spec.Kind()), File: a.configPath, Enabled: !spec.Disabled}
			if !f.asJSON {
				fmt.Fprintf(a.stdout, "added %s server %q to %s\n", res.Kind, spec.Name, a.configPath)
			}
			res.Warnings = a.captureWarnings(func() {
				vars := spec.Vars()
				if spec.Disabled || len(vars) == 0 {
					return
				}
				if t, ok := a.envTarget(vars); ok {
					a.warnUnset(cmd.Context(), t, spec.Name, vars)
				}
			})
			if f.asJSON {
				return a.printJSON(res)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	registerTarget(fl, &f.Target, "")
	fl.StringVar(&f.prefix, "prefix", "", "namespace prefix for this server's names (default: NAME)")
	fl.BoolVar(&f.noPrefix, "no-prefix", false, "expose this server's names without a prefix")
	fl.StringVar(&f.set.Share, "share", "", `"server" (one upstream connection, default) or "session" (one per client session)`)
	fl.StringVar(&f.set.Protocol, "protocol", "", `the protocol era to speak: "auto" (default) or a revision such as 2025-11-25 or 2026-07-28`)
	fl.StringArrayVar(&f.set.Allow, "allow", nil, "expose only tools matching this glob (repeatable)")
	fl.StringArrayVar(&f.set.Deny, "deny", nil, "hide tools matching this glob (repeatable)")
	fl.DurationVar(&f.set.ConnectTimeout, "connect-timeout", 0, "how long connecting may take (default 60s)")
	fl.DurationVar(&f.set.CallTimeout, "call-timeout", 0, "how long a tool call may take (default 5m)")
	fl.BoolVar(&f.set.Disabled, "disabled", false, "add the server disabled")
	fl.BoolVar(&f.force, "force", false, "replace a server of the same name")
	fl.StringArrayVar(&f.set.EnvPassthrough, "env-passthrough", nil, "also pass this variable (glob) of mcphub's environment to the server (repeatable)")
	fl.BoolVar(&f.set.InheritEnv, "inherit-env", false, "pass mcphub's whole environment to the server, but the registry's secrets")
	fl.BoolVar(&f.asJSON, "json", false, "print what was added as one JSON object")
	return cmd
}

// spec turns the command line into a registry entry. dash is the index of
// the first argument after --, or -1.
func (f *addFlags) spec(name string, rest []string, dash int) (registry.ServerSpec, error) {
	if dash > 1 {
		return registry.ServerSpec{}, fmt.Errorf("unexpected arguments before --: %q (only NAME goes there)", rest[:dash-1])
	}
	t, err := f.Resolve(rest, "", "add")
	if err != nil {
		return t, err
	}
	s := f.set
	s.Name, s.URL, s.Transport, s.Headers = name, t.URL, t.Transport, t.Headers
	s.Command, s.Args, s.Env, s.Cwd = t.Command, t.Args, t.Env, t.Cwd
	switch {
	case f.noPrefix && f.prefix != "":
		return s, errors.New("give --prefix or --no-prefix, not both")
	case f.noPrefix:
		empty := ""
		s.Prefix = &empty
	case f.prefix != "":
		s.Prefix = &f.prefix
	}
	return s, nil
}
