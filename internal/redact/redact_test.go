package redact

import (
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	tests := map[string]string{
		"https://user:pw@example.com/mcp?key=s3cret&x=1": "https://user:xxxxx@example.com/mcp?key=***&x=***",
		"http://127.0.0.1:3000/mcp":                      "http://127.0.0.1:3000/mcp",
		"http://[::1]:3000/sse?token=abc":                "http://[::1]:3000/sse?token=***",
		"://bad":                                         "<invalid url>",
	}
	for in, want := range tests {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q; want %q", in, got, want)
		}
		if strings.Contains(URL(in), "s3cret") || strings.Contains(URL(in), ":pw@") {
			t.Errorf("URL(%q) leaks a secret", in)
		}
	}
}

func TestKeys(t *testing.T) {
	got := Keys(map[string]string{"B": "secret-b", "A": "secret-a"})
	if got != "A=***, B=***" {
		t.Errorf("Keys = %q", got)
	}
}
