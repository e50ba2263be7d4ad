package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/tailscale/hujson"
)

// errNotEditable means an entry is written in a form mcphub does not edit
// (a Codex entry inline in [mcp_servers]); the user edits it by hand.
var errNotEditable = errors.New("written inline, not as its own table")

// clientDoc is a client's config file being edited in memory. Edits touch
// only the entries they name; every other byte stays as it was.
type clientDoc interface {
	// entries lists the servers the file holds.
	entries() ([]clientEntry, error)
	// set adds the entry called name, or replaces it when it differs.
	set(name string, e entry) error
	// remove deletes the entry called name.
	remove(name string) error
	// bytes returns the file as edited.
	bytes() ([]byte, error)
}

// parseClientDoc parses a client's file; data is nil for a file that does
// not exist yet.
func parseClientDoc(path string, data []byte, c clientKind) (clientDoc, error) {
	if c.format == formatTOML {
		return parseTOMLDoc(path, data)
	}
	return parseJSONDoc(path, data, c.key)
}

// jsonDoc is a JSON or JSONC file edited through hujson's syntax tree, which
// keeps comments, trailing commas and whitespace of everything not edited.
type jsonDoc struct {
	root hujson.Value
	// key is the member that holds the servers.
	key string
	// strict is set when the file was standard JSON; it stays standard.
	strict bool
	// nl is the file's line ending and unit one level of indentation.
	nl, unit string
	// pretty says whether an empty object is laid out over lines.
	pretty bool
}

func parseJSONDoc(path string, data []byte, key string) (*jsonDoc, error) {
	d := &jsonDoc{key: key, nl: "\n", unit: "  ", pretty: true}
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}\n")
	}
	root, err := hujson.Parse(bytes.Clone(data))
	if err != nil {
		return nil, fmt.Errorf("%s does not parse as JSON: %w", path, err)
	}
	top, ok := root.Value.(*hujson.Object)
	if !ok {
		return nil, fmt.Errorf("%s is not a JSON object", path)
	}
	d.root, d.strict = root, root.IsStandard()
	if bytes.Contains(data, []byte("\r\n")) {
		d.nl = "\r\n"
	}
	if len(top.Members) > 0 {
		d.pretty = bytes.ContainsRune(top.Members[0].Name.BeforeExtra, '\n')
		if ind := lineIndent(top.Members[0].Name.BeforeExtra, ""); ind != "" {
			d.unit = ind
		}
	}
	return d, nil
}

// lineIndent returns the whitespace after the last newline of extra, or
// def when extra has no newline or has more than whitespace there.
func lineIndent(extra hujson.Extra, def string) string {
	i := bytes.LastIndexByte(extra, '\n')
	if i < 0 || len(bytes.Trim(extra[i+1:], " \t")) > 0 {
		return def
	}
	return string(extra[i+1:])
}

