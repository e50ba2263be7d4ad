package keychain

import "testing"

// TestOnceOpensOnce: every command of a process shares one store,
// the first caller's.
func TestOnceOpensOnce(t *testing.T) {
	t.Setenv(EnvBackend, "file")
	var k Once
	dir := t.TempDir()
	s := k.Open(dir)
	if s == nil || k.Open(t.TempDir()) != s {
		t.Fatal("Open returned another store on a second call")
	}
	if b := s.Backend(); b == "keychain" {
		t.Errorf("with %s=file, the store is %q", EnvBackend, b)
	}
}
