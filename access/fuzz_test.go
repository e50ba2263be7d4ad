package access

import (
	"strings"
	"testing"
	"time"
)

// FuzzKeyID checks that KeyID never panics, accepts only a key's shape,
// and finds the id Mint made.
func FuzzKeyID(f *testing.F) {
	text, _, _ := Mint([]byte("p"))
	f.Add(text)
	f.Add(KeyPrefix + "x_y")
	f.Add("mcphub__")
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := KeyID(s)
		if !ok {
			return
		}
		if !strings.HasPrefix(s, KeyPrefix+id+"_") || len(s) != len(text) {
			t.Fatalf("KeyID(%q) = %q: not a key's shape", s, id)
		}
	})
}

// FuzzParseExpiry checks that ParseExpiry never panics and takes only a
// positive life of at most maxExpiryDays.
func FuzzParseExpiry(f *testing.F) {
	for _, s := range []string{"90d", "12h", "0d", "-1h", "36501d", "106752d", "9999999999h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseExpiry(s)
		if err == nil && (d <= 0 || d > maxExpiryDays*24*time.Hour) {
			t.Fatalf("ParseExpiry(%q) = %s", s, d)
		}
		if ValidKeyName(s) && strings.ContainsAny(s, " /,") {
			t.Fatalf("ValidKeyName(%q) took a separator", s)
		}
	})
}
