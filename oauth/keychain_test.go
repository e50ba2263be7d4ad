package oauth

import (
	"testing"

	"github.com/mcphub/mcphub/internal/keychain"
)

// TestKeychainOpensOnce: every command of a process shares one store,
// the first caller's.
func TestKeychainOpensOnce(t *testing.T) {
	t.Setenv(keychain.EnvBackend, "file")
	var k Keychain
	dir := t.TempDir()
	s := k.Open(dir)
	if s == nil || k.Open(t.TempDir()) != s {
		t.Fatal("Open returned another store on a second call")
	}
	if b := s.Backend(); b == "keychain" {
		t.Errorf("with %s=file, the store is %q", keychain.EnvBackend, b)
	}
}
