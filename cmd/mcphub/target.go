package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mcphub/mcphub/internal/httphdr"
)

// targetFlags are the flags that name one MCP server, shared by add and
// probe: a remote one (--url, --transport, --header) or a stdio one (the
// command after --, with --env and --cwd).
type targetFlags struct {
	url, transport, cwd string
	headers, env        []string
}

func (t *targetFlags) register(fl *pflag.FlagSet, defaultTransport string) {
	fl.StringVar(&t.url, "url", "", "URL of a remote server (Streamable HTTP endpoint, or the legacy SSE endpoint)")
	fl.StringVar(&t.transport, "transport", defaultTransport, "remote transport: auto, streamable-http or sse")
	fl.StringArrayVar(&t.headers, "header", nil, "HTTP header \"Name: value\" or Name=value for a remote server (repeatable; ${VAR} allowed in the registry)")
	fl.StringArrayVar(&t.env, "env", nil, "environment variable K=V for a stdio server (repeatable; ${VAR} allowed in the registry)")
	fl.StringVar(&t.cwd, "cwd", "", "working directory of a stdio server")
}

// target is the server the flags name.
type target struct {
	url, transport string
	headers        map[string]string
	command        string
	args           []string
	env            map[string]string
	cwd            string
}

// resolve checks that the flags name exactly one kind of server, with only
// the flags that kind takes; command is everything after --. The messages
// say what to do, using the command's name in the help pointer.
func (t *targetFlags) resolve(command []string, defaultTransport, cmdName string) (target, error) {
	switch {
	case t.url != "" && len(command) > 0:
		return target{}, errors.New("give either --url or a command after --, not both")
	case t.url == "" && len(command) == 0:
		return target{}, fmt.Errorf("give the server's command after -- (stdio) or --url URL (remote); see mcphub %s --help", cmdName)
	case t.url != "":
		if len(t.env) > 0 || t.cwd != "" {
			return target{}, errors.New("--env and --cwd apply to stdio servers (a command after --), not to --url")
		}
		h, err := parseHeaders(t.headers)
		if err != nil {
			return target{}, err
		}
		return target{url: t.url, transport: t.transport, headers: h}, nil
	}
	if len(t.headers) > 0 || t.transport != defaultTransport {
		return target{}, errors.New("--header and --transport apply to --url, not to a stdio command")
	}
	env, err := parseKV("--env", t.env)
	if err != nil {
		return target{}, err
	}
	return target{command: command[0], args: command[1:], env: env, cwd: t.cwd}, nil
}

// parseKV reads repeated K=V flags.
func parseKV(flag string, items []string) (map[string]string, error) {
	if len(items) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(items))
	for _, it := range items {
		k, v, ok := strings.Cut(it, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("%s %q: want KEY=VALUE", flag, it)
		}
		out[strings.TrimSpace(k)] = v
	}
	return out, nil
}

// parseHeaders reads repeated --header flags, refusing the headers mcphub
// sets itself (framing, session and connection headers).
func parseHeaders(items []string) (map[string]string, error) {
	if len(items) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(items))
	for _, it := range items {
		k, v, err := httphdr.ParseArg(it)
		if err != nil {
			return nil, fmt.Errorf("--header: %w", err)
		}
		for prev := range out {
			if strings.EqualFold(prev, k) {
				return nil, fmt.Errorf("--header %s is given twice (as %s too); give it once", k, prev)
			}
		}
		out[k] = v
	}
	return out, nil
}
