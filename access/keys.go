package access

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// KeyPrefix starts every API key, so that a key pasted where it should not
// be is recognised (secret scanners, logs) for what it is.
const KeyPrefix = "mcphub_"

// A key is KeyPrefix, its public id, "_", and its secret, in lower-case
// base32: mcphub_<16 characters>_<52 characters>.
const (
	idBytes     = 10
	secretBytes = 32
)

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// Mint makes a new API key: its text, shown once to whoever made it; its
// public id, by which the store finds it; and its hash under pepper,
// which is all the store keeps of it.
func Mint(pepper []byte) (text, id string, hash []byte) {
	raw := make([]byte, idBytes+secretBytes)
	rand.Read(raw)
	id = strings.ToLower(b32.EncodeToString(raw[:idBytes]))
	text = KeyPrefix + id + "_" + strings.ToLower(b32.EncodeToString(raw[idBytes:]))
	return text, id, Hash(pepper, text)
}

// KeyID returns the public id of a key's text, and whether the text has a
// key's shape at all.
func KeyID(text string) (string, bool) {
	rest, ok := strings.CutPrefix(text, KeyPrefix)
	if !ok {
		return "", false
	}
	id, secret, ok := strings.Cut(rest, "_")
	if !ok || len(id) != b32.EncodedLen(idBytes) || len(secret) != b32.EncodedLen(secretBytes) {
		return "", false
	}
	if _, err := b32.DecodeString(strings.ToUpper(id)); err != nil {
		return "", false
	}
	if _, err := b32.DecodeString(strings.ToUpper(secret)); err != nil {
		return "", false
	}
	return id, true
}

// Hash is a key's keyed hash (HMAC-SHA-256 under pepper): the store keeps
// it, never the key, so that reading the hashes (a log of queries, a
// leaked table) gives no key; with 256 random bits per key, not even one
// who also holds the pepper can find one.
func Hash(pepper []byte, text string) []byte {
	m := hmac.New(sha256.New, pepper)
	m.Write([]byte(text))
	return m.Sum(nil)
}

// ValidKeyName reports a key's name: 1-64 letters, digits, '-', '_', '.'.
func ValidKeyName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// maxExpiryDays bounds a key's life: a hundred years is "never", and more
// would overflow a time.Duration.
const maxExpiryDays = 36500

// ParseExpiry reads how long a key lives: a number of days ("90d") or a Go
// duration ("12h"), positive, up to maxExpiryDays.
func ParseExpiry(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n > 0 && n <= maxExpiryDays {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	} else if d, err := time.ParseDuration(s); err == nil && d > 0 && d <= maxExpiryDays*24*time.Hour {
		return d, nil
	}
	return 0, fmt.Errorf("%q: write a number of days (90d, at most %d) or a duration (12h, 30m); leave it out for a key that does not expire", s, maxExpiryDays)
}
