package hubclient

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestReconnectWithTokens: each way the hub answers a reconnect is a
// sentence naming what to run next.
func TestReconnectWithTokens(t *testing.T) {
	status := http.StatusAccepted
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/control/restart" || r.URL.Query().Get("server") != "a b" {
			t.Errorf("request %s %s", r.Method, r.URL)
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	tg := Target{Listen: srv.Listener.Addr().String()}
	ctx := context.Background()
	for s, want := range map[int]string{
		http.StatusAccepted:            "reconnecting a b; see mcphub status",
		http.StatusNotFound:            "a b is not enabled on the running hub; mcphub enable a b starts it",
		http.StatusInternalServerError: "not told (the hub at " + tg.Listen + " answered HTTP 500); mcphub restart a b reconnects it",
	} {
		status = s
		if got := tg.ReconnectWithTokens(ctx, "a b"); got != want {
			t.Errorf("HTTP %d: %q, want %q", s, got, want)
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if got := (Target{Listen: addr}).ReconnectWithTokens(ctx, "a"); !strings.HasPrefix(got, "no hub running;") {
		t.Errorf("no hub: %q", got)
	}
}
