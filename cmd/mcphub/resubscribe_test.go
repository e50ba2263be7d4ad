package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// After a restart, the resource subscriptions that restored sessions hold are
// renewed upstream, and updates reach the client under its old session id.
func TestSubscriptionsRenewedAfterRestart(t *testing.T) {
	up := startUpstream(t, "feed", upstreamOpts{})
	uri := resURI("feed")
	dir := t.TempDir()
	start := func() *inprocHub {
		return startInproc(t, remoteServer("feed", up.url, `connect_timeout = "10s"`), hubConfig{store: fullStore, dir: dir})
	}
	subscribes := func(n int64) func() error {
		return func() error {
			if got := up.subscribes.Load(); got != n {
				return fmt.Errorf("%d resources/subscribe upstream, want %d", got, n)
			}
			return nil
		}
	}

	h := start()
	s, _ := newRawClient(t, h.url).initialize("/mcp")
	if status, m := s.call(2, "resources/subscribe", map[string]any{"uri": uri}); status != http.StatusOK || m.Error != nil {
		t.Fatalf("resources/subscribe: HTTP %d %s", status, m.Encode())
	}
	eventually(t, 10*time.Second, "the first subscription upstream", subscribes(1))
	h.close()

	h = start()
	eventually(t, 10*time.Second, "the subscription is renewed after the restart", subscribes(2))

	// The old session id is served by the new hub; its GET stream gets the
	// upstream's update.
	s = newRawClient(t, h.url).session("/mcp", s.sid)
	resp, err := s.get(context.Background(), "")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET with the old session id after the restart: %v %v", err, resp)
	}
	stream := follow(resp.Body)
	defer resp.Body.Close()
	stream.await(t, 10*time.Second, "the GET stream opens with its priming event", func(ev sseEvent) bool { return ev.Msg == nil })
	if err := up.srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	stream.await(t, 10*time.Second, "resources/updated reaches the restored session", func(ev sseEvent) bool {
		return ev.Msg != nil && ev.Msg.Method == "notifications/resources/updated"
	})
}
