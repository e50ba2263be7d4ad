package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/hub"
	"github.com/mcphub/mcphub/registry"
	"github.com/mcphub/mcphub/store"
)

// After a restart, the resource subscriptions that restored sessions hold are
// renewed upstream, and updates reach the client under its old session id.
func TestSubscriptionsRenewedAfterRestart(t *testing.T) {
	const uri = "test://renewed/feed"
	var subscribes atomic.Int32
	srv := mcp.NewServer(&mcp.Implementation{Name: "feed", Version: "1"}, &mcp.ServerOptions{
		Logger: slog.New(slog.DiscardHandler),
		SubscribeHandler: func(context.Context, *mcp.SubscribeRequest) error {
			subscribes.Add(1)
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	srv.AddResource(&mcp.Resource{URI: uri, Name: "feed", MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "x"}}}, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Logger: slog.New(slog.DiscardHandler)}))
	defer up.Close()

	dir := t.TempDir()
	start := func() (*hub.Hub, *httptest.Server, *store.Store) {
		reg, err := registry.Parse("", []byte(durRemoteTable("feed", up.URL)), nil)
		if err != nil {
			t.Fatal(err)
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
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	h, ts, db := start()
	c := durNewClient(t, ts.URL+"/mcp")
	c.initialize()
	if status, m := c.call(2, "resources/subscribe", map[string]any{"uri": uri}); status != http.StatusOK || m.Error != nil {
		t.Fatalf("resources/subscribe: HTTP %d %s", status, m.Encode())
	}
	waitFor("the first subscription upstream", func() bool { return subscribes.Load() == 1 })
	h.Close()
	ts.Close()
	db.Close()

	h, ts, db = start()
	defer func() {
		h.Close()
		ts.Close()
		db.Close()
	}()
	waitFor("the subscription to be renewed after the restart", func() bool { return subscribes.Load() == 2 })

	// The old session id is served by the new hub; its GET stream gets the
	// upstream's update.
	c.url = ts.URL + "/mcp"
	resp, err := c.get(context.Background(), "")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET with the old session id after the restart: %v %v", err, resp)
	}
	s := durFollow(resp.Body)
	defer resp.Body.Close()
	waitFor("the GET stream to open", func() bool {
		select {
		case ev := <-s.events:
			return ev.Msg == nil // the priming event
		default:
			return false
		}
	})
	if err := srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("the GET stream ended: %v", s.err)
			}
			if ev.Msg != nil && ev.Msg.Method == "notifications/resources/updated" {
				return
			}
		case <-deadline:
			t.Fatal("no resources/updated reached the restored session")
		}
	}
}
