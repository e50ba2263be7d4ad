package clientconf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/mcphub/mcphub/internal/redact"
	"github.com/mcphub/mcphub/registry"
)

// ImportOptions chooses how Import reads a client config. The zero value
// skips no entry as the hub and replaces literal secrets (see
// KeepSecrets).
type ImportOptions struct {
	// Hub is the hub the servers are imported into. When it has a listen
	// address, entries that point at it are skipped: an HTTP entry whose
	// URL reaches one of its addresses on any path, mcp-remote to such a
	// URL, and "mcphub stdio" on its registry (see
	// registry.PointsAtHub). Importing the hub into itself would make it
	// its own upstream.
	Hub registry.Self
	// KeepSecrets writes literal secrets in env and headers as they are,
	// instead of replacing each with a ${VAR} reference (see
	// ImportResult.Secrets).
	KeepSecrets bool
	// TOML reads data as a Codex config.toml. Without it, data is read as
	// JSON and, when that fails, as TOML.
	TOML bool
	// LookupEnv, when set, is the environment whose values a replaced
	// secret is compared with (ImportedSecret.Env); values are never
	// copied out of it.
	LookupEnv func(string) (string, bool)
	// TakenVars are the variables the registry the servers go into refers
	// to already (registry.Registry.SecretEnvNames). A literal secret gets one of
	// these names, as a variable the file refers to with ${NAME}, only when
	// LookupEnv holds that very literal under it; else it gets NAME_2.
	TakenVars []string
}

// ImportResult is what Import found in a client config.
type ImportResult struct {
	// Specs are the servers to add, sorted by name.
	Specs []registry.ServerSpec
	// Notes describe, one per line, what was renamed, mapped, skipped or
	// could not be mapped. None contains an env or header value.
	Notes []string
	// HubEntries are the names, as the file spells them, of the entries
	// skipped because they point at this hub.
	HubEntries []string
	// Secrets are the variables that now stand for literal secrets of the
	// file, one per variable, sorted by name; empty with KeepSecrets.
	Secrets []ImportedSecret
}

// Import reads the MCP server list of another client's
// config: Claude Desktop, Claude Code, Cursor, Windsurf and Gemini CLI
// ({"mcpServers": {...}}), VS Code (.vscode/mcp.json {"servers": {...}} or
// settings.json {"mcp": {"servers": {...}}}), Zed ({"context_servers":
// {...}}) and Codex (config.toml [mcp_servers.NAME]). Comments and trailing
// commas, which VS Code, Zed and Gemini allow, are accepted in JSON.
//
// Names are made valid ([a-z0-9-], at most 32 characters, unique) with a note
// for each rename. Variables become mcphub's ${VAR} form: VS Code's
// ${env:NAME} becomes ${NAME}, ${input:id} becomes ${ID} (with a note: the
// value must now come from mcphub's environment) and ${userHome} becomes
// ${HOME}; a literal $ becomes $$. Unless opt.KeepSecrets, a literal secret
// (an env value whose key names a token, key, secret or password, the
// password of a URL in an env value, or a credential header's value)
// becomes a ${VAR} reference, listed in ImportResult.Secrets; a URL with a
// password in args or url stays, with a note. Claude Code's ~/.claude.json
// also lists servers per project (projects.PATH.mcpServers): those are
// read too, and a name the top level or an earlier project uses already is
// skipped with a note. A UTF-8 byte order mark is ignored. What cannot be mapped
// (envFile, an unknown type, unknown fields, variables mcphub cannot know)
// is described in notes and skipped, never fatal. err is set only when
// data is not a config at all.
func Import(data []byte, opt ImportOptions) (ImportResult, error) {
	var res ImportResult
	entries, shape, err := clientEntries(bytes.TrimPrefix(data, utf8BOM), opt.TOML)
	if err != nil {
		return res, err
	}
	res.Notes = append(res.Notes, shape.notes...)
	used := map[string]bool{}
	for _, orig := range slices.Sorted(maps.Keys(entries)) {
		im := &importer{orig: orig, gemini: shape.gemini}
		spec, ok := im.entry(entries[orig])
		if ok && (len(opt.Hub.Listens) > 0 || opt.Hub.Config != "") && registry.PointsAtHub(spec, opt.Hub) {
			// The entry's other notes would only be noise about an entry
			// that is not imported.
			res.HubEntries = append(res.HubEntries, orig)
			res.Notes = append(res.Notes, fmt.Sprintf("skipped %q: it points at this hub", orig))
			continue
		}
		if ok {
			spec.Name = im.name(orig, used)
			res.Specs = append(res.Specs, spec)
		}
		res.Notes = append(res.Notes, im.notes...)
	}
	slices.SortFunc(res.Specs, func(a, b registry.ServerSpec) int { return strings.Compare(a.Name, b.Name) })
	if !opt.KeepSecrets {
		var notes []string
		res.Secrets, notes = replaceSecrets(res.Specs, opt.LookupEnv, opt.TakenVars)
		res.Notes = append(res.Notes, notes...)
	}
	return res, nil
}

