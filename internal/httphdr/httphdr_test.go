package httphdr

import (
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        error
	}{
		{"Authorization", "Bearer x", nil},
		{"X-Api-Key", "k", nil},
		{"transfer-encoding", "chunked", ErrManaged},
		{"Content-Length", "3", ErrManaged},
		{"HOST", "example.com", ErrManaged},
		{"Connection", "close", ErrManaged},
		{"Upgrade", "h2c", ErrManaged},
		{"mcp-session-id", "abc", ErrManaged},
		{"MCP-Protocol-Version", "2025-06-18", ErrManaged},
		{"Last-Event-ID", "1", ErrManaged},
		{"TE", "trailers", ErrManaged},
		{"Accept-Encoding", "gzip", ErrManaged},
		{"content-encoding", "gzip", ErrManaged},
		{"Bad Name", "x", ErrInvalidName},
		{"", "x", ErrInvalidName},
		{"X-Ok", "a\r\nInjected: 1", ErrInvalidValue},
		{"X-Ok", "a\x00", ErrInvalidValue},
	} {
		err := Check(tc.name, tc.value)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("Check(%q, %q) = %v, want %v", tc.name, tc.value, err, tc.want)
		}
		if err != nil && tc.want != ErrInvalidName && !strings.Contains(err.Error(), tc.name) {
			t.Errorf("Check(%q): %q does not name the header", tc.name, err)
		}
	}
}

func TestParseArg(t *testing.T) {
	for _, tc := range []struct {
		arg, name, value string
		want             error
	}{
		{"Authorization=Bearer a=b", "Authorization", "Bearer a=b", nil},
		{"Authorization: Bearer a=b", "Authorization", "Bearer a=b", nil},
		{"X-Time=12:30", "X-Time", "12:30", nil},
		{"X-Time: 12:30", "X-Time", "12:30", nil},
		{"X-Empty=", "X-Empty", "", nil},
		{"Transfer-Encoding: chunked", "", "", ErrManaged},
		{"content-length=0", "", "", ErrManaged},
	} {
		n, v, err := ParseArg(tc.arg)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) || n != tc.name || v != tc.value {
			t.Errorf("ParseArg(%q) = %q, %q, %v; want %q, %q, %v", tc.arg, n, v, err, tc.name, tc.value, tc.want)
		}
	}
	for _, bad := range []string{"", "novalue", "=x", ": x", "Bad Name: x"} {
		if _, _, err := ParseArg(bad); err == nil {
			t.Errorf("ParseArg(%q) accepted it", bad)
		}
	}
}

// FuzzParseArg checks that whatever ParseArg accepts is a header Check
// accepts, and that it never panics.
func FuzzParseArg(f *testing.F) {
	for _, s := range []string{"Authorization: Bearer x", "A=b", "Transfer-Encoding: chunked", "x:y=z", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		name, value, err := ParseArg(arg)
		if err != nil {
			return
		}
		if cerr := Check(name, value); cerr != nil {
			t.Fatalf("ParseArg(%q) accepted %q=%q, which Check refuses: %v", arg, name, value, cerr)
		}
	})
}
