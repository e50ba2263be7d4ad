// Package pgtest gives tests a PostgreSQL database of their own: a fresh
// schema in the cluster named by MCPHUB_TEST_POSTGRES (scripts/postgres
// start prints its URL), dropped when the test ends.
//
// Without MCPHUB_TEST_POSTGRES a test skips, unless MCPHUB_REQUIRE_POSTGRES
// is set (scripts/test sets it): then it fails, so CI never passes by
// skipping the PostgreSQL half of a suite.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// URL returns the URL of a fresh, empty schema (search_path set to it) in
// the test cluster, dropped with everything in it when t ends.
func URL(t testing.TB) string {
	t.Helper()
	base := os.Getenv("MCPHUB_TEST_POSTGRES")
	if base == "" {
		if os.Getenv("MCPHUB_REQUIRE_POSTGRES") != "" {
			t.Fatal("MCPHUB_REQUIRE_POSTGRES is set but MCPHUB_TEST_POSTGRES is not; run scripts/postgres start and export the URL it prints")
		}
		t.Skip("no PostgreSQL: set MCPHUB_TEST_POSTGRES to the URL scripts/postgres start prints")
	}
	var b [6]byte
	rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("pgtest: connect to MCPHUB_TEST_POSTGRES: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("pgtest: drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("pgtest: MCPHUB_TEST_POSTGRES: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
