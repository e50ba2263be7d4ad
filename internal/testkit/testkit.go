// Package testkit holds the few small helpers that the tests of several
// rooms (oauth, client) share: waiting on a channel with a deadline, a
// buffer that concurrent writers such as a logger may share with the
// test reading it, and a check that a text holds none of some secrets.
//
// It is test support only: no production package imports it. It imports
// the standard library only.
package testkit

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// Recv waits up to ten seconds for a value from ch, failing the test
// with what it waited for when none comes.
func Recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// SyncBuffer is a log sink safe for concurrent writers: a logger's
// handler or a child's stderr copier writes while the test reads.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is all that was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// NoSecrets fails the test if any of secrets appears in text, which is
// where it was found (a log, an error, an output).
func NoSecrets(t testing.TB, where, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Errorf("%s holds the secret %q:\n%s", where, s, text)
		}
	}
}
