package client

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// TestCloseRacesCancelledCalls closes connections while their calls are
// being cancelled: the cancellation's notifications/cancelled sender must
// not be started as Close waits for its goroutines (under -race, a
// WaitGroup Add racing its Wait is reported), and nothing may start after
// Close returned.
func TestCloseRacesCancelledCalls(t *testing.T) {
	f := newFakeStreamable(t)
	f.tools["block"] = func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, sess *fakeSession) {
		<-r.Context().Done()
	}
	for range 20 {
		c, _ := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			c.Call(ctx, "tools/call", []byte(`{"name":"block"}`))
		}()
		go func() {
			defer wg.Done()
			cancel()
			c.Close()
		}()
		wg.Wait()
		if c.handlers.Go(func() { t.Error("a goroutine started after Close returned") }) {
			t.Error("Go reported starting a goroutine after Close")
		}
	}
}

// TestCloseRacesDrain closes connections as a POST's SSE stream delivers its
// response and stays open: the drain of the rest of that stream must not
// be started as close waits for the transport's goroutines.
func TestCloseRacesDrain(t *testing.T) {
	f := newFakeStreamable(t)
	arrived := make(chan chan struct{}, 1)
	f.tools["tail"] = func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, sess *fakeSession) {
		startSSE(w)
		proceed := make(chan struct{})
		arrived <- proceed
		<-proceed
		writeSSE(w, sseData(jsonrpc.NewResponse(m.ID, json.RawMessage(`{}`))))
		<-r.Context().Done()
	}
	for range 100 {
		c, _ := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP}, nil)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			c.Call(context.Background(), "tools/call", []byte(`{"name":"tail"}`))
		}()
		proceed := <-arrived
		go func() {
			defer wg.Done()
			c.Close()
		}()
		close(proceed)
		wg.Wait()
	}
}
