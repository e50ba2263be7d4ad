package client

import (
	"context"
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
		c.spawn(func() { t.Error("a goroutine started after Close returned") })
		c.handlers.Wait()
	}
}
