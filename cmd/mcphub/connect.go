package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// clientTarget describes where a client keeps its MCP servers and the shape
// of an entry there.
type clientTarget struct {
	// path is the config file --write merges into.
	path string
	// key is the top-level member holding the servers.
	key string
	// entry builds the JSON entry for the hub.
	entry func(url string, headers map[string]string) map[string]any
	// hint explains the printed snippet.
	hint string
}

func clientTargets(home string) map[string]clientTarget {
	withHeaders := func(m map[string]any, headers map[string]string) map[string]any {
		if len(headers) > 0 {
			m["headers"] = headers
		}
		return m
	}
	return map[string]clientTarget{
		"claude": {
			path: filepath.Join(home, ".claude.json"), key: "mcpServers",
			entry: func(url string, h map[string]string) map[string]any {
				return withHeaders(map[string]any{"type": "http", "url": url}, h)
			},
			hint: "Claude Code: add this under \"mcpServers\" in ~/.claude.json, or run the claude command below",
		},
		"vscode": {
			path: filepath.Join(".vscode", "mcp.json"), key: "servers",
			entry: func(url string, h map[string]string) map[string]any {
				return withHeaders(map[string]any{"type": "http", "url": url}, h)
			},
			hint: "VS Code: add this under \"servers\" in .vscode/mcp.json of your workspace",
		},
		"cursor": {
			path: filepath.Join(home, ".cursor", "mcp.json"), key: "mcpServers",
			entry: func(url string, h map[string]string) map[string]any {
				return withHeaders(map[string]any{"url": url}, h)
			},
			hint: "Cursor: add this under \"mcpServers\" in ~/.cursor/mcp.json",
		},
	}
}

func newConnectCmd(a *app) *cobra.Command {
	var write bool
	var name string
	cmd := &cobra.Command{
		Use:   "connect claude|vscode|cursor",
		Short: "Print (or --write) the config that points a client at this hub",
		Long: `Print the configuration entry that points a client at this hub's /mcp
endpoint, including the Authorization header when [hub] auth = "token".
With --write, merge it into the client's own config file (Claude Code:
~/.claude.json, VS Code: .vscode/mcp.json in the current directory, Cursor:
~/.cursor/mcp.json), keeping every other entry and member as it was.`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"claude", "vscode", "cursor"},
		RunE: func(_ *cobra.Command, args []string) error {
			home, _ := os.UserHomeDir()
			target, ok := clientTargets(home)[args[0]]
			if !ok {
				return fmt.Errorf("unknown client %q: use claude, vscode or cursor", args[0])
			}
			reg, err := a.loadRegistry()
			if err != nil {
				return a.printRegistryErrors(err)
			}
			tok, err := hubToken(reg)
			if err != nil {
				return err
			}
			url := targetOf(reg.Hub, tok).url("/mcp")
			var headers map[string]string
			if tok != "" {
				headers = map[string]string{"Authorization": "Bearer " + tok}
			}
			entry := target.entry(url, headers)
			if write {
				if err := mergeClientConfig(target.path, target.key, name, entry); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "wrote server %q into %s\n", name, target.path)
				return nil
			}
			snippet, _ := json.MarshalIndent(map[string]any{target.key: map[string]any{name: entry}}, "", "  ")
			fmt.Fprintf(a.stdout, "# %s\n%s\n", target.hint, snippet)
			if args[0] == "claude" {
				line := "claude mcp add --transport http " + name + " " + url
				if tok != "" {
					line += ` --header "Authorization: Bearer ` + tok + `"`
				}
				fmt.Fprintf(a.stdout, "# or:\n%s\n", line)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&write, "write", false, "merge the entry into the client's config file")
	cmd.Flags().StringVar(&name, "name", "mcphub", "the entry's name in the client's config")
	return cmd
}

// mergeClientConfig sets servers[name] = entry in a JSON config file,
// creating it when missing. Every other byte of the file stays as it was;
// the file is replaced atomically with its mode kept.
func mergeClientConfig(path, key, name string, entry map[string]any) error {
	data, err := os.ReadFile(path)
	mode := fs.FileMode(0o600)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		data = []byte("{}")
	case err != nil:
		return err
	default:
		if info, err := os.Stat(path); err == nil {
			mode = info.Mode().Perm()
		}
		if !json.Valid(data) {
			return fmt.Errorf("%s is not plain JSON (comments or trailing commas?); add the entry by hand: run without --write to print it", path)
		}
	}
	raw, _ := json.Marshal(entry)
	servers, ok := jsonrpc.Member(data, key)
	if !ok || strings.TrimSpace(string(servers)) == "null" {
		servers = json.RawMessage("{}")
	}
	servers, err = jsonrpc.SetMember(servers, name, raw)
	if err != nil {
		return fmt.Errorf("%s: %q is not an object", path, key)
	}
	out, err := jsonrpc.SetMember(data, key, servers)
	if err != nil {
		return fmt.Errorf("%s is not a JSON object", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".mcphub.tmp"
	if err := os.WriteFile(tmp, out, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
