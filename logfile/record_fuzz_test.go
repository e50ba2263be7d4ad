package logfile

import (
	"strings"
	"testing"
	"unicode"
)

// FuzzParseRecord reads any line as a log record: it never panics, and a
// line that parses prints on one line without a control character a
// terminal would obey (tabs aside), whatever a server put in its message,
// its name or its attributes.
func FuzzParseRecord(f *testing.F) {
	for _, s := range []string{
		`{"time":"2026-11-25T10:00:00Z","level":"INFO","msg":"m","server":"s","a":1}`,
		`{"time":"yesterday","level":"WARN","msg":"\u001b[2J\u0007","req":{"id":[1,{"x":null}]}}`,
		`{"msg":"a\nb","":"","k\u0085":"v\r"}`,
		`not json`, `{`, `{"time":1}`, "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		rec, ok := ParseRecord([]byte(line))
		if !ok {
			return
		}
		for _, width := range []int{0, 8} {
			out := rec.Format(width)
			if i := strings.IndexFunc(out, func(r rune) bool { return unicode.IsControl(r) && r != '\t' }); i >= 0 {
				t.Fatalf("Format(%d) of %q holds a control character at %d: %q", width, line, i, out)
			}
		}
	})
}