// pointer is the JSON pointer (RFC 6901) of the given members.
func pointer(names ...string) string {
	var b strings.Builder
	for _, n := range names {
		b.WriteString("/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(n))
	}
	return b.String()
}

// patch applies one RFC 6902 operation; value is JSON text, kept as it is.
func (d *jsonDoc) patch(op, ptr string, value []byte) error {
	p, _ := marshalJSON(ptr)
	text := `[{"op":"` + op + `","path":` + string(p)
	if value != nil {
		text += `,"value":` + string(value)
	}
	if err := d.root.Patch([]byte(text + "}]")); err != nil {
		return fmt.Errorf("edit %s: %w", ptr, err)
	}
	return nil
}

// member returns the index of the member called name, or -1.
func member(obj *hujson.Object, name string) int {
	for i, m := range obj.Members {
		if lit, ok := m.Name.Value.(hujson.Literal); ok && lit.String() == name {
			return i
		}
	}
	return -1
}

// servers returns the object that holds the servers and the indentation of
// its own line; with create, it adds an empty one when there is none.
func (d *jsonDoc) servers(create bool) (*hujson.Object, string, error) {
	top := d.root.Value.(*hujson.Object)
	i := member(top, d.key)
	switch {
	case i < 0 && !create:
		return nil, "", nil
	case i < 0:
		if err := d.add(top, "", pointer(d.key), json.RawMessage("{}")); err != nil {
			return nil, "", err
		}
		i = len(top.Members) - 1
	case top.Members[i].Value.Value.Kind() == 'n' && !create:
		return nil, "", nil
	case top.Members[i].Value.Value.Kind() == 'n':
		if err := d.patch("replace", pointer(d.key), []byte("{}")); err != nil {
			return nil, "", err
		}
	}
	m := top.Members[i]
	obj, ok := m.Value.Value.(*hujson.Object)
	if !ok {
		return nil, "", fmt.Errorf("%q is not an object", d.key)
	}
	return obj, lineIndent(m.Name.BeforeExtra, ""), nil
}

// multiline reports whether obj is laid out one member per line.
func (d *jsonDoc) multiline(obj *hujson.Object) bool {
	for _, m := range obj.Members {
		if bytes.ContainsRune(m.Name.BeforeExtra, '\n') {
			return true
		}
	}
	if len(obj.Members) > 0 || bytes.ContainsRune(obj.AfterExtra, '\n') {
		return bytes.ContainsRune(obj.AfterExtra, '\n')
	}
	// An empty object follows the file.
	return d.pretty
}

// render lays out v for a member indented by indent.
func (d *jsonDoc) render(v any, indent string, multi bool) ([]byte, error) {
	if !multi {
		return marshalJSON(v)
	}
	b, err := indentJSON(v, indent, d.unit)
	if err != nil {
		return nil, err
	}
	return bytes.ReplaceAll(b, []byte("\n"), []byte(d.nl)), nil
}

// add appends a new member to obj (whose own line is indented by indent),
// laid out like its siblings: on its own line in a multi-line object, with
// the same space after the colon, and with a trailing comma when the
// object had one.
func (d *jsonDoc) add(obj *hujson.Object, indent, ptr string, v any) error {
	n := len(obj.Members)
	multi := d.multiline(obj)
	mi, colon := indent+d.unit, ""
	if multi {
		colon = " "
	}
	trailing := false
	if n > 0 {
		last := obj.Members[n-1]
		mi = lineIndent(last.Name.BeforeExtra, mi)
		if len(bytes.Trim(last.Value.BeforeExtra, " \t")) == 0 {
			colon = string(last.Value.BeforeExtra)
		}
		trailing = last.Value.AfterExtra != nil
	}
	val, err := d.render(v, mi, multi)
	if err != nil {
		return err
	}
	if err := d.patch("add", ptr, val); err != nil {
		return err
	}
	m := &obj.Members[len(obj.Members)-1]
	if multi {
		before := bytes.Clone(m.Name.BeforeExtra)
		if len(bytes.Trim(before, " \t\r\n")) == 0 {
			before = nil
		}
		if !bytes.HasSuffix(before, []byte("\n")) {
			before = append(before, d.nl...)
		}
		m.Name.BeforeExtra = append(before, mi...)
		if n == 0 && len(bytes.Trim(obj.AfterExtra, " \t")) == 0 {
			obj.AfterExtra = hujson.Extra(d.nl + indent)
		}
	}
	m.Value.BeforeExtra = hujson.Extra(colon)
	if trailing {
		m.Value.AfterExtra = hujson.Extra{}
	}
	return nil
}

func (d *jsonDoc) entries() ([]clientEntry, error) {
	obj, _, err := d.servers(false)
	if obj == nil || err != nil {
		return nil, err
	}
	var out []clientEntry
	for _, m := range obj.Members {
		name := m.Name.Value.(hujson.Literal).String()
		var fields map[string]any
		_ = json.Unmarshal(standard(m.Value), &fields)
		out = append(out, entryOf(name, fields))
	}
	return out, nil
}

// standard is v as standard JSON.
func standard(v hujson.Value) []byte {
	v = v.Clone()
	v.Standardize()
	return v.Pack()
}

func (d *jsonDoc) set(name string, e entry) error {
	obj, indent, err := d.servers(true)
	if err != nil {
		return err
	}
	i := member(obj, name)
	if i < 0 {
		return d.add(obj, indent, pointer(d.key, name), e)
	}
	var have, want any
	raw, _ := marshalJSON(e)
	if json.Unmarshal(standard(obj.Members[i].Value), &have) == nil && json.Unmarshal(raw, &want) == nil &&
		reflect.DeepEqual(have, want) {
		return nil
	}
	val, err := d.render(e, lineIndent(obj.Members[i].Name.BeforeExtra, indent+d.unit), d.multiline(obj))
	if err != nil {
		return err
	}
	return d.patch("replace", pointer(d.key, name), val)
}

func (d *jsonDoc) remove(name string) error {
	obj, _, err := d.servers(false)
	if obj == nil || err != nil || member(obj, name) < 0 {
		return err
	}
	trailing := obj.Members[len(obj.Members)-1].Value.AfterExtra != nil
	if err := d.patch("remove", pointer(d.key, name), nil); err != nil {
		return err
	}
	if n := len(obj.Members); trailing && n > 0 && obj.Members[n-1].Value.AfterExtra == nil {
		obj.Members[n-1].Value.AfterExtra = hujson.Extra{}
	}
	return nil
}

func (d *jsonDoc) bytes() ([]byte, error) {
	out := d.root.Pack()
	if d.strict && !json.Valid(out) {
		// The edits above never add comments or trailing commas; this
		// guards the promise that a strict file stays strict.
		return nil, errors.New("the edit would leave the file not standard JSON")
	}
	return out, nil
}

// tomlDoc is a Codex config.toml edited as text. No TOML library keeps
// comments and layout when it writes, so whole tables are cut out or
// spliced in, found by their header lines, and every result is decoded to
// check it.
type tomlDoc struct {
	path, text string
	// nl is the file's line ending.
	nl string
}

func parseTOMLDoc(path string, data []byte) (*tomlDoc, error) {
	d := &tomlDoc{path: path, text: string(data), nl: "\n"}
	if strings.Contains(d.text, "\r\n") {
		d.nl = "\r\n"
	}
	if _, err := decodeTOML(path, d.text); err != nil {
		return nil, err
	}
	return d, nil
}

// decodeTOML decodes text, naming file:line when it does not parse.
func decodeTOML(path, text string) (map[string]any, error) {
	var m map[string]any
	if _, err := toml.Decode(text, &m); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s:%d: %s", path, pe.Position.Line, pe.Message)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// tomlServers is the decoded [mcp_servers] table.
func tomlServers(m map[string]any) map[string]any {
	s, _ := m["mcp_servers"].(map[string]any)
	return s
}

func (d *tomlDoc) entries() ([]clientEntry, error) {
	m, err := decodeTOML(d.path, d.text)
	if err != nil {
		return nil, err
	}
	servers := tomlServers(m)
	var out []clientEntry
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		fields, _ := servers[name].(map[string]any)
		out = append(out, entryOf(name, fields))
	}
	return out, nil
}

// own returns the tables of the entry called name: [mcp_servers.NAME] and
// its subtables. It returns errNotEditable when the entry is (also)
// written some other way, inline in [mcp_servers] or as dotted keys, which
// cutting tables cannot change.
func (d *tomlDoc) own(name string) ([]tomlBlock, error) {
	var mine []tomlBlock
	for _, b := range tomlBlocks(d.text) {
		if len(b.key) >= 2 && b.key[0] == "mcp_servers" && b.key[1] == name {
			mine = append(mine, b)
		}
	}
	rest := d.text
	for i := len(mine) - 1; i >= 0; i-- {
		rest = rest[:mine[i].lead] + rest[mine[i].end:]
	}
	m, err := decodeTOML(d.path, rest)
	if err != nil {
		return nil, errNotEditable
	}
	if _, ok := tomlServers(m)[name]; ok {
		return nil, errNotEditable
	}
	return mine, nil
}

func (d *tomlDoc) set(name string, e entry) error {
	mine, err := d.own(name)
	if err != nil {
		return err
	}
	table := tomlTable(name, e, d.nl)
	text, replaced := d.text, false
	// Cut from the end so that earlier offsets stay valid; the entry's own
	// table is replaced where it is, its subtables go.
	for i := len(mine) - 1; i >= 0; i-- {
		b := mine[i]
		if !b.array && len(b.key) == 2 && !replaced {
			text, replaced = text[:b.start]+table+text[b.end:], true
			continue
		}
		text = cutBlock(text, b.lead, b.end)
	}
	if !replaced {
		text = appendBlock(text, table, d.nl)
	}
	return d.commit(text, name, true)
}

func (d *tomlDoc) remove(name string) error {
	mine, err := d.own(name)
	if err != nil {
		return err
	}
	text := d.text
	for i := len(mine) - 1; i >= 0; i-- {
		text = cutBlock(text, mine[i].lead, mine[i].end)
	}
	return d.commit(text, name, false)
}

// commit takes text as the file if it decodes and has the entry called
// name exactly when it should.
func (d *tomlDoc) commit(text, name string, want bool) error {
	m, err := decodeTOML(d.path, text)
	if err != nil {
		return fmt.Errorf("the edit would break the file, so it was not made: %w", err)
	}
	if _, ok := tomlServers(m)[name]; ok != want {
		return fmt.Errorf("%s: editing [mcp_servers.%s] did not have the intended effect, so it was not made", d.path, name)
	}
	d.text = text
	return nil
}

func (d *tomlDoc) bytes() ([]byte, error) { return []byte(d.text), nil }

// tomlBlock is one table of a TOML file: its header line and body
// (text[start:end]), and the comment lines directly above the header,
// which describe it (text[lead:start]).
type tomlBlock struct {
	key              []string
	array            bool
	lead, start, end int
}

// tomlBlocks finds the tables of a TOML file by their header lines. A
// table's body runs to the next header; comment lines just above that
// header belong to it, and blank lines at the end of the body stay where
// they are. Header-like lines inside multi-line strings and arrays are not
// headers.
func tomlBlocks(text string) []tomlBlock {
	lines := scanTOMLLines(text)
	var blocks []tomlBlock
	for i, l := range lines {
		if l.kind != lineHeader {
			continue
		}
		b := tomlBlock{key: l.key, array: l.array, lead: l.start, start: l.start}
		for j := i - 1; j >= 0 && lines[j].kind == lineComment; j-- {
			b.lead = lines[j].start
		}
		next := i + 1
		for next < len(lines) && lines[next].kind != lineHeader {
			next++
		}
		last := i
		for j := i + 1; j < next; j++ {
			if lines[j].kind == lineContent {
				last = j
			}
		}
		// Comments right after the body are the body's, unless they run
		// up to the next header and so describe it.
		j := last + 1
		for j < next && lines[j].kind == lineComment {
			j++
		}
		if j < next || next == len(lines) {
			last = j - 1
		}
		b.end = lines[last].end
		blocks = append(blocks, b)
	}
	return blocks
}

type lineKind int

const (
	lineBlank lineKind = iota
	lineComment
	lineHeader
	lineContent
)

// tomlLine is one line of a TOML file: text[start:end], end after its
// newline.
type tomlLine struct {
	start, end int
	kind       lineKind
	key        []string
	array      bool
}

func scanTOMLLines(text string) []tomlLine {
	var lines []tomlLine
	var lx tomlLexer
	for start := 0; start < len(text); {
		end := len(text)
		if i := strings.IndexByte(text[start:], '\n'); i >= 0 {
			end = start + i + 1
		}
		line := text[start:end]
		l := tomlLine{start: start, end: end, kind: lineContent}
		if lx.ml == "" && lx.depth == 0 {
			t := strings.Trim(line, " \t\r\n")
			switch {
			case t == "":
				l.kind = lineBlank
			case t[0] == '#':
				l.kind = lineComment
			case t[0] == '[':
				if key, ok := headerKey(line); ok {
					l.kind, l.key, l.array = lineHeader, key, strings.HasPrefix(t, "[[")
				}
			}
		}
		if l.kind == lineContent {
			lx.line(line)
		}
		lines = append(lines, l)
		start = end
	}
	return lines
}

// headerKey returns the key of a table header line. The TOML decoder reads
// it, so quoted and dotted keys mean what they mean to Codex.
func headerKey(line string) ([]string, bool) {
	var m map[string]any
	md, err := toml.Decode(line, &m)
	keys := md.Keys()
	if err != nil || len(keys) == 0 {
		return nil, false
	}
	return keys[len(keys)-1], true
}

// tomlLexer follows what a line of values leaves open: a multi-line string
// or brackets and braces of a multi-line array or inline table.
type tomlLexer struct {
	ml    string // `"""` or `'''` while inside a multi-line string
	depth int
}

func (lx *tomlLexer) line(s string) {
	for i := 0; i < len(s); {
		if lx.ml != "" {
			j := closeMultiline(s[i:], lx.ml)
			if j < 0 {
				return
			}
			i, lx.ml = i+j, ""
			continue
		}
		switch c := s[i]; {
		case c == '#':
			return
		case strings.HasPrefix(s[i:], `"""`) || strings.HasPrefix(s[i:], `'''`):
			lx.ml, i = s[i:i+3], i+3
		case c == '"' || c == '\'':
			i = skipString(s, i)
		case c == '[' || c == '{':
			lx.depth, i = lx.depth+1, i+1
		case c == ']' || c == '}':
			lx.depth, i = max(lx.depth-1, 0), i+1
		default:
			i++
		}
	}
}

// closeMultiline returns the offset just after the delimiter that closes a
// multi-line string in s (with up to two quotes before it that belong to
// the string), or -1 when the string goes on.
func closeMultiline(s, delim string) int {
	for i := 0; i < len(s); i++ {
		if delim == `"""` && s[i] == '\\' {
			i++
			continue
		}
		if strings.HasPrefix(s[i:], delim) {
			j := i + 3
			for k := 0; k < 2 && j < len(s) && s[j] == delim[0]; k++ {
				j++
			}
			return j
		}
	}
	return -1
}

// skipString returns the offset just after the one-line string that starts
// at s[i].
func skipString(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case q == '"' && s[j] == '\\':
			j++
		case s[j] == q:
			return j + 1
		case s[j] == '\n':
			return j
		}
	}
	return len(s)
}
