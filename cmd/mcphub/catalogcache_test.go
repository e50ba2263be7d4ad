package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/hub"
	"github.com/mcphub/mcphub/registry"
	"github.com/mcphub/mcphub/store"
)

// After a restart, tools/list answers from the cached catalog at once, while
// a slow server is still starting; the server's own tools are listed before
// it has connected.
func TestCatalogCacheAnswersBeforeSlowServersConnect(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(startDelay string) (*hub.Hub, *httptest.Server, *store.Store) {
		// The slow variant sleeps before it becomes the server, as an npx
		// cold start does.
		text := fmt.Sprintf("[servers.slow]\ncommand = \"sh\"\nargs = [\"-c\", \"sleep %s; exec \\\"$0\\\"\", %q]\nenv = { %s = \"slow\", GORACE = \"atexit_sleep_ms=0\" }\n",
			startDelay, exe, fakeEnv)
		reg, err := registry.Parse("", []byte(text), nil)
		if err != nil {
			t.Fatalf("registry: %v\n%s", err, text)
		}
		db, err := store.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		h := hub.New(hub.Options{Registry: reg, NewUpstream: newStoredUpstream(log, db, nil), Store: hubStore{db}, Version: "test", Logger: log})
		if err := h.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return h, httptest.NewServer(h), db
	}
	state := func(h *hub.Hub) string { return h.Status().Servers[0].State }

	// First run: connect, so the catalog is cached.
	h, ts, db := run("0")
	deadline := time.Now().Add(15 * time.Second)
	for state(h) != hub.StateConnected {
		if time.Now().After(deadline) {
			t.Fatalf("first run never connected: %s", state(h))
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.Close()
	ts.Close()
	db.Close()

	// Second run: the server takes 3 s to start.
	h, ts, db = run("3")
	defer func() {
		h.Close()
		ts.Close()
		db.Close()
	}()
	start := time.Now()
	c := mcp.NewClient(&mcp.Implementation{Name: "cache", Version: "0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	found := false
	for _, tool := range res.Tools {
		found = found || tool.Name == "slow__echo"
	}
	if !found {
		t.Fatalf("tools/list after a restart lacks the cached slow__echo: %d tools", len(res.Tools))
	}
	if st := state(h); st != hub.StateStarting || elapsed > 2*time.Second {
		t.Fatalf("the list came after %v with the server %s; want it from the cache while the server is still starting", elapsed, st)
	}
}
