package store

import (
	"context"
	"testing"

	"github.com/mcphub/mcphub/store/pgtest"
)

// opener opens one database, the same one at every call (a SQLite data
// directory, a PostgreSQL schema), and closes what it opened when the test
// ends.
type opener func(t testing.TB) *Store

// eachStore runs test against SQLite and against PostgreSQL: the shared
// suite. The PostgreSQL half skips without a test cluster, except where
// MCPHUB_REQUIRE_POSTGRES makes it fail (pgtest).
func eachStore(t *testing.T, test func(t *testing.T, open opener)) {
	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		test(t, func(t testing.TB) *Store { return openT(t, dir) })
	})
	t.Run("postgres", func(t *testing.T) {
		u := pgtest.URL(t)
		test(t, func(t testing.TB) *Store { return openURLT(t, u) })
	})
}

// openURLT opens the PostgreSQL store at u and closes it when the test ends.
func openURLT(t testing.TB, u string) *Store {
	t.Helper()
	s, err := OpenURL(context.Background(), u)
	if err != nil {
		t.Fatalf("OpenURL: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