// utf8BOM is the byte order mark some Windows editors write at the start
// of a UTF-8 file.
var utf8BOM = []byte("\xef\xbb\xbf")

// fileShape is what the whole file tells about how to read its entries.
type fileShape struct {
	// gemini is set when an entry uses a field only Gemini CLI writes: its
	// plain url then means the legacy SSE transport.
	gemini bool
	// notes are about the file as a whole, such as project entries of
	// ~/.claude.json skipped for a name used already.
	notes []string
}

// clientEntries finds the server entries of a config, each as a JSON
// object of the fields the importer knows.
func clientEntries(data []byte, asTOML bool) (map[string]json.RawMessage, fileShape, error) {
	if asTOML {
		e, err := codexEntries(data)
		return e, fileShape{}, err
	}
	var top map[string]json.RawMessage
	jerr := json.Unmarshal(stripJSONC(data), &top)
	if jerr != nil {
		e, terr := codexEntries(data)
		if terr == nil {
			return e, fileShape{}, nil
		}
		if errors.Is(terr, errNoCodexServers) {
			terr = errors.New("it has no [mcp_servers] table")
		}
		return nil, fileShape{}, fmt.Errorf("registry: import: not a JSON object (%w), nor a Codex TOML config (%v)", jerr, terr)
	}
	list := firstOf(top, "mcpServers", "context_servers", "servers")
	if list == nil && top["mcp"] != nil {
		var mcp map[string]json.RawMessage
		if json.Unmarshal(top["mcp"], &mcp) == nil {
			list = mcp["servers"]
		}
	}
	projects := claudeProjects(top["projects"])
	if list == nil && len(projects) == 0 {
		return nil, fileShape{}, errors.New(`registry: import: no "mcpServers", "context_servers", "servers" or "mcp.servers" object; ` +
			`expected a Claude Desktop, Claude Code, Cursor, VS Code, Windsurf, Gemini CLI or Zed MCP config, or a Codex config.toml`)
	}
	var entries map[string]json.RawMessage
	if list != nil {
		if err := json.Unmarshal(list, &entries); err != nil {
			return nil, fileShape{}, fmt.Errorf("registry: import: the server list is not an object: %w", err)
		}
	}
	if entries == nil { // no list, or "mcpServers": null
		entries = map[string]json.RawMessage{}
	}
	var shape fileShape
	shape.notes = mergeProjects(entries, projects)
	for _, raw := range entries {
		var f map[string]json.RawMessage
		if json.Unmarshal(raw, &f) == nil && firstOf(f, geminiFields...) != nil {
			shape.gemini = true
		}
	}
	return entries, shape, nil
}

// claudeProject is one project of Claude Code's ~/.claude.json with MCP
// servers of its own.
type claudeProject struct {
	path    string
	servers map[string]json.RawMessage
	names   []string // in the file's order
}

// claudeProjects reads the projects of Claude Code's ~/.claude.json,
// {"/home/u/proj": {"mcpServers": {...}}, ...}, in the file's order, keeping
// those that list servers. Anything else under projects is ignored.
func claudeProjects(raw json.RawMessage) []claudeProject {
	paths, byPath := orderedObject(raw)
	var out []claudeProject
	for _, p := range paths {
		var proj map[string]json.RawMessage
		if json.Unmarshal(byPath[p], &proj) != nil || proj["mcpServers"] == nil {
			continue
		}
		names, servers := orderedObject(proj["mcpServers"])
		if len(names) > 0 {
			out = append(out, claudeProject{path: p, servers: servers, names: names})
		}
	}
	return out
}

