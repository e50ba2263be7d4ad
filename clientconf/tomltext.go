package clientconf

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// tomlTable writes a Codex [mcp_servers.NAME] table for the entry.
func tomlTable(name string, e Entry, nl string) string {
	var b strings.Builder
	b.WriteString("[mcp_servers." + tomlKey(name) + "]" + nl)
	for _, f := range e {
		b.WriteString(tomlKey(f.Key) + " = " + tomlValue(f.Value) + nl)
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
