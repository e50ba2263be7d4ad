package registry

import (
	"bytes"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// BurntSushi/toml keeps key positions private, so this file re-reads the raw
// bytes of a file that has already parsed and records where every table
// header and every key is. Errors use it for line:column, and the edit
// functions use it for the byte spans they cut and splice. It never fails: on
// input it does not understand it skips to the next line.

// layout is where things are in the text of a registry file.
type layout struct {
	src     []byte
	lineOff []int // byte offset at which each line starts
	headers []header
	entries []entry
	kinds   []lineKind // one per line
	byKey   map[string]int
}

type header struct {
	key        []string
	array      bool
	line, col  int
	start, end int // the header line, including its newline
}

type entry struct {
	key              []string // full path, table prefix included
	table            int      // index into headers; -1 for the root table; -2 inside an inline table
	line, col        int
	lineStart        int // start of the line the key is on
	valStart, valEnd int
	end              int // after the newline that ends the statement
}

type lineKind uint8

const (
	lineBlank lineKind = iota
	lineComment
	lineHeader
	lineEntry
	lineCont  // inside a value that spans lines
	lineOther // text the locator does not understand
)

func keyID(k []string) string { return strings.Join(k, "\x00") }

// locate scans src. It is cheap enough to run on every parse.
func locate(src []byte) *layout {
	l := &layout{src: src, lineOff: []int{0}, byKey: map[string]int{}}
	for i, c := range src {
		if c == '\n' {
			l.lineOff = append(l.lineOff, i+1)
		}
	}
	s := &scanner{l: l, src: src}
	if bytes.HasPrefix(src, []byte("\xef\xbb\xbf")) {
		s.i = 3
	}
	s.run()
	l.classify()
	return l
}

// lineCol turns a byte offset into a 1-based line and byte column.
func (l *layout) lineCol(off int) (int, int) {
	n := sort.Search(len(l.lineOff), func(i int) bool { return l.lineOff[i] > off })
	return n, off - l.lineOff[n-1] + 1
}

func (l *layout) lineOf(off int) int { ln, _ := l.lineCol(off); return ln }

// pos finds the best position for a problem with key path: the key itself,
// else its table header, else the first key below it, else its parent.
func (l *layout) pos(path []string) (int, int) {
	for n := len(path); n > 0; n-- {
		p := path[:n]
		id := keyID(p)
		if i, ok := l.byKey["e"+id]; ok {
			return l.entries[i].line, l.entries[i].col
		}
		if i, ok := l.byKey["h"+id]; ok {
			return l.headers[i].line, l.headers[i].col
		}
		if ln, col, ok := l.firstBelow(p); ok {
			return ln, col
		}
	}
	return 1, 1
}

func (l *layout) firstBelow(p []string) (int, int, bool) {
	best, bcol := 0, 0
	try := func(k []string, ln, col int) {
		if len(k) > len(p) && hasPrefix(k, p) && (best == 0 || ln < best) {
			best, bcol = ln, col
		}
	}
	for _, h := range l.headers {
		try(h.key, h.line, h.col)
	}
	for _, e := range l.entries {
		try(e.key, e.line, e.col)
	}
	return best, bcol, best > 0
}

func hasPrefix(k, p []string) bool {
	if len(k) < len(p) {
		return false
	}
	for i := range p {
		if k[i] != p[i] {
			return false
		}
	}
	return true
}

// header returns the index of the [key] header, or -1.
func (l *layout) header(key ...string) int {
	if i, ok := l.byKey["h"+keyID(key)]; ok {
		return i
	}
	return -1
}

// entry returns the index of the first statement or inline key with this
// full path, or -1.
func (l *layout) entry(key ...string) int {
	if i, ok := l.byKey["e"+keyID(key)]; ok {
		return i
	}
	return -1
}

func (l *layout) classify() {
	l.kinds = make([]lineKind, len(l.lineOff))
	for i := range l.kinds {
		start, end := l.lineOff[i], len(l.src)
		if i+1 < len(l.lineOff) {
			end = l.lineOff[i+1]
		}
		t := bytes.TrimSpace(l.src[start:end])
		if i == 0 {
			t = bytes.TrimPrefix(t, []byte("\xef\xbb\xbf"))
		}
		switch {
		case len(t) == 0:
			l.kinds[i] = lineBlank
		case t[0] == '#':
			l.kinds[i] = lineComment
		default:
			l.kinds[i] = lineOther
		}
	}
	for _, h := range l.headers {
		l.kinds[h.line-1] = lineHeader
	}
	for _, e := range l.entries {
		if e.table == -2 {
			continue
		}
		last := l.lineOf(max(e.valEnd-1, e.valStart))
		for ln := e.line + 1; ln <= last && ln <= len(l.kinds); ln++ {
			l.kinds[ln-1] = lineCont
		}
		l.kinds[e.line-1] = lineEntry
	}
}

type scanner struct {
	l   *layout
	src []byte
	i   int
}

func (s *scanner) peek(off int) byte {
	if s.i+off < len(s.src) {
		return s.src[s.i+off]
	}
	return 0
}

func (s *scanner) eof() bool { return s.i >= len(s.src) }

func (s *scanner) run() {
	var table []string
	cur := -1
	for !s.eof() {
		switch c := s.src[s.i]; c {
		case ' ', '\t', '\r', '\n':
			s.i++
		case '#':
			s.skipComment()
		case '[':
			if k, idx, ok := s.header(); ok {
				table, cur = k, idx
			}
		default:
			s.statement(table, cur)
		}
	}
}

func (s *scanner) skipComment() {
	for !s.eof() && s.src[s.i] != '\n' {
		s.i++
	}
}

// skipLine moves past the next newline.
func (s *scanner) skipLine() {
	s.skipComment()
	if !s.eof() {
		s.i++
	}
}

func (s *scanner) skipSpace() {
	for !s.eof() && (s.src[s.i] == ' ' || s.src[s.i] == '\t') {
		s.i++
	}
}

// skipBlank skips spaces, newlines and comments, as inside arrays.
func (s *scanner) skipBlank() {
	for !s.eof() {
		switch s.src[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		case '#':
			s.skipComment()
		default:
			return
		}
	}
}

func (s *scanner) header() ([]string, int, bool) {
	start := s.i
	array := s.peek(1) == '['
	s.i++
	if array {
		s.i++
	}
	s.skipSpace()
	k := s.key()
	s.skipSpace()
	ok := k != nil && s.peek(0) == ']' && (!array || s.peek(1) == ']')
	s.skipLine()
	if !ok {
		return nil, 0, false
	}
	line, col := s.l.lineCol(start)
	lineStart := s.l.lineOff[line-1]
	s.l.headers = append(s.l.headers, header{key: k, array: array, line: line, col: col, start: lineStart, end: s.i})
	idx := len(s.l.headers) - 1
	if _, dup := s.l.byKey["h"+keyID(k)]; !dup {
		s.l.byKey["h"+keyID(k)] = idx
	}
	return k, idx, true
}

// statement reads key = value at the top level of a table.
func (s *scanner) statement(table []string, cur int) {
	start := s.i
	k := s.key()
	s.skipSpace()
	if k == nil || s.peek(0) != '=' {
		if s.i == start {
			s.i++
		}
		s.skipLine()
		return
	}
	s.i++
	s.skipSpace()
	full := append(append([]string{}, table...), k...)
	vs := s.i
	s.value(full)
	ve := s.i
	s.skipLine()
	line, col := s.l.lineCol(start)
	s.add(entry{key: full, table: cur, line: line, col: col, lineStart: s.l.lineOff[line-1], valStart: vs, valEnd: ve, end: s.i})
}

func (s *scanner) add(e entry) {
	s.l.entries = append(s.l.entries, e)
	id := "e" + keyID(e.key)
	if _, dup := s.l.byKey[id]; !dup {
		s.l.byKey[id] = len(s.l.entries) - 1
	}
}

// key reads a dotted key; nil when there is none.
func (s *scanner) key() []string {
	var parts []string
	for {
		s.skipSpace()
		p, ok := s.simpleKey()
		if !ok {
			return nil
		}
		parts = append(parts, p)
		s.skipSpace()
		if s.peek(0) != '.' {
			return parts
		}
		s.i++
	}
}

func (s *scanner) simpleKey() (string, bool) {
	switch s.peek(0) {
	case '"':
		return s.basicString()
	case '\'':
		start := s.i + 1
		end := bytes.IndexAny(s.src[start:], "'\n")
		if end < 0 || s.src[start+end] != '\'' {
			return "", false
		}
		s.i = start + end + 1
		return string(s.src[start : start+end]), true
	}
	start := s.i
	for !s.eof() && isBare(s.src[s.i]) {
		s.i++
	}
	return string(s.src[start:s.i]), s.i > start
}

func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// basicString reads a one-line "..." string and decodes its escapes.
func (s *scanner) basicString() (string, bool) {
	s.i++
	var b strings.Builder
	for !s.eof() {
		c := s.src[s.i]
		switch {
		case c == '"':
			s.i++
			return b.String(), true
		case c == '\n':
			return "", false
		case c == '\\':
			s.i++
			s.escape(&b)
		default:
			b.WriteByte(c)
			s.i++
		}
	}
	return "", false
}

var (
	simpleEscapes = map[byte]byte{'b': '\b', 't': '\t', 'n': '\n', 'f': '\f', 'r': '\r', 'e': 0x1b, '"': '"', '\\': '\\'}
	hexEscapes    = map[byte]int{'x': 2, 'u': 4, 'U': 8}
)

func (s *scanner) escape(b *strings.Builder) {
	c := s.peek(0)
	s.i++
	if r, ok := simpleEscapes[c]; ok {
		b.WriteByte(r)
		return
	}
	n := hexEscapes[c]
	if n == 0 || s.i+n > len(s.src) {
		return
	}
	v, err := strconv.ParseUint(string(s.src[s.i:s.i+n]), 16, 32)
	s.i += n
	if err == nil && utf8.ValidRune(rune(v)) {
		b.WriteRune(rune(v))
	}
}

// value skips one value; inline tables record their keys under prefix,
// unless it is nil (in an array, where keys have no path of their own).
func (s *scanner) value(prefix []string) {
	switch {
	case s.eof():
	case bytes.HasPrefix(s.src[s.i:], []byte(`"""`)):
		s.multiline(`"""`, true)
	case bytes.HasPrefix(s.src[s.i:], []byte(`'''`)):
		s.multiline(`'''`, false)
	case s.src[s.i] == '"':
		s.basicString()
	case s.src[s.i] == '\'':
		s.i++
		for !s.eof() && s.src[s.i] != '\'' && s.src[s.i] != '\n' {
			s.i++
		}
		if s.peek(0) == '\'' {
			s.i++
		}
	case s.src[s.i] == '[':
		s.array()
	case s.src[s.i] == '{':
		s.inlineTable(prefix)
	default:
		start := s.i
		for !s.eof() && strings.IndexByte(",]}#\r\n", s.src[s.i]) < 0 {
			s.i++
		}
		for s.i > start && (s.src[s.i-1] == ' ' || s.src[s.i-1] == '\t') {
			s.i--
		}
	}
}

func (s *scanner) multiline(delim string, escapes bool) {
	s.i += 3
	for !s.eof() {
		if escapes && s.src[s.i] == '\\' {
			s.i += 2
			continue
		}
		if bytes.HasPrefix(s.src[s.i:], []byte(delim)) {
			s.i += 3
			// Up to two quotes right before the delimiter are content.
			for n := 0; n < 2 && s.peek(0) == delim[0]; n++ {
				s.i++
			}
			return
		}
		s.i++
	}
	s.i = min(s.i, len(s.src))
}

func (s *scanner) array() {
	s.i++
	for {
		s.skipBlank()
		if s.eof() {
			return
		}
		if s.src[s.i] == ']' {
			s.i++
			return
		}
		before := s.i
		s.value(nil)
		s.skipBlank()
		if s.peek(0) == ',' {
			s.i++
		}
		if s.i == before {
			s.i++ // never loop on text we do not understand
		}
	}
}

func (s *scanner) inlineTable(prefix []string) {
	s.i++
	for {
		s.skipBlank()
		if s.eof() {
			return
		}
		if s.src[s.i] == '}' {
			s.i++
			return
		}
		before := s.i
		k := s.key()
		s.skipSpace()
		if k != nil && s.peek(0) == '=' {
			s.i++
			s.skipSpace()
			var full []string
			if prefix != nil {
				full = append(append([]string{}, prefix...), k...)
			}
			vs := s.i
			s.value(full)
			if full != nil {
				line, col := s.l.lineCol(before)
				s.add(entry{key: full, table: -2, line: line, col: col, lineStart: s.l.lineOff[line-1], valStart: vs, valEnd: s.i, end: s.i})
			}
		}
		s.skipBlank()
		if s.peek(0) == ',' {
			s.i++
		}
		if s.i == before {
			s.i++
		}
	}
}
