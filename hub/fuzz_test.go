package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// FuzzHandler throws methods × headers × bodies at the HTTP edge. Whatever
// comes in, the hub must not panic, must answer a status from the set the
// protocol allows, must give an error body that is JSON, and must keep
// serving the session that was there before.
func FuzzHandler(f *testing.F) {
	th := startHub(f, twoServers, map[string]*fakeUpstream{
		"alpha": newFake("alpha").setList("tools/list", toolItems("echo")),
		"beta":  newFake("beta").setList("tools/list", toolItems("hello")),
	})
	// A session that must survive every input.
	ok := th.serve(http.MethodPost, "/mcp", "", initReq("2025-11-25", "{}"), map[string]string{})
	sid := ok.Header().Get("Mcp-Session-Id")
	if sid == "" {
		f.Fatalf("initialize failed: %d %s", ok.Code, ok.Body)
	}

	seeds := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha__echo","arguments":{}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":"mcphub-1","result":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"x"}`,
		strings.Repeat("[", 3000),
		"\xff\xfe",
	}
	for i, s := range seeds {
		f.Add(uint8(i), uint8(i*7), uint16(i*131), []byte(s))
	}
	methods := []string{http.MethodPost, http.MethodGet, http.MethodDelete, http.MethodOptions, http.MethodPut, "BREW"}
	paths := []string{"/mcp", "/alpha/mcp", "/beta/sse", "/beta/message", "/nope/mcp", "/readyz", "/healthz", "/control/sessions", "/", "/mcp/"}
	f.Fuzz(func(t *testing.T, mi, pi uint8, flags uint16, body []byte) {
		method := methods[int(mi)%len(methods)]
		path := paths[int(pi)%len(paths)]
		hdr := map[string]string{}
		switch flags & 3 {
		case 0:
			hdr["Accept"] = "application/json, text/event-stream"
		case 1:
			hdr["Accept"] = "text/event-stream"
		case 2:
			hdr["Accept"] = "*/*;q=0.1, garbage;;;"
		}
		switch (flags >> 2) & 3 {
		case 0:
			hdr["Content-Type"] = "application/json"
		case 1:
			hdr["Content-Type"] = "text/plain"
		}
		switch (flags >> 4) & 7 {
		case 0:
			hdr["Mcp-Session-Id"] = sid
		case 1:
			hdr["Mcp-Session-Id"] = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
		case 2:
			hdr["Mcp-Session-Id"] = "../../etc/passwd\x00"
		case 3:
			hdr["Mcp-Session-Id"] = strings.Repeat("Z", 5000)
		}
		switch (flags >> 7) & 3 {
		case 0:
			hdr["MCP-Protocol-Version"] = "2025-11-25"
		case 1:
			hdr["MCP-Protocol-Version"] = "1999-01-01"
		}
		if flags&(1<<9) != 0 {
			hdr["Origin"] = "http://evil.example"
		}
		if flags&(1<<10) != 0 {
			hdr["Last-Event-ID"] = string(body[:min(len(body), 40)])
		}
		host := ""
		if flags&(1<<11) != 0 {
			host = "evil.example:80"
		}
		rec := th.serve(method, path, host, string(body), hdr)
		switch rec.Code {
		case 200, 202, 204, 400, 401, 403, 404, 405, 406, 409, 410, 413, 415, 429, 503:
		default:
			t.Fatalf("%s %s %v: unexpected status %d: %s", method, path, hdr, rec.Code, rec.Body)
		}
		if rec.Code >= 400 && rec.Body.Len() > 0 && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %s: error body is not JSON: %q", method, path, rec.Body)
		}
		// An input that opened a session of its own ends it, so that a long
		// run does not fill the endpoint's session limit.
		if own := rec.Header().Get("Mcp-Session-Id"); own != "" && own != sid {
			if end := th.serve(http.MethodDelete, path, "", "", map[string]string{"Mcp-Session-Id": own}); end.Code != http.StatusNoContent && end.Code != http.StatusOK {
				t.Fatalf("ending the session %s %s opened: %d %s", method, path, end.Code, end.Body)
			}
		}
		// The session that was there before still works, unless this input
		// was its own DELETE, and it was taken (then the next input gets a
		// new one).
		ownDelete := method == http.MethodDelete && hdr["Mcp-Session-Id"] == sid && strings.TrimSuffix(path, "/") == "/mcp" && host == "" && hdr["Origin"] == ""
		if ownDelete && (rec.Code == http.StatusOK || rec.Code == http.StatusNoContent) {
			again := th.serve(http.MethodPost, "/mcp", "", initReq("2025-11-25", "{}"), map[string]string{})
			sid = again.Header().Get("Mcp-Session-Id")
			if sid == "" {
				t.Fatalf("re-initialize after DELETE failed: %d %s", again.Code, again.Body)
			}
			return
		}
		probe := th.serve(http.MethodPost, "/mcp", "", `{"jsonrpc":"2.0","id":99,"method":"tools/list"}`, map[string]string{"Mcp-Session-Id": sid})
		if probe.Code != 200 || !bytes.Contains(probe.Body.Bytes(), []byte("alpha__echo")) {
			t.Fatalf("after %s %s %v %q the session no longer works: %d %s", method, path, hdr, body, probe.Code, probe.Body)
		}
	})
}

// serve runs one request through the hub's handler in-process, bounded so a
// stream that stays open ends.
func (th *testHub) serve(method, path, host, body string, hdr map[string]string) *httptest.ResponseRecorder {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, method, "http://127.0.0.1"+path, strings.NewReader(body))
	if host != "" {
		req.Host = host
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	th.h.ServeHTTP(rec, req)
	return rec
}
