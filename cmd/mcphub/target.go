package main

import (
	"github.com/spf13/pflag"

	"github.com/mcphub/mcphub/registry"
)

// registerTarget registers the flags that name one MCP server, shared by
// add and probe: a remote one (--url, --transport, --header) or a stdio
// one (the command after --, with --env and --cwd). registry.Target.Resolve
// reads them.
func registerTarget(fl *pflag.FlagSet, t *registry.Target, defaultTransport string) {
	fl.StringVar(&t.URL, "url", "", "URL of a remote server (Streamable HTTP endpoint, or the legacy SSE endpoint)")
	fl.StringVar(&t.Transport, "transport", defaultTransport, "remote transport: auto, streamable-http or sse")
	fl.StringArrayVar(&t.Headers, "header", nil, "HTTP header \"Name: value\" or Name=value for a remote server (repeatable; ${VAR} allowed in the registry)")
	fl.StringArrayVar(&t.Env, "env", nil, "environment variable K=V for a stdio server (repeatable; ${VAR} allowed in the registry)")
	fl.StringVar(&t.Cwd, "cwd", "", "working directory of a stdio server")
}
