package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/mcphub/mcphub/registry"
)

// fileFormat is how a client's config file is written.
type fileFormat int

const (
	// formatJSON is strict JSON: the client may refuse comments or
	// trailing commas, so mcphub never adds them.
	formatJSON fileFormat = iota
	// formatJSONC is JSON with comments and trailing commas, which are
	// kept as they are.
	formatJSONC
	// formatTOML is Codex's config.toml.
	formatTOML
)

// clientKind describes one client mcphub connect knows: where it keeps its
// MCP servers and the shape of an entry there.
type clientKind struct {
	// name is the argument of mcphub connect.
	name string
	// title is the client's name in messages.
	title string
	// path returns the config file --write edits when --file is not given.
	path func() (string, error)
	// key is the member (JSON) or table (TOML) that holds the servers.
	key    string
	format fileFormat
	// remote builds the entry that points at the hub's HTTP endpoint; nil
	// for a client that only runs stdio servers from its config.
	remote func(url string, headers map[string]string) entry
	// stdio builds the entry that runs `mcphub stdio`.
	stdio func(command string, args []string) entry
}

// entryField is one member of a client entry.
type entryField struct {
	key string
	// value is a string, a []string or a map[string]string.
	value any
}

// entry is a client's config entry for one server, with its members in the
// order they are written (the order the clients' own docs use).
type entry []entryField

