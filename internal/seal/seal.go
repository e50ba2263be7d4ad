// Package seal encrypts small secrets at rest (a team hub's OAuth grants in
// its database) with AES-256-GCM under keys the operator holds, never the
// database: MCPHUB_SECRET_KEY or a key file.
//
// Keys are an ordered list: the first seals, every one opens, so that a key
// is rotated by putting the new one first, resealing (mcphub store rekey),
// then dropping the old. A sealed value names its key by a short id (a
// hash of the key) and is bound to where it is kept (the associated data),
// so that a value copied to another row does not open.
package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the size of a key: AES-256.
const KeySize = 32

// version starts every sealed value.
const version = "s1"

const idSize = 8

// ErrUnknownKey is a value sealed under none of the keys.
var ErrUnknownKey = errors.New("sealed under a key that is not among the secret keys (was the key rotated without mcphub store rekey?)")

// Keys are the keys values are sealed and opened with.
type Keys struct {
	aeads []cipher.AEAD
	ids   [][]byte
}

// ParseKeys reads keys written one after another, separated by commas,
// spaces or newlines: each 32 bytes in base64 (standard or URL, padded or
// not) or in hex. Lines starting with # are comments. The first key seals.
// An error never quotes a key.
func ParseKeys(text string) (*Keys, error) {
	var fields []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		fields = append(fields, strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\r' })...)
	}
	if len(fields) == 0 {
		return nil, errors.New("no key: write 32 random bytes in base64, such as the output of: openssl rand -base64 32")
	}
	k := &Keys{}
	for i, f := range fields {
		raw, ok := decodeKey(f)
		if !ok {
			return nil, fmt.Errorf("key %d is not 32 bytes in base64 or hex (make one with: openssl rand -base64 32)", i+1)
		}
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(append([]byte("mcphub seal key id\x00"), raw...))
		k.aeads = append(k.aeads, aead)
		k.ids = append(k.ids, sum[:idSize])
	}
	return k, nil
}

func decodeKey(s string) ([]byte, bool) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == KeySize {
			return b, true
		}
	}
	if b, err := hex.DecodeString(s); err == nil && len(b) == KeySize {
		return b, true
	}
	return nil, false
}

// Seal encrypts plain under the first key, bound to where (the associated
// data: where the value is kept).
func (k *Keys) Seal(plain []byte, where string) []byte {
	aead := k.aeads[0]
	out := make([]byte, 0, len(version)+idSize+aead.NonceSize()+len(plain)+aead.Overhead())
	out = append(out, version...)
	out = append(out, k.ids[0]...)
	nonce := make([]byte, aead.NonceSize())
	rand.Read(nonce)
	out = append(out, nonce...)
	return aead.Seal(out, nonce, plain, []byte(where))
}

// Open decrypts a sealed value kept at where; ErrUnknownKey when none of
// the keys sealed it.
func (k *Keys) Open(sealed []byte, where string) ([]byte, error) {
	i, body, err := k.which(sealed)
	if err != nil {
		return nil, err
	}
	aead := k.aeads[i]
	if len(body) < aead.NonceSize()+aead.Overhead() {
		return nil, errors.New("sealed value is cut short")
	}
	plain, err := aead.Open(nil, body[:aead.NonceSize()], body[aead.NonceSize():], []byte(where))
	if err != nil {
		return nil, errors.New("sealed value does not open: altered, or moved from where it was sealed")
	}
	return plain, nil
}

// Current reports whether a sealed value is sealed under the first key
// (rekey leaves it alone).
func (k *Keys) Current(sealed []byte) bool {
	i, _, err := k.which(sealed)
	return err == nil && i == 0
}

// which finds the key that sealed a value and returns the rest of it.
func (k *Keys) which(sealed []byte) (int, []byte, error) {
	if len(sealed) < len(version)+idSize || string(sealed[:len(version)]) != version {
		return 0, nil, errors.New("not a sealed value")
	}
	id := sealed[len(version) : len(version)+idSize]
	for i, kid := range k.ids {
		if bytes.Equal(id, kid) {
			return i, sealed[len(version)+idSize:], nil
		}
	}
	return 0, nil, ErrUnknownKey
}
