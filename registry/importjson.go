package registry

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ImportClientConfig reads the MCP server list of another client's JSON
// config: Claude Desktop, Claude Code and Cursor ({"mcpServers": {...}}) and
// VS Code (.vscode/mcp.json {"servers": {...}} or settings.json
// {"mcp": {"servers": {...}}}). Comments and trailing commas, which VS Code
// allows, are accepted.
//
// Names are made valid ([a-z0-9-], at most 32 characters, unique) with a note
// for each rename. Variables become mcphub's ${VAR} form: VS Code's
// ${env:NAME} becomes ${NAME}, ${input:id} becomes ${ID} (with a note: the
// value must now come from mcphub's environment) and ${userHome} becomes
// ${HOME}; a literal $ becomes $$. What cannot be mapped (envFile, an unknown
// type, unknown fields, variables mcphub cannot know) is described in notes
// and skipped, never fatal. err is set only when data is not a config at
// all. The specs are sorted by name.
func ImportClientConfig(data []byte) (specs []ServerSpec, notes []string, err error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(stripJSONC(data), &top); err != nil {
		return nil, nil, fmt.Errorf("registry: import: not a JSON object: %w", err)
	}
	var list json.RawMessage
	switch {
	case top["mcpServers"] != nil:
		list = top["mcpServers"]
	case top["servers"] != nil:
		list = top["servers"]
	case top["mcp"] != nil:
		var mcp map[string]json.RawMessage
		if json.Unmarshal(top["mcp"], &mcp) == nil {
			list = mcp["servers"]
		}
	}
	if list == nil {
		return nil, nil, fmt.Errorf(`registry: import: no "mcpServers", "servers" or "mcp.servers" object; expected a Claude Desktop, Cursor or VS Code MCP config`)
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(list, &entries); err != nil {
		return nil, nil, fmt.Errorf("registry: import: the server list is not an object: %w", err)
	}
	used := map[string]bool{}
	for _, orig := range slices.Sorted(maps.Keys(entries)) {
		im := &importer{orig: orig}
		spec, ok := im.entry(entries[orig])
		if ok {
			spec.Name = im.name(orig, used)
			specs = append(specs, spec)
		}
		notes = append(notes, im.notes...)
	}
	slices.SortFunc(specs, func(a, b ServerSpec) int { return strings.Compare(a.Name, b.Name) })
	return specs, notes, nil
}

type importer struct {
	orig  string
	notes []string
}

func (im *importer) note(format string, args ...any) {
	im.notes = append(im.notes, fmt.Sprintf("server %q: ", im.orig)+fmt.Sprintf(format, args...))
}

// importFields are the fields other clients use that mcphub maps.
var importFields = []string{"type", "transport", "transportType", "command", "args", "env",
	"cwd", "url", "serverUrl", "headers", "disabled", "envFile"}

func (im *importer) entry(raw json.RawMessage) (ServerSpec, bool) {
	var f map[string]json.RawMessage
	if err := json.Unmarshal(raw, &f); err != nil {
		im.note("not an object; skipped")
		return ServerSpec{}, false
	}
	var s ServerSpec
	for _, k := range slices.Sorted(maps.Keys(f)) {
		if !slices.Contains(importFields, k) {
			im.note("field %q has no mcphub equivalent; ignored", k)
		}
	}
	typ := im.str(f, "type")
	if typ == "" {
		typ = cmp.Or(im.str(f, "transport"), im.str(f, "transportType"))
	}
	s.Command = im.str(f, "command")
	s.URL = cmp.Or(im.str(f, "url"), im.str(f, "serverUrl"))
	switch strings.ToLower(typ) {
	case "":
	case "stdio":
		s.URL = ""
	case "http", "streamable-http", "streamablehttp", "streamable_http":
		s.Command, s.Transport = "", TransportStreamableHTTP
	case "sse":
		s.Command, s.Transport = "", TransportSSE
	default:
		im.note("type %q is not stdio, http or sse; skipped", typ)
		return ServerSpec{}, false
	}
	switch {
	case s.Command != "" && s.URL != "":
		im.note("has both command and url; kept the command (stdio)")
		s.URL, s.Transport = "", ""
	case s.Command == "" && s.URL == "":
		im.note("has neither command nor url; skipped")
		return ServerSpec{}, false
	}
	if f["disabled"] != nil {
		var d bool
		if json.Unmarshal(f["disabled"], &d) == nil {
			s.Disabled = d
		}
	}
	if f["envFile"] != nil {
		im.note("envFile is not supported; copy its variables into env, or into mcphub's environment")
	}
	if s.Command != "" {
		im.stdio(f, &s)
	} else {
		im.remote(f, &s)
	}
	return s, true
}

func (im *importer) stdio(f map[string]json.RawMessage, s *ServerSpec) {
	if f["args"] != nil {
		if err := json.Unmarshal(f["args"], &s.Args); err != nil {
			im.note("args is not a list of strings; ignored")
			s.Args = nil
		}
	}
	for _, a := range append([]string{s.Command}, s.Args...) {
		if strings.Contains(a, "${") {
			im.note("command or args contain %q; mcphub does not expand variables there, so replace it by hand", a)
			break
		}
	}
	if i := slices.Index(s.Args, "mcp-remote"); i >= 0 && i+1 < len(s.Args) {
		im.note("runs mcp-remote; mcphub can connect to %s itself (url = %q)", s.Args[i+1], s.Args[i+1])
	}
	s.Env = im.strMap(f, "env")
	if cwd := im.str(f, "cwd"); cwd != "" {
		s.Cwd = im.vars("cwd", cwd)
	}
	if f["headers"] != nil {
		im.note("headers on a stdio server have no meaning; ignored")
	}
}

func (im *importer) remote(f map[string]json.RawMessage, s *ServerSpec) {
	if strings.Contains(s.URL, "${") {
		im.note("url contains a variable; mcphub does not expand variables in url, so replace it by hand")
	}
	s.Headers = im.strMap(f, "headers")
	for _, k := range []string{"args", "env", "cwd"} {
		if f[k] != nil {
			im.note("%s on a remote server has no meaning; ignored", k)
		}
	}
}

func (im *importer) str(f map[string]json.RawMessage, k string) string {
	if f[k] == nil {
		return ""
	}
	var v string
	if err := json.Unmarshal(f[k], &v); err != nil {
		im.note("%s is not a string; ignored", k)
	}
	return v
}

// strMap reads env or headers, mapping variables in the values.
func (im *importer) strMap(f map[string]json.RawMessage, k string) map[string]string {
	if f[k] == nil {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(f[k], &m); err != nil {
		im.note("%s is not an object; ignored", k)
		return nil
	}
	out := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		var v string
		switch x := m[name].(type) {
		case string:
			v = x
		case float64:
			v = strconv.FormatFloat(x, 'f', -1, 64)
		case bool:
			v = strconv.FormatBool(x)
		default:
			im.note("%s.%s is not a string; ignored", k, name)
			continue
		}
		out[name] = im.vars(k+"."+name, v)
	}
	return out
}

// vscodeOnly are VS Code variables that have no value outside an editor.
var vscodeOnly = []string{"workspaceFolder", "workspaceFolderBasename", "workspaceRoot", "file",
	"fileDirname", "relativeFile", "cwd", "pathSeparator", "execPath", "defaultBuildTask"}

// vars rewrites a value's variable references into mcphub's ${VAR} form.
func (im *importer) vars(where, v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '$' {
			b.WriteByte(v[i])
			continue
		}
		end := strings.IndexByte(v[i:], '}')
		if !strings.HasPrefix(v[i:], "${") || end < 0 {
			b.WriteString("$$")
			continue
		}
		ref := v[i+2 : i+end]
		b.WriteString(im.ref(where, ref))
		i += end
	}
	return b.String()
}