// MarshalJSON writes the members in order, without HTML escaping, so that a
// URL with & or a command path reads as it is.
func (e entry) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range e {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshalJSON(f.key)
		if err != nil {
			return nil, err
		}
		v, err := marshalJSON(f.value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshalJSON is json.Marshal without HTML escaping.
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// indentJSON marshals v indented by unit, each line after the first
// starting with prefix.
func indentJSON(v any, prefix, unit string) ([]byte, error) {
	raw, err := marshalJSON(v)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, prefix, unit); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// withHeaders adds the headers member when there are headers.
func withHeaders(e entry, headers map[string]string) entry {
	if len(headers) > 0 {
		e = append(e, entryField{"headers", headers})
	}
	return e
}

// httpEntry is the {"type": "http", "url", "headers"} shape of Claude Code
// and VS Code.
func httpEntry(url string, h map[string]string) entry {
	return withHeaders(entry{{"type", "http"}, {"url", url}}, h)
}

// urlEntry builds the {KEY: url, "headers"} shape the other clients use,
// each with its own name for the URL.
func urlEntry(key string) func(string, map[string]string) entry {
	return func(url string, h map[string]string) entry {
		return withHeaders(entry{{key, url}}, h)
	}
}

// typedStdioEntry is the {"type": "stdio", "command", "args"} shape of
// clients that want the type spelled out.
func typedStdioEntry(command string, args []string) entry {
	return entry{{"type", "stdio"}, {"command", command}, {"args", args}}
}

// stdioEntry is the plain {"command", "args"} shape.
func stdioEntry(command string, args []string) entry {
	return entry{{"command", command}, {"args", args}}
}

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

// codexConfig is Codex's config.toml: in $CODEX_HOME when it is set, else
// in ~/.codex.
func codexConfig() (string, error) {
	if dir := os.Getenv("CODEX_HOME"); dir != "" {
		return filepath.Join(dir, "config.toml"), nil
	}
	return inHome(".codex", "config.toml")()
}

// clientKinds are the clients mcphub connect points at the hub, by name.
var clientKinds = map[string]clientKind{
	"claude": {
		title: "Claude Code", path: inHome(".claude.json"), key: "mcpServers", format: formatJSON,
		remote: httpEntry, stdio: typedStdioEntry,
	},
	"claude-desktop": {
		// Claude Desktop skips url entries in its file (remote servers
		// are added in its Connectors settings), so it gets the stdio
		// entry.
		title: "Claude Desktop", path: inConfigDir("Claude", "claude_desktop_config.json"), key: "mcpServers",
		format: formatJSON, stdio: stdioEntry,
	},
	"cursor": {
		title: "Cursor", path: inHome(".cursor", "mcp.json"), key: "mcpServers", format: formatJSON,
		remote: urlEntry("url"), stdio: stdioEntry,
	},
	"vscode": {
		title: "VS Code", path: func() (string, error) { return filepath.Abs(filepath.Join(".vscode", "mcp.json")) },
		key: "servers", format: formatJSONC, remote: httpEntry, stdio: typedStdioEntry,
	},
	"windsurf": {
		// Windsurf's docs name the Streamable HTTP URL serverUrl; a
		// url-only entry is reported not to connect.
		title: "Windsurf", path: inHome(".codeium", "windsurf", "mcp_config.json"), key: "mcpServers",
		format: formatJSON, remote: urlEntry("serverUrl"), stdio: stdioEntry,
	},
	"gemini": {
		// In Gemini CLI, httpUrl is Streamable HTTP; url would mean SSE.
		title: "Gemini CLI", path: inHome(".gemini", "settings.json"), key: "mcpServers", format: formatJSONC,
		remote: urlEntry("httpUrl"), stdio: stdioEntry,
	},
	"zed": {
		title: "Zed", path: zedSettings, key: "context_servers", format: formatJSONC,
		remote: urlEntry("url"), stdio: stdioEntry,
	},
	"codex": {
		// Codex ignores a headers key; static headers go in http_headers.
		title: "Codex", path: codexConfig, key: "mcp_servers", format: formatTOML,
		remote: func(url string, h map[string]string) entry {
			e := entry{{"url", url}}
			if len(h) > 0 {
				e = append(e, entryField{"http_headers", h})
			}
			return e
		},
		stdio: stdioEntry,
	},
}

// clientNames lists the clients in a stable order for help and errors.
func clientNames() []string { return slices.Sorted(maps.Keys(clientKinds)) }

// lookupClient returns the client called name.
func lookupClient(name string) (clientKind, error) {
	c, ok := clientKinds[name]
	if !ok {
		return clientKind{}, fmt.Errorf("unknown client %q: use one of %s", name, strings.Join(clientNames(), ", "))
	}
	c.name = name
	return c, nil
}

// installedExecutable is the absolute path of the running mcphub, to write
// where another program (a client, a service manager) will start it, and
// whether go run or go test built it in a temporary directory
// ($GOTMPDIR/go-build..., either separator), which is gone once it exits.
// os.Executable resolves symlinks on Linux (it reads /proc/self/exe), and
// may elsewhere, while a package manager's symlink (Homebrew's
// /opt/homebrew/bin/mcphub, a Nix profile's) outlives an upgrade and the
// versioned file it points to does not: so the path the user ran, args0
// as lookPath finds it, is taken when it is absolute and the same file.
func installedExecutable(executable func() (string, error), lookPath func(string) (string, error), args0 string) (exe string, goRun bool, err error) {
	if exe, err = executable(); err != nil {
		return "", false, err
	}
	if strings.Contains(strings.ReplaceAll(exe, `\`, "/"), "/go-build") {
		return exe, true, nil
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return "", false, err
	}
	if ran, err := lookPath(args0); err == nil && filepath.IsAbs(ran) && ran != exe && sameFile(ran, exe) {
		return filepath.Clean(ran), false, nil
	}
	return exe, false, nil
}

// hubCommand returns the absolute path of the running mcphub and the
// arguments that run `mcphub stdio` against
// this registry: GUI clients do not see the shell's PATH or $MCPHUB_CONFIG,
// so both are spelled out. With profile, the stdio relays to the profile's
// endpoint (--profile).
func (a *app) hubCommand(profile string) (string, []string, error) {
	exe, goRun, err := installedExecutable(os.Executable, exec.LookPath, os.Args[0])
	if err != nil {
		return "", nil, fmt.Errorf("cannot find the mcphub binary for a stdio entry: %w", err)
	}
	if goRun {
		fmt.Fprintf(a.stderr, "warning: this mcphub runs from go run's temporary build directory, which is gone once it exits; install it (go install ./cmd/mcphub) and run connect with the installed binary, or the client will not find %s\n", exe)
	}
	args := []string{"stdio"}
	cfg, err := filepath.Abs(a.configPath)
	if err != nil {
		return "", nil, err
	}
	if def, err := builtinRegistryPath(); err != nil || !sameFile(cfg, def) {
		args = append(args, "--config", cfg)
	}
	data, err := filepath.Abs(a.dataDir)
	if err != nil {
		return "", nil, err
	}
	// A client does not see $MCPHUB_DATA either.
	if os.Getenv("MCPHUB_DATA") != "" || !sameFile(data, registry.DefaultDataDir()) {
		args = append(args, "--data-dir", data)
	}
	if profile != "" {
		args = append(args, "--profile", profile)
	}
	return exe, args, nil
}

// builtinRegistryPath is the registry mcphub uses with neither --config
// nor $MCPHUB_CONFIG, which is what a client that starts mcphub gets.
func builtinRegistryPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "mcphub", "hub.toml"), nil
}

// sameFile reports whether two absolute paths name the same file, also
// when one reaches it through a symlink.
func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// hubEntry builds the entry that points client c at the hub: the stdio
// entry when asked or when the client takes no other (relaying to
// profile's endpoint when profile is set), else the HTTP one, at url.
func (a *app) hubEntry(c clientKind, stdio bool, url string, headers map[string]string, profile string) (entry, error) {
	if stdio || c.remote == nil {
		cmd, args, err := a.hubCommand(profile)
		if err != nil {
			return nil, err
		}
		return c.stdio(cmd, args), nil
	}
	if url == "" {
		return nil, errors.New("no hub URL")
	}
	return c.remote(url, headers), nil
}

// clientEntry is a server entry of a client's file: its name and how it
// runs, read as mcphub import reads it.
type clientEntry struct {
	name    string
	command string
	args    []string
	url     string
	// spec is the entry as mcphub import would add it (variables in
	// mcphub's ${VAR} form, Zed's older command object flattened, Codex's
	// header settings merged); readable is false when import skips it.
	spec     registry.ServerSpec
	readable bool
	// prompted is set when the entry uses values the client asks the user
	// for (VS Code's ${input:...}), which mcphub cannot know.
	prompted bool
}

// entryOf reads a decoded entry through mcphub import's reader, so that
// connect --move and import agree on what an entry runs. asTOML says the
// fields come from Codex's config.toml. An entry import cannot read keeps
// only its plain command, args and URL.
func entryOf(name string, fields map[string]any, asTOML bool) clientEntry {
	str := func(k string) string { s, _ := fields[k].(string); return s }
	e := clientEntry{name: name, command: str("command")}
	for _, k := range []string{"url", "serverUrl", "httpUrl"} {
		if e.url == "" {
			e.url = str(k)
		}
	}
	if list, ok := fields["args"].([]any); ok {
		for _, a := range list {
			s, _ := a.(string)
			e.args = append(e.args, s)
		}
	}
	var data []byte
	var err error
	if asTOML {
		var b bytes.Buffer
		err = toml.NewEncoder(&b).Encode(map[string]any{"mcp_servers": map[string]any{name: fields}})
		data = b.Bytes()
	} else {
		data, err = json.Marshal(map[string]any{"mcpServers": map[string]any{name: fields}})
	}
	if err != nil {
		return e
	}
	e.prompted = bytes.Contains(data, []byte("${input:"))
	res, err := registry.ImportClientConfigWith(data, registry.ImportOptions{KeepSecrets: true, TOML: asTOML})
	if err != nil || len(res.Specs) != 1 {
		return e
	}
	e.spec, e.readable = res.Specs[0], true
	e.command, e.args, e.url = e.spec.Command, e.spec.Args, e.spec.URL
	return e
}

// tomlTable writes a Codex [mcp_servers.NAME] table for the entry.
func tomlTable(name string, e entry, nl string) string {
	var b strings.Builder
	b.WriteString("[mcp_servers." + tomlKey(name) + "]" + nl)
	for _, f := range e {
		b.WriteString(tomlKey(f.key) + " = " + tomlValue(f.value) + nl)
	}
	return b.String()
}

// tomlKey writes a key bare when TOML allows it, else quoted.
func tomlKey(k string) string {
	if k != "" && strings.Trim(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") == "" {
		return k
	}
	return tomlString(k)
}

// tomlValue writes a string, a list of strings or an inline table of
// strings.
func tomlValue(v any) string {
	switch v := v.(type) {
	case []string:
		parts := make([]string, len(v))
		for i, s := range v {
			parts[i] = tomlString(s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]string:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(v)) {
			parts = append(parts, tomlKey(k)+" = "+tomlString(v[k]))
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	default:
		return tomlString(fmt.Sprint(v))
	}
}

// tomlString writes a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// cutBlock removes text[start:end], and one blank line with it when the
// block sat between blank lines (or at the start or end of the file), so
// that removing a table leaves one blank line between its neighbours.
func cutBlock(text string, start, end int) string {
	before, after := text[:start], text[end:]
	if n := blankLine(after); n > 0 && (before == "" || prevLineBlank(before)) {
		after = after[n:]
	} else if after == "" && prevLineBlank(before) {
		before = before[:strings.LastIndexByte(before[:len(before)-1], '\n')+1]
	}
	return before + after
}

// blankLine returns the length of s's first line when it is blank.
func blankLine(s string) int {
	i := strings.IndexByte(s, '\n')
	if i < 0 || strings.Trim(s[:i], " \t\r") != "" {
		return 0
	}
	return i + 1
}

// prevLineBlank reports whether the last complete line of s is blank.
func prevLineBlank(s string) bool {
	if !strings.HasSuffix(s, "\n") {
		return false
	}
	s = s[:len(s)-1]
	return strings.Trim(s[strings.LastIndexByte(s, '\n')+1:], " \t\r") == ""
}

// appendBlock adds a table at the end of text, after a blank line.
func appendBlock(text, table, nl string) string {
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += nl
	}
	if strings.Trim(text, " \t\r\n") != "" && !prevLineBlank(text) {
		text += nl
	}
	return text + table
}
