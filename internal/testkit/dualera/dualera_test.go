package dualera

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
)

// seen is what a backend saw of one request.
type seen struct {
	backend, method, path, host, body string
}

// backends starts the session and stateless backends, each answering with
// its name and recording what it saw, and the router in front of them.
func backends(t *testing.T) (router *httptest.Server, got chan seen) {
	t.Helper()
	got = make(chan seen, 1)
	backend := func(name string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				t.Errorf("%s: reading the body: %v", name, err)
			}
			got <- seen{name, r.Method, r.URL.Path, r.Host, string(b)}
			io.WriteString(w, name)
		}))
		t.Cleanup(s.Close)
		return s
	}
	session, stateless := backend("session"), backend("stateless")
	router = httptest.NewServer(Handler(mustURL(t, session.URL), mustURL(t, stateless.URL)))
	t.Cleanup(router.Close)
	return router, got
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestHandlerRoutesByEra: a 2026-07-28 POST, told by its header or by its
// body's _meta, reaches the stateless backend; everything else reaches the
// session backend; the backend gets the body whole, the path, and the
// client's Host.
func TestHandlerRoutesByEra(t *testing.T) {
	router, got := backends(t)
	modernBody := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"pad":"` +
		strings.Repeat("a", 100_000) + `"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`
	initialize := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"0"}}}`
	cases := []struct {
		name, method, body string
		header             map[string]string
		want               string
	}{
		{"modern header", "POST", `{"jsonrpc":"2.0","id":1,"method":"server/discover"}`, map[string]string{"MCP-Protocol-Version": "2026-07-28"}, "stateless"},
		{"later revision header", "POST", `{}`, map[string]string{"MCP-Protocol-Version": "2027-01-01"}, "stateless"},
		{"session header", "POST", modernBody, map[string]string{"MCP-Protocol-Version": "2025-11-25"}, "session"},
		{"modern _meta, no header", "POST", modernBody, nil, "stateless"},
		{"initialize", "POST", initialize, nil, "session"},
		{"session id", "POST", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, map[string]string{"Mcp-Session-Id": "abc"}, "session"},
		{"session-era _meta", "POST", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`, nil, "session"},
		{"batch", "POST", `[` + initialize + `]`, nil, "session"},
		{"not JSON", "POST", `{"jsonrpc":`, nil, "session"},
		{"non-string version", "POST", `{"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":2026}}}`, nil, "session"},
		{"empty body", "POST", ``, nil, "session"},
		{"GET", "GET", ``, map[string]string{"Mcp-Session-Id": "abc"}, "session"},
		{"DELETE", "DELETE", ``, map[string]string{"Mcp-Session-Id": "abc"}, "session"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, router.URL+"/mcp", strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Host = "dual.test"
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			answer, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			s := <-got
			if s.backend != c.want || string(answer) != c.want {
				t.Errorf("reached %s (answer %q), want %s", s.backend, answer, c.want)
			}
			if s.method != c.method || s.path != "/mcp" || s.body != c.body {
				t.Errorf("the backend saw %s %s with a body of %d bytes; sent %s /mcp with %d", s.method, s.path, len(s.body), c.method, len(c.body))
			}
			if s.host != "dual.test" {
				t.Errorf("the backend saw Host %q, not the client's", s.host)
			}
		})
	}
}

// TestHandlerPrefixesTheBackendPath: a backend URL with a path is a base
// for the request's path.
func TestHandlerPrefixesTheBackendPath(t *testing.T) {
	paths := make(chan string, 1)
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { paths <- r.URL.Path }))
	defer b.Close()
	router := httptest.NewServer(Handler(mustURL(t, b.URL+"/base"), mustURL(t, b.URL+"/base")))
	defer router.Close()
	resp, err := http.Post(router.URL+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if p := <-paths; p != "/base/mcp" {
		t.Errorf("the backend saw %q, want /base/mcp", p)
	}
}

// TestHandlerStreams: a line a backend flushes reaches the client before
// the backend writes the next one, on both routes, in an SSE stream and in
// newline-delimited JSON (a stateless server's streamed response).
func TestHandlerStreams(t *testing.T) {
	release := make(chan struct{})
	streaming := func(name, contentType string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", contentType)
			fmt.Fprintf(w, "%s first\n", name)
			w.(http.Flusher).Flush()
			<-release
			fmt.Fprintf(w, "%s second\n", name)
		}))
		t.Cleanup(s.Close)
		return s
	}
	session, stateless := streaming("session", "text/event-stream"), streaming("stateless", "application/json")
	router := httptest.NewServer(Handler(mustURL(t, session.URL), mustURL(t, stateless.URL)))
	t.Cleanup(router.Close)
	for _, c := range []struct{ version, want string }{{"2025-11-25", "session"}, {"2026-07-28", "stateless"}} {
		req, _ := http.NewRequest("POST", router.URL+"/mcp", strings.NewReader(`{}`))
		req.Header.Set("MCP-Protocol-Version", c.version)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewReader(resp.Body)
		// The backend is blocked until release: the first line arrives
		// only if the proxy flushed it.
		if l, err := lines.ReadString('\n'); err != nil || l != c.want+" first\n" {
			t.Fatalf("%s: first line %q, %v", c.want, l, err)
		}
		release <- struct{}{}
		rest, _ := io.ReadAll(lines)
		resp.Body.Close()
		if string(rest) != c.want+" second\n" {
			t.Errorf("%s: the rest of the stream is %q", c.want, rest)
		}
	}
}

// TestProxyBodyEndsAtContentLength: the body handed to the Transport ends
// at Content-Length without reading the server's body further, so that
// the Transport's check for the end never reads a body the server has
// closed.
func TestProxyBodyEndsAtContentLength(t *testing.T) {
	in := httptest.NewRequest("POST", "http://dual.test/mcp", nil)
	rest := strings.NewReader("{}past the length")
	in.Body, in.ContentLength = io.NopCloser(rest), 2
	pr := &httputil.ProxyRequest{In: in, Out: in.Clone(in.Context())}
	proxy(mustURL(t, "http://127.0.0.1:1")).Rewrite(pr)
	got, err := io.ReadAll(pr.Out.Body)
	if err != nil || string(got) != "{}" {
		t.Errorf("the Transport reads %q, %v; want the 2 bytes of Content-Length", got, err)
	}
	if rest.Len() != len("past the length") {
		t.Errorf("the server's body was read %d bytes past Content-Length", len("past the length")-rest.Len())
	}
}

// FuzzBodyVersion: whatever the body, the router's peek replays it byte
// for byte.
func FuzzBodyVersion(f *testing.F) {
	f.Add([]byte(`{"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`))
	f.Add([]byte(`{"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}} trailing`))
	f.Add([]byte(`[{"params":null}]`))
	f.Add([]byte(`{"params":`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, body []byte) {
		_, replay := bodyVersion(io.NopCloser(bytes.NewReader(body)))
		got, err := io.ReadAll(replay)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("replayed %q, %v; want %q", got, err, body)
		}
	})
}
