package clientconf

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// Format is how a client's config file is written, which decides how
// mcphub edits it and how a pasted snippet looks.
type Format int

const (
	// FormatJSON is strict JSON: the client may refuse comments or
	// trailing commas, so mcphub never adds them.
	FormatJSON Format = iota
	// FormatJSONC is JSON with comments and trailing commas, which are
	// kept as they are.
	FormatJSONC
	// FormatTOML is Codex's config.toml.
	FormatTOML
)

// Client describes one AI client mcphub connect knows: where it keeps its
// MCP servers and the shape of an entry there. Get one with Lookup.
type Client struct {
	// Name is the argument of mcphub connect ("claude", "cursor", ...).
	Name string
	// Title is the client's name in messages ("Claude Code").
	Title string
	// Key is the member (JSON) or table (TOML) that holds the servers.
	Key string
	// Format is how the client's file is written.
	Format Format
	// path returns the config file --write edits when --file is not given.
	path func() (string, error)
	// remote builds the entry that points at the hub's HTTP endpoint; nil
	// for a client that only runs stdio servers from its config.
	remote func(url string, headers map[string]string) Entry
	// stdio builds the entry that runs `mcphub stdio`.
	stdio func(command string, args []string) Entry
}

// Path is the client's own config file on this OS for this user (for VS
// Code, .vscode/mcp.json in the current directory): the file connect
// --write edits when it is given no --file.
func (c Client) Path() (string, error) { return c.path() }

// StdioOnly reports whether the client runs only stdio servers from its
// file (Claude Desktop), so that its entry for the hub must run mcphub
// stdio.
func (c Client) StdioOnly() bool { return c.remote == nil }

// inHome returns a path function for a file under the home directory.
func inHome(elem ...string) func() (string, error) {
	return func() (string, error) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no home directory to find the client's config in (use --file): %w", err)
		}
		return filepath.Join(append([]string{home}, elem...)...), nil
	}
}

// inConfigDir returns a path function for a file under the OS's per-user
// config directory (%AppData% on Windows, ~/Library/Application Support on
// macOS, $XDG_CONFIG_HOME or ~/.config on Linux).
func inConfigDir(elem ...string) func() (string, error) {
	return func() (string, error) {
		dir, err := os.UserConfigDir()
		if err != nil {
			return "", fmt.Errorf("no config directory to find the client's config in (use --file): %w", err)
		}
		return filepath.Join(append([]string{dir}, elem...)...), nil
	}
}

// zedSettings is Zed's settings file: %AppData%\Zed on Windows, and
// ~/.config/zed (or under $XDG_CONFIG_HOME) elsewhere, macOS included,
// where Zed does not use ~/Library.
func zedSettings() (string, error) {
	if runtime.GOOS == "windows" {
		return inConfigDir("Zed", "settings.json")()
	}
	if dir := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "zed", "settings.json"), nil
	}
	return inHome(".config", "zed", "settings.json")()
}

// codexConfigPath is Codex's config.toml: in $CODEX_HOME when it is set, else
// in ~/.codex.
func codexConfigPath() (string, error) {
	if dir := os.Getenv("CODEX_HOME"); dir != "" {
		return filepath.Join(dir, "config.toml"), nil
	}
	return inHome(".codex", "config.toml")()
}

// clientKinds are the clients mcphub connect points at the hub, by name.
var clientKinds = map[string]Client{
	"claude": {
		Title: "Claude Code", path: inHome(".claude.json"), Key: "mcpServers", Format: FormatJSON,
		remote: httpEntry, stdio: typedStdioEntry,
	},
	"claude-desktop": {
		// Claude Desktop skips url entries in its file (remote servers
		// are added in its Connectors settings), so it gets the stdio
		// entry.
		Title: "Claude Desktop", path: inConfigDir("Claude", "claude_desktop_config.json"), Key: "mcpServers",
		Format: FormatJSON, stdio: stdioEntry,
	},
	"cursor": {
		Title: "Cursor", path: inHome(".cursor", "mcp.json"), Key: "mcpServers", Format: FormatJSON,
		remote: urlEntry("url"), stdio: stdioEntry,
	},
	"vscode": {
		Title: "VS Code", path: func() (string, error) { return filepath.Abs(filepath.Join(".vscode", "mcp.json")) },
		Key: "servers", Format: FormatJSONC, remote: httpEntry, stdio: typedStdioEntry,
	},
	"windsurf": {
		// Windsurf's docs name the Streamable HTTP URL serverUrl; a
		// url-only entry is reported not to connect.
		Title: "Windsurf", path: inHome(".codeium", "windsurf", "mcp_config.json"), Key: "mcpServers",
		Format: FormatJSON, remote: urlEntry("serverUrl"), stdio: stdioEntry,
	},
	"gemini": {
		// In Gemini CLI, httpUrl is Streamable HTTP; url would mean SSE.
		Title: "Gemini CLI", path: inHome(".gemini", "settings.json"), Key: "mcpServers", Format: FormatJSONC,
		remote: urlEntry("httpUrl"), stdio: stdioEntry,
	},
	"zed": {
		Title: "Zed", path: zedSettings, Key: "context_servers", Format: FormatJSONC,
		remote: urlEntry("url"), stdio: stdioEntry,
	},
	"codex": {
		// Codex ignores a headers key; static headers go in http_headers.
		Title: "Codex", path: codexConfigPath, Key: "mcp_servers", Format: FormatTOML,
		remote: func(url string, h map[string]string) Entry {
			e := Entry{{"url", url}}
			if len(h) > 0 {
				e = append(e, Field{"http_headers", h})
			}
			return e
		},
		stdio: stdioEntry,
	},
}

// Names lists the clients mcphub knows, sorted, for help, shell completion
// and errors.
func Names() []string { return slices.Sorted(maps.Keys(clientKinds)) }

// Lookup returns the client called name (as mcphub connect spells it), or
// an error that lists the names it knows.
func Lookup(name string) (Client, error) {
	c, ok := clientKinds[name]
	if !ok {
		return Client{}, fmt.Errorf("unknown client %q: use one of %s", name, strings.Join(Names(), ", "))
	}
	c.Name = name
	return c, nil
}
