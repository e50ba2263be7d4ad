package registry

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcphub/mcphub/internal/httphdr"
)

// Target is one MCP server as a command line names it, before it is
// checked: a remote one (URL, Transport, Headers) or a stdio one (the
// command after --, with Env and Cwd). The add command writes it into
// hub.toml and the probe command connects to it, so both read the same
// flags the same way; they keep Headers and Env as given ("Name: value" or
// Name=value, and K=V) until Resolve parses them.
type Target struct {
	URL, Transport, Cwd string
	Headers, Env        []string
}

// Resolve checks that t and command (everything after --) name exactly
// one kind of server, with only the settings that kind takes, and returns
// it as the ServerSpec fields of a server (URL, Transport and Headers, or
// Command, Args, Env and Cwd). defaultTransport is the transport the
// command line starts from, so that one given with a stdio command is
// refused; cmdName names the command in the help pointer of the messages,
// which say what to do.
func (t Target) Resolve(command []string, defaultTransport, cmdName string) (ServerSpec, error) {
	switch {
	case t.URL != "" && len(command) > 0:
		return ServerSpec{}, errors.New("give either --url or a command after --, not both")
	case t.URL == "" && len(command) == 0:
		return ServerSpec{}, fmt.Errorf("give the server's command after -- (stdio) or --url URL (remote); see mcphub %s --help", cmdName)
	case t.URL != "":
		if len(t.Env) > 0 || t.Cwd != "" {
			return ServerSpec{}, errors.New("--env and --cwd apply to stdio servers (a command after --), not to --url")
		}
		h, err := parseHeaders(t.Headers)
		if err != nil {
			return ServerSpec{}, err
		}
		return ServerSpec{URL: t.URL, Transport: t.Transport, Headers: h}, nil
	}
	if len(t.Headers) > 0 || t.Transport != defaultTransport {
		return ServerSpec{}, errors.New("--header and --transport apply to --url, not to a stdio command")
	}
	env, err := parseKV("--env", t.Env)
	if err != nil {
		return ServerSpec{}, err
	}
	return ServerSpec{Command: command[0], Args: command[1:], Env: env, Cwd: t.Cwd}, nil
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

// Kind is the kind of server s describes: remote when it has a URL, else
// stdio, as Server.Kind says of a parsed entry.
func (s ServerSpec) Kind() Kind {
	if s.URL != "" {
		return KindRemote
	}
	return KindStdio
}
