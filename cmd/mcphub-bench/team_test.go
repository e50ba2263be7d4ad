package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mcphub/mcphub/store/pgtest"
)

// The balancer sends each request to the next replica in turn.
func TestBalancerRoundRobin(t *testing.T) {
	var addrs []string
	for i := range 3 {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, i) }))
		defer s.Close()
		addrs = append(addrs, strings.TrimPrefix(s.URL, "http://"))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go serveBalancer(ln, addrs)
	defer ln.Close()
	var got string
	for range 6 {
		resp, err := http.Get("http://" + ln.Addr().String() + "/mcp")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got += string(b)
	}
	if got != "012012" {
		t.Errorf("replicas in turn: %q, want 012012", got)
	}
}

// The counting relay counts one round trip per query, statements by
// their text, and BEGINs, whether pgx sends them over the simple or the
// extended protocol.
func TestPGCounter(t *testing.T) {
	base := pgtest.URL(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	c, err := newPGCounter(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.ln.Close()
	u.Host = c.ln.Addr().String()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if got := c.read(); got != (pgCounts{conns: 1}) {
		t.Fatalf("after connecting: %+v", got)
	}
	// Simple protocol: one round trip.
	if _, err := conn.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if got := c.read(); got != (pgCounts{conns: 1, roundTrips: 1, statements: 1}) {
		t.Errorf("after a simple query: %+v", got)
	}
	// A transaction of two statements with arguments, twice: the first
	// time each statement is prepared (a round trip of its own), the
	// second time it is not.
	for range 2 {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"SELECT $1::int", "SELECT $1::int + 1"} {
			if _, err := tx.Exec(ctx, q, 1); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// 1 + (begin + 2×(prepare + execute) + commit) + (begin + 2 + commit).
	if got := c.read(); got != (pgCounts{conns: 1, roundTrips: 1 + 6 + 4, statements: 5, begins: 2}) {
		t.Errorf("after two transactions: %+v", got)
	}
}
