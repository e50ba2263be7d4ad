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
	// set adds the entry called name or, when it is there, changes the
	// members mcphub writes (ownedKeys) to e's and keeps the others.
	set(name string, e entry) (setAction, error)
	// remove deletes the entry called name.
	remove(name string) error
	// bytes returns the file as edited.
	bytes() ([]byte, error)
}

// setAction is what set did to the hub's entry.
type setAction int

const (
	setUnchanged setAction = iota
	setAdded
	setUpdated
)

// ownedKeys are the members of the hub's entry that mcphub writes: those
// that say how to reach the hub. Whatever else the entry holds (a client's
// alwaysAllow, disabled, timeouts, tool approvals) is the user's and stays.
var ownedKeys = []string{"type", "url", "serverUrl", "httpUrl", "headers", "http_headers", "command", "args"}

// keysToSet are e's keys in its order, then the owned keys it lacks, which
// set removes.
func keysToSet(e entry) []string {
	var keys []string
	for _, f := range e {
		keys = append(keys, f.key)
	}
	for _, k := range ownedKeys {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// fieldOf returns the value e gives key k.
func fieldOf(e entry, k string) (any, bool) {
	for _, f := range e {
		if f.key == k {
			return f.value, true
		}
	}
	return nil, false
}

// sameValue reports whether two decoded values (from JSON, TOML or an
// entry) are the same JSON value.
func sameValue(a, b any) bool {
	ra, errA := json.Marshal(a)
	rb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return false
	}
	var va, vb any
	return json.Unmarshal(ra, &va) == nil && json.Unmarshal(rb, &vb) == nil && reflect.DeepEqual(va, vb)
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
	trailing, space := false, hujson.Extra(nil)
	if n > 0 {
		last := obj.Members[n-1]
		if len(bytes.Trim(last.Name.BeforeExtra, " \t")) == 0 {
			space = bytes.Clone(last.Name.BeforeExtra)
		}
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
	if !multi && n > 0 {
		// The space after the comma, as the siblings have it.
		m.Name.BeforeExtra = space
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
		out = append(out, entryOf(name, fields, false))
	}
	return out, nil
}

// standard is v as standard JSON.
func standard(v hujson.Value) []byte {
	v = v.Clone()
	v.Standardize()
	return v.Pack()
}

func (d *jsonDoc) set(name string, e entry) (setAction, error) {
	obj, indent, err := d.servers(true)
	if err != nil {
		return setUnchanged, err
	}
	i := member(obj, name)
	if i < 0 {
		return setAdded, d.add(obj, indent, pointer(d.key, name), e)
	}
	mi := lineIndent(obj.Members[i].Name.BeforeExtra, indent+d.unit)
	cur, ok := obj.Members[i].Value.Value.(*hujson.Object)
	if !ok {
		// Not an object: nothing of the user's to keep.
		val, err := d.render(e, mi, d.multiline(obj))
		if err != nil {
			return setUnchanged, err
		}
		return setUpdated, d.patch("replace", pointer(d.key, name), val)
	}
	action := setUnchanged
	for _, k := range keysToSet(e) {
		v, want := fieldOf(e, k)
		j := member(cur, k)
		switch {
		case j < 0 && !want:
			continue
		case j < 0:
			err = d.add(cur, mi, pointer(d.key, name, k), v)
		case !want:
			removeMember(cur, j)
		default:
			var have any
			if json.Unmarshal(standard(cur.Members[j].Value), &have) == nil && sameValue(have, v) {
				continue
			}
			var val []byte
			if val, err = d.render(v, lineIndent(cur.Members[j].Name.BeforeExtra, mi+d.unit), d.multiline(cur)); err == nil {
				err = d.patch("replace", pointer(d.key, name, k), val)
			}
		}
		if err != nil {
			return setUnchanged, err
		}
		action = setUpdated
	}
	return action, nil
}

func (d *jsonDoc) remove(name string) error {
	obj, _, err := d.servers(false)
	if obj == nil || err != nil {
		return err
	}
	if i := member(obj, name); i >= 0 {
		removeMember(obj, i)
	}
	return nil
}

// removeMember deletes obj's member i with what belongs to it: the
// comment after it on its line, and the comment lines directly above it
// when a blank line sets them apart from what is above. Comments that run
// up from the member to the line of the previous member or of the opening
// brace may describe a group of members or be members commented out, so
// they stay. When the last member goes, the new last one gets the old
// one's trailing comma, or none.
func removeMember(obj *hujson.Object, i int) {
	n := len(obj.Members)
	trailing := obj.Members[n-1].Value.AfterExtra != nil
	next := &obj.AfterExtra
	if i+1 < n {
		next = &obj.Members[i+1].Name.BeforeExtra
	}
	*next = joinAfterRemoval(obj.Members[i].Name.BeforeExtra, *next, i+1 == n)
	obj.Members = slices.Delete(obj.Members, i, i+1)
	if n = len(obj.Members); n == 0 || i < n {
		return
	}
	last := &obj.Members[n-1].Value
	switch {
	case trailing && last.AfterExtra == nil:
		last.AfterExtra = hujson.Extra{}
	case !trailing && last.AfterExtra != nil:
		// What stood between the value and the comma now stands before
		// the closing brace, as hujson moves it when it drops a trailing
		// comma; only a line break that the brace's own line repeats goes.
		if len(bytes.TrimSpace(last.AfterExtra)) > 0 || !bytes.ContainsRune(obj.AfterExtra, '\n') {
			obj.AfterExtra = append(bytes.Clone(last.AfterExtra), obj.AfterExtra...)
		}
		last.AfterExtra = nil
	}
}

// joinAfterRemoval is what stands between the members around a removed
// one: before is the removed member's leading whitespace and comments,
// next the following member's, or the closing brace's when closing.
func joinAfterRemoval(before, next hujson.Extra, closing bool) hujson.Extra {
	bl, nl := extraLines(before), extraLines(next)
	if len(bl) == 1 {
		// The removed member shared its line with what precedes it.
		switch {
		case len(nl) == 1 && closing:
			return next
		case len(nl) == 1:
			return before
		}
		// Its trailing comment goes; its line break stays.
		return slices.Concat(lineEnd(nl[0]), bytes.Join(nl[1:], nil))
	}
	// bl[0] ends the line above, bl[1:k-1] are whole lines, blank or
	// comments, and bl[k-1] indents the member. bl[r:k-1] are the comment
	// lines right above it: they go with it when a blank line, bl[r-1],
	// sets them apart from what is above. That blank line goes too when
	// another one (or the closing brace) follows, so that removing a
	// paragraph leaves one blank line between its neighbours.
	k := len(bl)
	r := k - 1
	for r > 1 && len(bytes.TrimSpace(bl[r-1])) > 0 {
		r--
	}
	cut := k - 1
	if r >= 2 {
		cut = r
		if closing || len(nl) > 2 && len(bytes.TrimSpace(nl[1])) == 0 {
			cut = r - 1
		}
	}
	keep := bytes.Join(bl[:cut], nil)
	if len(nl) == 1 {
		// The next member was on the removed one's line: it takes its
		// place.
		return slices.Concat(keep, bl[k-1], next)
	}
	// The rest of the removed member's line (its trailing comment) goes.
	return slices.Concat(keep, bytes.Join(nl[1:], nil))
}

// extraLines splits whitespace and comments into lines: each but the last
// ends with a line break outside a block comment, and the last is what
// precedes the next token on its line.
func extraLines(x []byte) [][]byte {
	var lines [][]byte
	start := 0
	for i := 0; i < len(x); i++ {
		switch {
		case bytes.HasPrefix(x[i:], []byte("/*")):
			end := bytes.Index(x[i+2:], []byte("*/"))
			if end < 0 {
				return append(lines, x[start:])
			}
			i += end + 3
		case bytes.HasPrefix(x[i:], []byte("//")):
			end := bytes.IndexByte(x[i:], '\n')
			if end < 0 {
				return append(lines, x[start:])
			}
			i += end - 1
		case x[i] == '\n':
			lines = append(lines, x[start:i+1])
			start = i + 1
		}
	}
	return append(lines, x[start:])
}

// lineEnd is the line break that ends line.
func lineEnd(line []byte) []byte {
	if bytes.HasSuffix(line, []byte("\r\n")) {
		return []byte("\r\n")
	}
	return []byte("\n")
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
		out = append(out, entryOf(name, fields, true))
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

func (d *tomlDoc) set(name string, e entry) (setAction, error) {
	mine, err := d.own(name)
	if err != nil {
		return setUnchanged, err
	}
	if len(mine) == 0 {
		return setAdded, d.commit(appendBlock(d.text, tomlTable(name, e, d.nl), d.nl), name, true)
	}
	m, err := decodeTOML(d.path, d.text)
	if err != nil {
		return setUnchanged, err
	}
	have, _ := tomlServers(m)[name].(map[string]any)
	main := -1
	for i, b := range mine {
		if !b.array && len(b.key) == 2 {
			main = i
		}
	}
	var stmts []tomlStmt
	if main >= 0 {
		stmts = tomlStatements(d.text, mine[main].head, mine[main].end)
	}
	// Each owned key that differs is rewritten where it is (its first
	// line in the table) or added; its other lines, and subtables such as
	// [mcp_servers.NAME.http_headers], go. Everything else stays.
	var edits []textEdit
	var missing entry
	for _, k := range keysToSet(e) {
		v, want := fieldOf(e, k)
		old, has := have[k]
		if want == has && (!want || sameValue(v, old)) {
			continue
		}
		placed := !want
		for _, st := range stmts {
			if st.key != k {
				continue
			}
			line := ""
			if !placed {
				line, placed = tomlKey(k)+" = "+tomlValue(v)+d.nl, true
			}
			edits = append(edits, textEdit{start: st.start, end: st.end, text: line})
		}
		for _, b := range mine {
			if len(b.key) >= 3 && b.key[2] == k {
				edits = append(edits, textEdit{start: b.lead, end: b.end, cut: true})
			}
		}
		if !placed {
			missing = append(missing, entryField{k, v})
		}
	}
	if len(edits) == 0 && len(missing) == 0 {
		return setUnchanged, nil
	}
	switch {
	case len(missing) == 0:
	case main >= 0:
		// After the table's last key, or its header.
		at := mine[main].head
		for _, st := range stmts {
			at = max(at, st.end)
		}
		var b strings.Builder
		if at > 0 && d.text[at-1] != '\n' {
			b.WriteString(d.nl)
		}
		for _, f := range missing {
			b.WriteString(tomlKey(f.key) + " = " + tomlValue(f.value) + d.nl)
		}
		edits = append(edits, textEdit{start: at, end: at, text: b.String()})
	default:
		// Only subtables ([mcp_servers.NAME.tools.x]) are there: the
		// table goes before the first of them.
		edits = append(edits, textEdit{start: mine[0].lead, end: mine[0].lead, text: tomlTable(name, missing, d.nl) + d.nl})
	}
	return setUpdated, d.commit(applyEdits(d.text, edits), name, true)
}

// textEdit replaces text[start:end] with text, or cuts a table block
// (cutBlock) when cut is set.
type textEdit struct {
	start, end int
	text       string
	cut        bool
}

// applyEdits applies edits that do not overlap, from the end of the text
// so that earlier offsets stay valid; at one offset, the longer edit (a
// cut) goes first and an insertion lands where it was.
func applyEdits(text string, edits []textEdit) string {
	slices.SortFunc(edits, func(a, b textEdit) int {
		if a.start != b.start {
			return b.start - a.start
		}
		return b.end - a.end
	})
	for _, e := range edits {
		if e.cut {
			text = cutBlock(text, e.start, e.end)
			continue
		}
		text = text[:e.start] + e.text + text[e.end:]
	}
	return text
}

// tomlStmt is one key = value of a table body, with the lines a
// multi-line value continues on: text[start:end]. key is its first key
// ("http_headers" for http_headers.Authorization = ...).
type tomlStmt struct {
	key        string
	start, end int
}

// tomlStatements lists the key = value statements that start in
// text[from:to].
func tomlStatements(text string, from, to int) []tomlStmt {
	var out []tomlStmt
	lines := scanTOMLLines(text)
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if l.start < from || l.start >= to || l.kind != lineContent || l.cont {
			continue
		}
		end := l.end
		for i+1 < len(lines) && lines[i+1].cont {
			i++
			end = lines[i].end
		}
		var m map[string]any
		md, err := toml.Decode(text[l.start:end], &m)
		if keys := md.Keys(); err == nil && len(keys) > 0 && len(keys[0]) > 0 {
			out = append(out, tomlStmt{key: keys[0][0], start: l.start, end: end})
		}
	}
	return out
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

// tomlBlock is one table of a TOML file: its header line (text[start:head])
// and body (text[start:end] in all), and the comment lines directly above
// the header that describe it (text[lead:start]).
type tomlBlock struct {
	key                    []string
	array                  bool
	lead, start, head, end int
}

// tomlBlocks finds the tables of a TOML file by their header lines. The
// comment lines directly above a header are its own only when a blank
// line sets them apart from what is above (comments at the top of the file
// describe the file; those right under a key may be the previous table's
// keys commented out). A table's body runs to the next header; comment
// lines right after it are the body's when a blank line or the end of the
// file follows them, and blank lines at its end stay where they are.
// Comments that belong to neither stay wherever a table is cut. Header-like
// lines inside multi-line strings and arrays are not headers.
func tomlBlocks(text string) []tomlBlock {
	lines := scanTOMLLines(text)
	var blocks []tomlBlock
	for i, l := range lines {
		if l.kind != lineHeader {
			continue
		}
		b := tomlBlock{key: l.key, array: l.array, lead: l.start, start: l.start, head: l.end}
		j := i
		for j > 0 && lines[j-1].kind == lineComment {
			j--
		}
		if j < i && j > 0 && lines[j-1].kind == lineBlank && slices.ContainsFunc(lines[:j-1], func(l tomlLine) bool { return l.kind != lineBlank }) {
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
		j = last + 1
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
	// cont is set for a line that continues a multi-line value.
	cont bool
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
		l := tomlLine{start: start, end: end, kind: lineContent, cont: lx.ml != "" || lx.depth > 0}
		if !l.cont {
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