// orderedObject decodes a JSON object into its keys, in the order the
// text gives them (each once), and its values; nothing when raw is not an
// object.
func orderedObject(raw json.RawMessage) ([]string, map[string]json.RawMessage) {
	var values map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &values) != nil || values == nil {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, nil
	}
	var keys []string
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil
		}
		k, _ := tok.(string)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, nil
		}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys, values
}

// mergeProjects adds the projects' servers to entries, the top-level list.
// A name the top level or an earlier project holds already keeps that
// entry; the skipped ones are returned as notes naming the project.
func mergeProjects(entries map[string]json.RawMessage, projects []claudeProject) []string {
	from := map[string]string{}
	var notes []string
	for _, p := range projects {
		for _, name := range p.names {
			if _, dup := entries[name]; !dup {
				entries[name], from[name] = p.servers[name], p.path
				continue
			}
			kept := "the top-level entry"
			if prev, ok := from[name]; ok {
				kept = "the entry of project " + prev
			}
			notes = append(notes, fmt.Sprintf("server %q of project %s: skipped; its name is taken by %s", name, p.path, kept))
		}
	}
	return notes
}

// geminiFields are entry fields that only Gemini CLI's settings.json uses.
var geminiFields = []string{"httpUrl", "trust", "includeTools", "excludeTools"}

// firstOf is the first of keys that m holds.
func firstOf(m map[string]json.RawMessage, keys ...string) json.RawMessage {
	for _, k := range keys {
		if m[k] != nil {
			return m[k]
		}
	}
	return nil
}

type importer struct {
	orig   string
	gemini bool
	notes  []string
}

func (im *importer) note(format string, args ...any) {
	im.notes = append(im.notes, fmt.Sprintf("server %q: ", im.orig)+fmt.Sprintf(format, args...))
}

// importFields are the fields other clients use that mcphub maps.
var importFields = []string{"type", "transport", "transportType", "command", "args", "env",
	"cwd", "url", "serverUrl", "httpUrl", "headers", "disabled", "enabled", "envFile",
	"includeTools", "excludeTools", "disabledTools", "timeout", "source", codexExtraField}

func (im *importer) entry(raw json.RawMessage) (registry.ServerSpec, bool) {
	var f map[string]json.RawMessage
	if err := json.Unmarshal(raw, &f); err != nil || f == nil {
		im.note("not an object; skipped")
		return registry.ServerSpec{}, false
	}
	for _, k := range slices.Sorted(maps.Keys(f)) {
		if !slices.Contains(importFields, k) {
			im.note("field %q has no mcphub equivalent; ignored", k)
		}
	}
	if src := im.str(f, "source"); src == "extension" {
		im.note("is provided by a Zed extension, which mcphub cannot run; add the server's own command with mcphub add")
		return registry.ServerSpec{}, false
	}
	im.zedCommand(f)
	s, ok := im.kind(f)
	if !ok {
		return registry.ServerSpec{}, false
	}
	im.common(f, &s)
	if s.Command != "" {
		im.stdio(f, &s)
	} else {
		im.remote(f, &s)
	}
	if f[codexExtraField] != nil {
		im.codexExtras(f[codexExtraField], &s)
	}
	return s, true
}

// kind reads whether the entry is a stdio or a remote server, and which
// transport a remote one speaks.
func (im *importer) kind(f map[string]json.RawMessage) (registry.ServerSpec, bool) {
	var s registry.ServerSpec
	typ := im.str(f, "type")
	if typ == "" {
		typ = im.str(f, "transport")
	}
	if typ == "" {
		typ = im.str(f, "transportType")
	}
	s.Command = im.str(f, "command")
	im.url(f, &s)
	switch strings.ToLower(typ) {
	case "":
	case "stdio":
		s.URL, s.Transport = "", ""
	case "http", "streamable-http", "streamablehttp", "streamable_http":
		s.Command, s.Transport = "", registry.TransportStreamableHTTP
	case "sse":
		s.Command, s.Transport = "", registry.TransportSSE
	default:
		im.note("type %q is not stdio, http or sse; skipped", typ)
		return registry.ServerSpec{}, false
	}
	switch {
	case s.Command != "" && s.URL != "":
		im.note("has both command and url; kept the command (stdio)")
		s.URL, s.Transport = "", ""
	case s.Command == "" && s.URL == "":
		im.note("has neither command nor url; skipped")
		return registry.ServerSpec{}, false
	}
	return s, true
}

