package oauth

import (
	"reflect"
	"strings"
	"testing"
)

// TestParseChallenges pins the WWW-Authenticate reader on the shapes
// servers send.
func TestParseChallenges(t *testing.T) {
	tests := []struct {
		in   string
		want []Challenge
	}{
		{`Bearer`, []Challenge{{"Bearer", map[string]string{}}}},
		{`Bearer realm="a b", Scope=read`, []Challenge{{"Bearer", map[string]string{"realm": "a b", "scope": "read"}}}},
		{`Basic realm="x", Bearer resource_metadata="https://h/m"`, []Challenge{
			{"Basic", map[string]string{"realm": "x"}},
			{"Bearer", map[string]string{"resource_metadata": "https://h/m"}}}},
		{`Bearer realm="q\"uote, comma"`, []Challenge{{"Bearer", map[string]string{"realm": `q"uote, comma`}}}},
		{`Negotiate abc==, Bearer realm=r`, []Challenge{
			{"Negotiate", map[string]string{}},
			{"Bearer", map[string]string{"realm": "r"}}}},
		{`Bearer, Basic`, []Challenge{{"Bearer", map[string]string{}}, {"Basic", map[string]string{}}}},
		{`Bearer realm="unterminated`, []Challenge{{"Bearer", map[string]string{"realm": "unterminated"}}}},
		{``, nil},
		{`"quoted"`, nil},
		// What cannot be read is skipped to the next comma outside
		// quotes; the challenge after it is kept.
		{`Negotiate YII+/abc==, Bearer realm="x"`, []Challenge{
			{"Negotiate", map[string]string{}},
			{"Bearer", map[string]string{"realm": "x"}}}},
		{`Foo uri=/path, Bearer realm="y"`, []Challenge{
			{"Foo", map[string]string{"uri": "/path"}},
			{"Bearer", map[string]string{"realm": "y"}}}},
		{`=, Bearer realm="zz"`, []Challenge{{"Bearer", map[string]string{"realm": "zz"}}}},
		{`Foo key=abc==, Bearer`, []Challenge{{"Foo", map[string]string{"key": "abc=="}}, {"Bearer", map[string]string{}}}},
		{`Foo a=b c d, Bearer realm=r`, []Challenge{{"Foo", map[string]string{"a": "b"}}, {"Bearer", map[string]string{"realm": "r"}}}},
		{`Foo @@"x, y"@@, Bearer`, []Challenge{{"Foo", map[string]string{}}, {"Bearer", map[string]string{}}}},
		{`Foo a=:b, Bearer`, []Challenge{{"Foo", map[string]string{}}, {"Bearer", map[string]string{}}}},
		{`x=1, Bearer scope=read`, []Challenge{{"Bearer", map[string]string{"scope": "read"}}}},
	}
	for _, tt := range tests {
		if got := ParseChallenges(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseChallenges(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

// FuzzParseChallenges checks that no header value makes the reader loop,
// panic or invent a challenge without a scheme, and that whatever comes
// before a Bearer challenge, short of an open quote, cannot hide it.
func FuzzParseChallenges(f *testing.F) {
	f.Add(`Basic realm="legacy", Bearer realm="realm-secret-1", error="invalid_token", resource_metadata="https://auth.example/.well-known/oauth-protected-resource/meta-secret-2", scope="read write"`)
	f.Add(`Negotiate abc==, Bearer realm="x\"`)
	f.Add(`Negotiate YII+/abc==, Bearer realm="x"`)
	f.Add(`Foo uri=/path, Bearer realm="y"`)
	f.Add(`=, Bearer realm="zz"`)
	f.Add(`Negotiate YII+/abc==`)
	f.Add(`Foo uri=/path`)
	f.Add(`=`)
	f.Add(`Foo a=b c d`)
	f.Fuzz(func(t *testing.T, s string) {
		for _, ch := range ParseChallenges(s) {
			if ch.Scheme == "" {
				t.Fatalf("a challenge without a scheme from %q", s)
			}
		}
		if strings.IndexByte(s, '"') >= 0 {
			return
		}
		got := ParseChallenges(s + `, Bearer realm="zz"`)
		if len(got) == 0 || got[len(got)-1].Scheme != "Bearer" || got[len(got)-1].Params["realm"] != "zz" {
			t.Fatalf("the Bearer challenge after %q was lost: %+v", s, got)
		}
	})
}
