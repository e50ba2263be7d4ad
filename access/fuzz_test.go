package access

import (
	"strings"
	"testing"
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
