package clientconf

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

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
// its subtables. It returns ErrNotEditable when the entry is (also)
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
		return nil, ErrNotEditable
	}
	if _, ok := tomlServers(m)[name]; ok {
		return nil, ErrNotEditable
	}
	return mine, nil
}

func (d *tomlDoc) set(name string, e Entry) (setAction, error) {
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
	var missing Entry
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
			missing = append(missing, Field{k, v})
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
			b.WriteString(tomlKey(f.Key) + " = " + tomlValue(f.Value) + d.nl)
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
