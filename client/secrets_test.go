package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/testkit"
)

// A server's stderr, logged and kept for the ExitError, is redacted of the
// server's env values and of credentials it prints.
func TestStdioStderrIsRedacted(t *testing.T) {
	c, logs := startFake(t, "normal", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := callTool(ctx, c, "leak", `{}`)
	var exit *ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("leak: %v, want an ExitError", err)
	}
	// The readers are done before the ExitError is built.
	text := err.Error()
	if !strings.Contains(text, "token=*** in use") || !strings.Contains(text, "Authorization: ***") || !strings.Contains(text, "giving up") {
		t.Errorf("the ExitError lost the stderr around the secrets: %s", text)
	}
	testkit.NoSecrets(t, "the ExitError", text, "registry-given", "abcdefgh12345678")
	waitFor(t, 5*time.Second, "the stderr to be logged", func() bool { return strings.Contains(logs.String(), "giving up") })
	testkit.NoSecrets(t, "the log", logs.String(), "registry-given", "abcdefgh12345678")
}

// An upstream HTTP error body that echoes what mcphub sent is redacted
// before it becomes an error: configured header values, URL query values,
// and credentials whoever configured them.
func TestHTTPErrorBodyIsRedacted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, "bad credentials\nAuthorization: %s\nX-Team: %s\nquery: %s\n{\"access_token\":\"ya29.zzzz\"}",
			r.Header.Get("Authorization"), r.Header.Get("X-Team"), r.URL.RawQuery)
	}))
	t.Cleanup(srv.Close)
	for _, transport := range []string{TransportStreamableHTTP, TransportSSE} {
		t.Run(transport, func(t *testing.T) {
			c := New(Config{
				Name: "up", URL: srv.URL + "/mcp?key=url-secret-123", Transport: transport,
				Headers: map[string]string{"Authorization": "Bearer hdr-secret-456", "X-Team": "team-secret-789"},
			}, nil)
			t.Cleanup(func() { c.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := c.Start(ctx)
			var he *HTTPError
			if !errors.As(err, &he) || he.Status != http.StatusUnauthorized {
				t.Fatalf("Start: %v, want HTTP 401", err)
			}
			if !strings.Contains(he.Body, "bad credentials") {
				t.Errorf("the body lost its text: %q", he.Body)
			}
			testkit.NoSecrets(t, "the error", err.Error(), "hdr-secret-456", "team-secret-789", "url-secret-123", "ya29.zzzz")
		})
	}
}

// An upstream JSON-RPC error message is redacted too: it reaches the
// caller, the log and the status.
func TestUpstreamRPCErrorIsRedacted(t *testing.T) {
	f := newFakeStreamable(t)
	f.tools["fail"] = func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, _ *fakeSession) {
		e := jsonrpc.Errorf(-32000, "token %s rejected", r.Header.Get("X-Key"))
		e.Data = json.RawMessage(fmt.Sprintf(`{"headers":{"X-Key":%q},"code":7}`, r.Header.Get("X-Key")))
		writeJSONMsg(w, jsonrpc.NewErrorResponse(m.ID, e))
	}
	c, _ := startHTTP(t, Config{URL: f.url, Transport: TransportStreamableHTTP, Headers: map[string]string{"X-Key": "key-secret-0001"}}, nil)
	_, err := callTool(context.Background(), c, "fail", `{}`)
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != -32000 || rpcErr.Message != "token *** rejected" {
		t.Fatalf("fail: %v, want code -32000 with the key masked", err)
	}
	if strings.Contains(string(rpcErr.Data), "key-secret-0001") || !json.Valid(rpcErr.Data) || !strings.Contains(string(rpcErr.Data), `"code":7`) {
		t.Errorf("error data = %s, want it JSON with the key masked", rpcErr.Data)
	}
}

// A transport error that quotes what the server sent (here a malformed
// Content-Length echoing a header) is redacted, and still matches what it
// wraps.
func TestTransportErrorIsRedacted(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				tp := textproto.NewReader(bufio.NewReader(conn))
				tp.ReadLine()
				h, _ := tp.ReadMIMEHeader()
				fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Length: %s\r\n\r\n", h.Get("X-Key"))
			}()
		}
	}()
	c := New(Config{Name: "up", URL: "http://" + ln.Addr().String() + "/mcp", Transport: TransportStreamableHTTP,
		Headers: map[string]string{"X-Key": "len-secret-42"}}, nil)
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = c.Start(ctx)
	if err == nil || !strings.Contains(err.Error(), "Content-Length") {
		t.Fatalf("Start: %v, want net/http's complaint about the Content-Length", err)
	}
	testkit.NoSecrets(t, "the error", err.Error(), "len-secret-42")
}
