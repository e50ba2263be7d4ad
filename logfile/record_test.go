package logfile

import (
	"testing"
)

func TestRecordFormat(t *testing.T) {
	cases := []struct {
		name  string
		line  string
		width int
		want  string
	}{
		{"hub record without server column",
			`{"time":"2026-11-25T11:00:00.123456789+01:00","level":"INFO","msg":"stopping","signal":"interrupt"}`, 0,
			"2026-11-25T10:00:00.123Z INFO  stopping signal=interrupt"},
		{"server record",
			`{"time":"2026-11-25T10:00:00.5Z","level":"WARN","msg":"npm warn exec","server":"github","stream":"stderr"}`, 6,
			"2026-11-25T10:00:00.500Z WARN  github  npm warn exec stream=stderr"},
		{"hub record in a server column",
			`{"time":"2026-11-25T10:00:00Z","level":"ERROR","msg":"refused a server"}`, 6,
			"2026-11-25T10:00:00.000Z ERROR         refused a server"},
		{"values quoted, groups flattened, null, numbers, arrays",
			`{"time":"2026-11-25T10:00:00Z","level":"DEBUG","msg":"m","err":"EOF: no such file","empty":"","n":3,"ok":true,"x":null,"req":{"method":"tools/call","id":7},"ids":[1, 2],"eq":"a=b"}`, 0,
			`2026-11-25T10:00:00.000Z DEBUG m err="EOF: no such file" empty="" n=3 ok=true x=<nil> req.method=tools/call req.id=7 ids=[1,2] eq="a=b"`},
		{"control characters escaped, one line",
			`{"time":"2026-11-25T10:00:00Z","level":"WARN","msg":"\u001b[31mError\u001b[0m: boom\n  at x","server":"flaky"}`, 5,
			`2026-11-25T10:00:00.000Z WARN  flaky  \x1b[31mError\x1b[0m: boom\n  at x`},
		{"a server that is not a string is an attribute",
			`{"time":"2026-11-25T10:00:00Z","level":"INFO","msg":"m","server":42}`, 0,
			"2026-11-25T10:00:00.000Z INFO  m server=42"},
		{"a time that does not parse is shown as written",
			`{"time":"yesterday","level":"INFO","msg":"m"}`, 0,
			"yesterday INFO  m"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec, ok := ParseRecord([]byte(tc.line))
			if !ok {
				t.Fatalf("%s does not parse", tc.line)
			}
			if got := rec.Format(tc.width); got != tc.want {
				t.Errorf("format:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
	for _, bad := range []string{"panic: runtime error", `{"time":"2026-11-25T10:00:00Z"`, `{"a":1} trailing`, `[1,2]`, `"msg"`} {
		if _, ok := ParseRecord([]byte(bad)); ok {
			t.Errorf("%q parses as a record", bad)
		}
	}
}
