package seal

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func newKey(t testing.TB) []byte {
	b := make([]byte, KeySize)
	rand.Read(b)
	return b
}

// A value sealed under the first key opens under it and under a list that
// keeps it further down; it is bound to where it was sealed; a list
// without its key says so; rekeying is told by Current.
func TestSealAndRotate(t *testing.T) {
	a, b := newKey(t), newKey(t)
	old, err := ParseKeys(base64.StdEncoding.EncodeToString(a))
	if err != nil {
		t.Fatal(err)
	}
	sealed := old.Seal([]byte("grant"), "row-1")
	if bytes.Contains(sealed, []byte("grant")) {
		t.Fatal("the sealed value holds the plain text")
	}
	if got, err := old.Open(sealed, "row-1"); err != nil || string(got) != "grant" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := old.Open(sealed, "row-2"); err == nil {
		t.Error("a value moved to another row opened")
	}
	tampered := bytes.Clone(sealed)
	tampered[len(tampered)-1] ^= 1
	if _, err := old.Open(tampered, "row-1"); err == nil {
		t.Error("an altered value opened")
	}
	both, err := ParseKeys("# new first\n" + hex.EncodeToString(b) + ",\n" + base64.RawURLEncoding.EncodeToString(a) + "\n")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := both.Open(sealed, "row-1"); err != nil || string(got) != "grant" || both.Current(sealed) || !old.Current(sealed) {
		t.Fatalf("after rotation: %q, %v, current %v", got, err, both.Current(sealed))
	}
	resealed := both.Seal([]byte("grant"), "row-1")
	if !both.Current(resealed) {
		t.Error("a value sealed under the first key is not current")
	}
	if _, err := old.Open(resealed, "row-1"); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("a value sealed under a key not in the list: %v, want ErrUnknownKey", err)
	}
	for _, bad := range []string{"", "# only a comment", "c2hvcnQ=", strings.Repeat("z", 64)} {
		if _, err := ParseKeys(bad); err == nil {
			t.Errorf("ParseKeys(%q) took it", bad)
		}
	}
	secret := base64.StdEncoding.EncodeToString(a)
	if _, err := ParseKeys(secret + ",bad-" + secret); err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("a bad second key: %v; want an error that quotes no key", err)
	}
}

// FuzzOpen checks that opening any bytes never panics, and that ParseKeys
// never quotes what it was given.
func FuzzOpen(f *testing.F) {
	key := base64.StdEncoding.EncodeToString(newKey(f))
	keys, _ := ParseKeys(key)
	f.Add(keys.Seal([]byte("x"), "w"), key)
	f.Add([]byte("s1"), "not a key")
	f.Fuzz(func(t *testing.T, sealed []byte, text string) {
		keys.Open(sealed, "w")
		keys.Current(sealed)
		if _, err := ParseKeys(text); err != nil && len(text) > 8 && strings.Contains(err.Error(), text) {
			t.Fatalf("ParseKeys quotes its input: %v", err)
		}
	})
}