// url reads the remote URL: Gemini's httpUrl is Streamable HTTP and its
// plain url the legacy SSE transport; Windsurf writes serverUrl; everyone
// else url, for either transport.
func (im *importer) url(f map[string]json.RawMessage, s *registry.ServerSpec) {
	httpURL, plain, server := im.str(f, "httpUrl"), im.str(f, "url"), im.str(f, "serverUrl")
	switch {
	case httpURL != "":
		s.URL, s.Transport = httpURL, registry.TransportStreamableHTTP
		if plain != "" || server != "" {
			im.note("has both httpUrl and url; kept httpUrl (Streamable HTTP)")
		}
	case plain != "":
		s.URL = plain
		if im.gemini {
			s.Transport = registry.TransportSSE
		}
	case server != "":
		s.URL = server
	}
}

// common reads what stdio and remote entries share: enabled state and
// tool filters.
func (im *importer) common(f map[string]json.RawMessage, s *registry.ServerSpec) {
	if d, ok := im.boolean(f, "disabled"); ok && d {
		s.Disabled = true
	}
	if e, ok := im.boolean(f, "enabled"); ok && !e {
		s.Disabled = true
	}
	s.Allow = im.tools(f, "includeTools")
	s.Deny = append(im.tools(f, "excludeTools"), im.tools(f, "disabledTools")...)
	if f["timeout"] != nil {
		var ms float64
		switch {
		case !im.gemini:
			im.note("timeout is not mapped (its unit differs between clients); set call_timeout by hand")
		case json.Unmarshal(f["timeout"], &ms) != nil || ms <= 0:
			im.note("timeout is not a positive number of milliseconds; ignored")
		default:
			s.CallTimeout = msDuration(ms)
		}
	}
	if f["envFile"] != nil {
		im.note("envFile is not supported; copy its variables into env, or into mcphub's environment")
	}
}

func (im *importer) stdio(f map[string]json.RawMessage, s *registry.ServerSpec) {
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
	if u := registry.MCPRemoteURL(s.Args); u != "" {
		u = redact.URL(u)
		im.note("runs mcp-remote; mcphub can connect to %s itself (url = %q)", u, u)
	}
	s.Env = im.strMap(f, "env")
	if cwd := im.str(f, "cwd"); cwd != "" {
		s.Cwd = im.vars("cwd", cwd)
	}
	if f["headers"] != nil {
		im.note("headers on a stdio server have no meaning; ignored")
	}
}

func (im *importer) remote(f map[string]json.RawMessage, s *registry.ServerSpec) {
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

// zedCommand flattens the command object of Zed's older settings,
// {"command": {"path": ..., "args": [...], "env": {...}}}, into the
// command, args and env fields every other client uses.
func (im *importer) zedCommand(f map[string]json.RawMessage) {
	var c struct {
		Path string          `json:"path"`
		Args json.RawMessage `json:"args"`
		Env  json.RawMessage `json:"env"`
	}
	raw := bytes.TrimSpace(f["command"])
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &c) != nil {
		return
	}
	f["command"], _ = json.Marshal(c.Path)
	for k, v := range map[string]json.RawMessage{"args": c.Args, "env": c.Env} {
		if v != nil && f[k] == nil {
			f[k] = v
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

func (im *importer) boolean(f map[string]json.RawMessage, k string) (v, ok bool) {
	if f[k] == nil {
		return false, false
	}
	if err := json.Unmarshal(f[k], &v); err != nil {
		im.note("%s is not true or false; ignored", k)
		return false, false
	}
	return v, true
}

// tools reads a list of tool names as globs that match exactly those names.
func (im *importer) tools(f map[string]json.RawMessage, k string) []string {
	if f[k] == nil {
		return nil
	}
	var names []string
	if err := json.Unmarshal(f[k], &names); err != nil {
		im.note("%s is not a list of tool names; ignored", k)
		return nil
	}
	return globsOf(names)
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

// name makes a unique valid server name, noting any change.
func (im *importer) name(orig string, used map[string]bool) string {
	n := registry.NormalizeName(orig)
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