func (im *importer) ref(where, ref string) string {
	name, arg, hasArg := strings.Cut(ref, ":")
	switch {
	case ref == "userHome":
		return "${HOME}"
	case hasArg && name == "env" && validEnvName(arg):
		return "${" + arg + "}"
	case hasArg && name == "input":
		env := strings.ToUpper(strings.Map(func(r rune) rune {
			if r < 0x80 && isBare(byte(r)) && r != '-' {
				return r
			}
			return '_'
		}, arg))
		if !validEnvName(env) {
			env = "_" + env
		}
		im.note("%s uses VS Code input ${input:%s}; it now reads ${%s} from mcphub's environment", where, arg, env)
		return "${" + env + "}"
	case validEnvName(name) && hasArg && strings.HasPrefix(arg, "-"):
		im.note("%s: ${%s:-...} defaults are not supported; it now reads ${%s}", where, name, name)
		return "${" + name + "}"
	case validEnvName(ref):
		if slices.Contains(vscodeOnly, ref) {
			im.note("%s uses ${%s}, which only an editor knows; set %s in mcphub's environment or edit the value", where, ref, ref)
		}
		return "${" + ref + "}"
	}
	im.note("%s uses ${%s}, which mcphub cannot map; kept as literal text", where, ref)
	return "$${" + ref + "}"
}

// name makes a unique valid server name, noting any change.
func (im *importer) name(orig string, used map[string]bool) string {
	n := normalizeName(orig)
	if n == "" {
		n = "server"
	}
	base := n
	for i := 2; used[n]; i++ {
		suffix := "-" + strconv.Itoa(i)
		n = strings.TrimRight(base[:min(len(base), 32-len(suffix))], "-") + suffix
	}
	used[n] = true
	if n != orig {
		im.note("renamed to %q (names are 1-32 characters of a-z, 0-9 and -)", n)
	}
	return n
}

// stripJSONC removes // and /* */ comments and then trailing commas, both
// outside strings, so that VS Code's JSON with comments decodes.
func stripJSONC(data []byte) []byte {
	var noComments []byte
	scanJSON(data, func(i int, inString bool) int {
		switch {
		case !inString && data[i] == '/' && i+1 < len(data) && data[i+1] == '/':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			return i
		case !inString && data[i] == '/' && i+1 < len(data) && data[i+1] == '*':
			end := strings.Index(string(data[i+2:]), "*/")
			if end < 0 {
				return len(data)
			}
			return i + end + 4
		}
		noComments = append(noComments, data[i])
		return i + 1
	})
	var out []byte
	scanJSON(noComments, func(i int, inString bool) int {
		if !inString && noComments[i] == ',' {
			j := i + 1
			for j < len(noComments) && strings.IndexByte(" \t\r\n", noComments[j]) >= 0 {
				j++
			}
			if j < len(noComments) && (noComments[j] == '}' || noComments[j] == ']') {
				return i + 1
			}
		}
		out = append(out, noComments[i])
		return i + 1
	})
	return out
}

// scanJSON calls step for each position, telling it whether the byte is
// inside a string; step returns the next position to visit.
func scanJSON(data []byte, step func(i int, inString bool) int) {
	inString, escaped := false, false
	for i := 0; i < len(data); {
		c := data[i]
		if inString {
			next := step(i, true)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			i = next
			continue
		}
		next := step(i, false)
		if c == '"' && next == i+1 {
			inString = true
		}
		i = next
	}
}
