package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/httphdr"
)

// TestHTTPCallsReuseOneConnection: sequential calls to an HTTP upstream go
// over one kept-alive connection of the upstream's own pool (the standalone
// GET stream holds another), not a new connection per call.
func TestHTTPCallsReuseOneConnection(t *testing.T) {
	f := newFakeStreamable(t)
	c, _ := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP}, newRecorder())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 30 {
		if _, err := callTool(ctx, c, "echo", `{}`); err != nil {
			t.Fatal(err)
		}
	}
	posts := map[string]bool{}
	for _, s := range f.requests(func(s seenReq) bool { return s.rpc() == "tools/call" }) {
		posts[s.remote] = true
	}
	if len(posts) != 1 {
		t.Errorf("30 sequential calls used %d connections; want 1", len(posts))
	}
}

// TestHTTP2OverTLS: an upstream that offers HTTP/2 over TLS is spoken to in
// HTTP/2, every request of the session included.
func TestHTTP2OverTLS(t *testing.T) {
	f := newFakeStreamable(t)
	srv := httptest.NewUnstartedServer(f)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)

	c := New(Config{Name: "tls", URL: srv.URL + "/mcp", Transport: TransportStreamableHTTP}, newRecorder())
	// Trust the test server's certificate, as a system CA would be.
	c.tr.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := callTool(ctx, c, "echo", `{}`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the standalone GET", func() bool { return f.count(isGET) >= 1 })
	c.Close()
	seen := f.requests(nil)
	if len(seen) < 4 {
		t.Fatalf("only %d requests seen", len(seen))
	}
	for _, s := range seen {
		if s.proto != 2 {
			t.Errorf("%s %s went over HTTP/%d; want HTTP/2", s.method, s.rpc(), s.proto)
		}
	}
}

// TestFramingHeadersNeverSent: a Config whose headers would change the
// request's framing or session is refused at Start, naming the server and
// the header, before anything reaches the upstream.
func TestFramingHeadersNeverSent(t *testing.T) {
	f := newFakeStreamable(t)
	for _, h := range []string{"Transfer-Encoding", "content-length", "Host", "Connection", "Upgrade", "Mcp-Session-Id", "MCP-Protocol-Version"} {
		c := New(Config{Name: "files", URL: f.url, Headers: map[string]string{"X-Fine": "1", h: "chunked"}}, nil)
		err := c.Start(context.Background())
		c.Close()
		if !errors.Is(err, httphdr.ErrManaged) || !strings.Contains(err.Error(), "server files") || !strings.Contains(err.Error(), h) {
			t.Errorf("header %s: Start = %v; want a refusal naming server files and the header", h, err)
		}
	}
	if n := len(f.requests(nil)); n != 0 {
		t.Errorf("the upstream saw %d requests; want none", n)
	}
}
