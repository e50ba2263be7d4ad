package registry

import (
	"reflect"
	"testing"
)

func TestLocate(t *testing.T) {
	src := "\ufeff# c\n" + // 1
		"[ servers . \"my.srv\" ]   # quoted, spaced\n" + // 2
		"command = \"x\"\n" + // 3
		"args = [\n" + // 4
		"  \"not = a key\", # comment\n" + // 5
		"]\n" + // 6
		"doc = '''\n" + // 7
		"[servers.fake]\n" + // 8
		"'''\n" + // 9
		"env = { A = \"1\", \"B.C\" = { D = 2 } }\n" + // 10
		"[[arr]]\n" + // 11
		"'lit' . key = \"\\\"\\u00e9\"\n" // 12
	l := locate([]byte(src))
	var keys [][]string
	for _, h := range l.headers {
		keys = append(keys, h.key)
	}
	want := [][]string{{"servers", "my.srv"}, {"arr"}}
	if !reflect.DeepEqual(keys, want) {
		t.Fatalf("headers = %q, want %q", keys, want)
	}
	tests := []struct {
		key       []string
		line, col int
	}{
		{[]string{"servers", "my.srv"}, 2, 1},
		{[]string{"servers", "my.srv", "command"}, 3, 1},
		{[]string{"servers", "my.srv", "args"}, 4, 1},
		{[]string{"servers", "my.srv", "doc"}, 7, 1},
		{[]string{"servers", "my.srv", "env", "A"}, 10, 9},
		{[]string{"servers", "my.srv", "env", "B.C", "D"}, 10, 28},
		{[]string{"servers", "my.srv", "env", "Z"}, 10, 1}, // falls back to env
		{[]string{"servers", "my.srv", "nope"}, 2, 1},      // falls back to the header
		{[]string{"arr", "lit", "key"}, 12, 1},
		{[]string{"servers", "fake"}, 2, 1}, // line 8 is inside a string, not a header
	}
	for _, tt := range tests {
		if line, col := l.pos(tt.key); line != tt.line || col != tt.col {
			t.Errorf("pos(%q) = %d:%d, want %d:%d", tt.key, line, col, tt.line, tt.col)
		}
	}
	kinds := []lineKind{lineComment, lineHeader, lineEntry, lineEntry, lineCont, lineCont, lineEntry, lineCont, lineCont, lineEntry, lineHeader, lineEntry, lineBlank}
	if !reflect.DeepEqual(l.kinds, kinds) {
		t.Errorf("kinds = %v, want %v", l.kinds, kinds)
	}
}
