// Package dualera serves a test MCP server that speaks both protocol eras
// on one endpoint, from two backends: one that keeps sessions and one that
// is stateless.
//
// It exists because servers are becoming dual-era (the 2026-07-28
// revision lets one endpoint open a session for an initialize request and
// serve a request carrying modern per-request _meta statelessly), and
// mcphub must be tested against such a server, but no single Go SDK
// handler is one: a stateful handler refuses 2026-07-28 requests, and a
// stateless one cannot send the server-to-client requests (sampling,
// elicitation) that session-style tools make mid-call. Two handlers of one
// server, the Go SDK's everything-server run in each mode, with a router
// choosing between them by the era of each request, make up the dual-era
// server the revision describes: session-style tools that sample or elicit
// mid-call for a session-era client, and tools that return input_required
// for a 2026-07-28 one.
//
// It is test support only: no production package imports it. It imports
// the standard library only.
package dualera

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
)

const (
	// modernVersion is the first revision without sessions. Revisions are
	// dates, so later ones compare greater as strings.
	modernVersion = "2026-07-28"
	// versionMeta is the per-request _meta key naming a modern request's
	// revision.
	versionMeta = "io.modelcontextprotocol/protocolVersion"
	// maxPeek bounds how much of a body without the version header is
	// read to find its _meta (the Go SDK's default request limit); a
	// larger message goes to the session backend, whose own limit
	// answers it.
	maxPeek = 4 << 20
)

// Handler routes each request to one of two backends by its era, through
// a reverse proxy that streams responses (SSE events and
// newline-delimited JSON are flushed as they come). A POST whose
// MCP-Protocol-Version header, or when the header is absent the body's
// params._meta["io.modelcontextprotocol/protocolVersion"], names
// 2026-07-28 or later goes to stateless; everything else (initialize,
// requests carrying Mcp-Session-Id, GET, DELETE) goes to session. Each
// backend URL is a base: as with httputil.ProxyRequest.SetURL, its path
// is prefixed to the request's.
func Handler(session, stateless *url.URL) http.Handler {
	toSession, toStateless := proxy(session), proxy(stateless)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if modern(r) {
			toStateless.ServeHTTP(w, r)
			return
		}
		toSession.ServeHTTP(w, r)
	})
}

// proxy forwards to target with every write of the backend flushed at
// once. The request keeps its Host header, so that the backend's
// DNS-rebinding protection judges the Host the client sent, as it would
// were it the server the client reached.
//
// A body of known length is handed on ending at that length: the
// Transport reads once more past Content-Length to check that the body
// ends, and on a server's request body that read can come after the
// server closed the body; the Transport then closes the backend
// connection, at times before the response was copied, and the client
// gets a response cut short.
func proxy(target *url.URL) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
			if body := pr.Out.Body; body != nil && pr.Out.ContentLength > 0 {
				pr.Out.Body = struct {
					io.Reader
					io.Closer
				}{io.LimitReader(body, pr.Out.ContentLength), body}
			}
		},
		FlushInterval: -1,
	}
}

// modern reports whether r is a 2026-07-28 request. When it reads the body
// to tell, it leaves r.Body replaying what it read, then the rest.
func modern(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" {
		return v >= modernVersion
	}
	if r.Body == nil || r.Body == http.NoBody {
		return false
	}
	v, replay := bodyVersion(r.Body)
	r.Body = replay
	return v >= modernVersion
}

// bodyVersion reads the first JSON value of body, up to maxPeek bytes, and
// returns the revision its params._meta names ("" when it names none or is
// not a single JSON-RPC message) and a body that replays everything read
// before the rest of body, closing body when closed.
func bodyVersion(body io.ReadCloser) (string, io.ReadCloser) {
	var read bytes.Buffer
	var msg struct {
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	err := json.NewDecoder(io.TeeReader(io.LimitReader(body, maxPeek), &read)).Decode(&msg)
	replay := struct {
		io.Reader
		io.Closer
	}{io.MultiReader(&read, body), body}
	if err != nil {
		return "", replay
	}
	v, _ := msg.Params.Meta[versionMeta].(string)
	return v, replay
}
