package redact

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	secrets := []string{"s3cr3t-value-123", "Bearer tok_abcdefgh1234", "pin7", "on", "hunter2"}
	tests := []struct {
		name, in, want string
	}{
		{"configured value", "auth failed for s3cr3t-value-123.", "auth failed for ***."},
		{"inside a word", "xxs3cr3t-value-123yy", "xx***yy"},
		{"JSON-escaped value", `{"echo":"s3cr3t-value-123"}`, `{"echo":"***"}`},
		{"header value and its token alone", "got tok_abcdefgh1234 from Bearer tok_abcdefgh1234", "got *** from ***"},
		{"short value as a word", "pin is pin7, not pin77 or apin7", "pin is ***, not pin77 or apin7"},
		{"short value at the ends", "pin7", "***"},
		{"seven bytes as a word", "password hunter2!", "password ***!"},
		{"tiny values are left alone", "turn it on", "turn it on"},
		{"authorization header line", "echo:\nAuthorization: Bearer xyz.abc\nHost: a", "echo:\nAuthorization: ***\nHost: a"},
		{"proxy authorization", "Proxy-Authorization: Basic dXNlcjpwYXNz", "Proxy-Authorization: ***"},
		{"cookie in JSON", `{"headers":{"Cookie":"sid=abc; theme=dark","Accept":"*/*"}}`, `{"headers":{"Cookie":"***","Accept":"*/*"}}`},
		{"set-cookie", "set-cookie: session=deadbeef; HttpOnly", "set-cookie: ***"},
		{"Go header map", "map[Authorization:[Bearer abc] X:[y]]", "map[Authorization:[***] X:[y]]"},
		{"access_token member", `{"access_token":"ya29.a0Af","expires_in":3599}`, `{"access_token":"***","expires_in":3599}`},
		{"api_key parameter", "GET /v1?api_key=abc123&page=2", "GET /v1?api_key=***&page=2"},
		{"x-api-key header", "x-api-key: k-1", "x-api-key: ***"},
		{"password", "password=pa ss", "password=*** ss"},
		{"bearer in prose", "sent Bearer abcdefgh12345678 upstream", "sent Bearer *** upstream"},
		{"github token", "token ghp_0123456789abcdefghijABCDEFGHIJ012345 rejected", "token *** rejected"},
		{"openai key", "invalid key sk-proj-AbCdEf0123456789xyz", "invalid key ***"},
		{"slack token", "xoxb-1234567890-abcdefghij", "***"},
		{"aws key id", "AKIAIOSFODNN7EXAMPLE is not valid", "*** is not valid"},
		{"jwt", "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.c2lnbmF0dXJl end", "jwt *** end"},
		{"long hex", "key 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 used", "key *** used"},
		{"base64 key", "key dGhpc0lzQVNlY3JldEtleTEyMzQ1Njc4OTBhYmNk==", "key ***"},
		{"uuid stays", "session 550e8400-e29b-41d4-a716-446655440000 gone", "session 550e8400-e29b-41d4-a716-446655440000 gone"},
		{"path stays", "open /home/alice/projects/mcp-server-filesystem/dist/index.js", "open /home/alice/projects/mcp-server-filesystem/dist/index.js"},
		{"identifier stays", "AbstractSingletonProxyFactoryBean2 failed", "AbstractSingletonProxyFactoryBean2 failed"},
		{"prose stays", "the tokens were counted: 42 input tokens", "the tokens were counted: 42 input tokens"},
		{"no header value", "Authorization header missing", "Authorization header missing"},
	}
	r := New(secrets)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.Text(tt.in); got != tt.want {
				t.Errorf("Text(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
	if got := Text("x s3cr3t-value-123", secrets); got != "x ***" {
		t.Errorf("Text = %q", got)
	}
}

func TestPrefixMasksACutSecret(t *testing.T) {
	r := New([]string{"abcdefghijklmnop"})
	tests := map[string]string{
		"body: abcdefghij":                  "body: ***",          // the start of a secret
		"body: ok":                          "body: ok",           // nothing cut
		"token is ghp_012":                  "token is ***",       // a credential too short to recognise
		"tail ab":                           "tail ab",            // under MinWordSecretLen: kept
		"":                                  "",                   // empty
		"é":                                 "é",                  // one character
		"x=abcdefghijklmnop and more stuff": "x=*** and more ***", // the cut word goes
	}
	for in, want := range tests {
		if got := r.Prefix(in); got != want {
			t.Errorf("Prefix(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestExcerpt(t *testing.T) {
	r := New([]string{"abcdefghijklmnop"})
	if got := r.Excerpt("héllo abcdefghijklmnop", false, 2); got != "h…" {
		t.Errorf("Excerpt cut inside é = %q, want %q", got, "h…")
	}
	if got := r.Excerpt("v=abcdefghijklmnop", false, 100); got != "v=***" {
		t.Errorf("Excerpt = %q", got)
	}
	if got := r.Excerpt("v=abcdefgh", true, 100); got != "v=***" {
		t.Errorf("Excerpt of a cut text = %q", got)
	}
}

// A nil Redactor still masks credential shapes.
func TestNilRedactor(t *testing.T) {
	var r *Redactor
	if got := r.Text("Authorization: Bearer x"); got != "Authorization: ***" {
		t.Errorf("nil Text = %q", got)
	}
	if got := r.Prefix("ghp_0123"); got != "***" {
		t.Errorf("nil Prefix = %q", got)
	}
}

// No configured secret of MinSecretLen bytes or more survives Text, and
// valid UTF-8 stays valid.
func FuzzText(f *testing.F) {
	f.Add("Authorization: Bearer abc\nx", "abcdefgh12")
	f.Add(`{"access_token":"x\"y","a":1}`, "pin7")
	f.Add("aaaaaaaaaaaaaaaaa", "aaaaaaaa")
	f.Add("key=ghp_0123456789abcdefghij", "é-secret-é")
	f.Fuzz(func(t *testing.T, s, secret string) {
		r := New([]string{secret})
		out := r.Text(s)
		if len(secret) >= MinSecretLen && !strings.Contains(secret, "*") && strings.Contains(out, secret) {
			t.Fatalf("Text(%q) = %q still holds the secret %q", s, out, secret)
		}
		if utf8.ValidString(s) && utf8.ValidString(secret) && !utf8.ValidString(out) {
			t.Fatalf("Text(%q) = %q is not valid UTF-8", s, out)
		}
		// Whatever the cut, Prefix keeps no more of the secret than
		// Text does, and the text stays valid.
		for cut := range min(len(s), 64) + 1 {
			p := r.Prefix(s[:cut])
			if len(secret) >= MinSecretLen && !strings.Contains(secret, "*") && strings.Contains(p, secret) {
				t.Fatalf("Prefix(%q) = %q holds the secret", s[:cut], p)
			}
			if utf8.ValidString(s[:cut]) && utf8.ValidString(secret) && !utf8.ValidString(p) {
				t.Fatalf("Prefix(%q) = %q is not valid UTF-8", s[:cut], p)
			}
		}
	})
}

// BenchmarkText measures a typical stderr line and a 64 KiB one.
func BenchmarkText(b *testing.B) {
	r := New([]string{"s3cr3t-value-123", "Bearer tok_abcdefgh1234", "pin7"})
	line := "2026-01-02T03:04:05Z INFO request failed: 401 Unauthorized (Authorization: Bearer xyz) after 3 retries"
	big := strings.Repeat("some ordinary log text with words, numbers 12345 and paths /a/b/c; ", 1000)[:64<<10]
	b.Run("line", func(b *testing.B) {
		for b.Loop() {
			r.Text(line)
		}
	})
	b.Run("64KiB", func(b *testing.B) {
		b.SetBytes(int64(len(big)))
		for b.Loop() {
			r.Text(big)
		}
	})
}

// Text stays linear on adversarial text: one anchor after another on a
// single long line.
func TestTextAdversarialIsLinear(t *testing.T) {
	r := New([]string{"aaaaaaaa", "aaaa"})
	for _, unit := range []string{"token=", "sk-", "bearer ", "Authorization: ", "x:", "eyJaaaaaaaaaa.", "aaaa ", "ghp_"} {
		s := strings.Repeat(unit, (256<<10)/len(unit))
		start := time.Now()
		r.Text(s)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Text of 256 KiB of %q took %v", unit, d)
		}
	}
}
