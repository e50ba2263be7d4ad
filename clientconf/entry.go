package clientconf

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/mcphub/mcphub/registry"
)

// Field is one member of a client's entry for a server.
type Field struct {
	Key string
	// Value is a string, a []string or a map[string]string.
	Value any
}

// Entry is a client's config entry for one server, with its members in the
// order they are written (the order the clients' own docs use). Client.Hub
// builds the one that points a client at the hub.
type Entry []Field

// MarshalJSON writes the members in order, without HTML escaping, so that a
// URL with & or a command path reads as it is.
func (e Entry) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range e {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshal(f.Key)
		if err != nil {
			return nil, err
		}
		v, err := marshal(f.Value)
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

// marshal is json.Marshal without HTML escaping, so that a URL with & or a
// sentence that says <token> reads as it is: how entries are written and
// how connect --json prints a Result.
func marshal(v any) ([]byte, error) {
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
	raw, err := marshal(v)
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
func withHeaders(e Entry, headers map[string]string) Entry {
	if len(headers) > 0 {
		e = append(e, Field{"headers", headers})
	}
	return e
}

// httpEntry is the {"type": "http", "url", "headers"} shape of Claude Code
// and VS Code.
func httpEntry(url string, h map[string]string) Entry {
	return withHeaders(Entry{{"type", "http"}, {"url", url}}, h)
}

// urlEntry builds the {KEY: url, "headers"} shape the other clients use,
// each with its own name for the URL.
func urlEntry(key string) func(string, map[string]string) Entry {
	return func(url string, h map[string]string) Entry {
		return withHeaders(Entry{{key, url}}, h)
	}
}

// typedStdioEntry is the {"type": "stdio", "command", "args"} shape of
// clients that want the type spelled out.
func typedStdioEntry(command string, args []string) Entry {
	return Entry{{"type", "stdio"}, {"command", command}, {"args", args}}
}

// stdioEntry is the plain {"command", "args"} shape.
func stdioEntry(command string, args []string) Entry {
	return Entry{{"command", command}, {"args", args}}
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
	res, err := Import(data, ImportOptions{KeepSecrets: true, TOML: asTOML})
	if err != nil || len(res.Specs) != 1 {
		return e
	}
	e.spec, e.readable = res.Specs[0], true
	e.command, e.args, e.url = e.spec.Command, e.spec.Args, e.spec.URL
	return e
}

// Snippet is the entry called name as c's file would hold it, for the user
// to paste, or to replace by hand an entry mcphub cannot edit.
func (c Client) Snippet(name string, e Entry) string {
	if c.Format == FormatTOML {
		return tomlTable(name, e, "\n")
	}
	b, _ := indentJSON(map[string]any{c.Key: map[string]any{name: e}}, "", "  ")
	return string(b) + "\n"
}

// claudeAddLine is the claude command that adds the entry called name,
// for users who let Claude Code edit its own file; stdio says e is the
// stdio entry.
func claudeAddLine(name string, e Entry, stdio bool) string {
	fields := map[string]any{}
	for _, f := range e {
		fields[f.Key] = f.Value
	}
	if stdio {
		args, _ := fields["args"].([]string)
		line := "claude mcp add --transport stdio --scope user " + name + " --"
		for _, w := range append([]string{fields["command"].(string)}, args...) {
			line += " " + shellQuote(w)
		}
		return line
	}
	line := "claude mcp add --transport http --scope user"
	h, _ := fields["headers"].(map[string]string)
	for _, k := range slices.Sorted(maps.Keys(h)) {
		line += " --header " + shellQuote(k+": "+h[k])
	}
	return line + " " + name + " " + fields["url"].(string)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./:=@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
