package clientconf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tailscale/hujson"
)

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
	p, _ := marshal(ptr)
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
		return marshal(v)
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

func (d *jsonDoc) set(name string, e Entry) (setAction, error) {
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
