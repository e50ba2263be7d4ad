package main

import (
	"slices"
	"testing"
	"time"

	"github.com/mcphub/mcphub/api"
)

// After a restart, tools/list answers from the cached catalog at once, while
// a slow server is still starting; the server's own tools are listed before
// it has connected.
func TestCatalogCacheAnswersBeforeSlowServersConnect(t *testing.T) {
	dir := t.TempDir()
	// The slow variant sleeps before it becomes the server, as an npx cold
	// start does. Both runs share the data directory.
	run := func(delay string, wait bool) *inprocHub {
		return startInproc(t, childServer(t, "slow", childOpts{delay: delay}), hubConfig{store: fullStore, dir: dir, noWait: !wait})
	}

	// First run: connect, so the catalog is cached.
	run("0", true).close()

	// Second run: the server takes 3 s to start.
	h := run("3", false)
	start := time.Now()
	names, err := h.connect("/mcp", nil).tools()
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	if !slices.Contains(names, "slow__echo") {
		t.Fatalf("tools/list after a restart lacks the cached slow__echo: %v", names)
	}
	if st := h.h.Status().Servers[0].State; st != api.StateStarting || elapsed > 2*time.Second {
		t.Fatalf("the list came after %v with the server %s; want it from the cache while the server is still starting", elapsed, st)
	}
}
