package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cutProxy forwards every request to an upstream MCP endpoint, streaming
// responses event by event, and cuts the connection of the first tools/call
// POST's SSE response after cutAfter progress events, as a network failure
// would: the client sees the stream break mid-way, never its end.
type cutProxy struct {
	target   string
	hc       *http.Client
	cutAfter int

	mu     sync.Mutex
	cut    bool     // the first tools/call stream has been cut
	passed int      // progress events passed before the cut
	resume []string // Last-Event-ID of each GET that carried one
}

func (p *cutProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.target, bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	if id := r.Header.Get("Last-Event-ID"); r.Method == http.MethodGet && id != "" {
		p.mu.Lock()
		p.resume = append(p.resume, id)
		p.mu.Unlock()
	}
	p.mu.Lock()
	cutThis := !p.cut && r.Method == http.MethodPost && bytes.Contains(body, []byte(`"tools/call"`))
	if cutThis {
		p.cut = true
	}
	p.mu.Unlock()

	resp, err := p.hc.Do(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	flush := http.NewResponseController(w).Flush
	flush()
	br := bufio.NewReader(resp.Body)
	progress, inProgressEvent := 0, false
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			w.Write(line)
			if bytes.Contains(line, []byte(`"notifications/progress"`)) {
				inProgressEvent = true
			}
			if len(bytes.TrimRight(line, "\r\n")) == 0 { // an event ends
				flush()
				if inProgressEvent {
					progress++
					inProgressEvent = false
				}
				if cutThis && progress == p.cutAfter {
					p.mu.Lock()
					p.passed = progress
					p.mu.Unlock()
					resp.Body.Close()
					// Drops the client's connection without ending the response.
					panic(http.ErrAbortHandler)
				}
			}
		}
		if err != nil {
			flush()
			return
		}
	}
}

func TestResumeAfterProxyCutsStream(t *testing.T) {
	const total = 20
	server := mcp.NewServer(&mcp.Implementation{Name: "counter", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "count", Description: "reports progress 1..20"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
			tok := req.Params.GetProgressToken()
			for i := 1; i <= total; i++ {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: total})
				time.Sleep(20 * time.Millisecond) // the tool's own pace
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "counted to 20"}}}, nil, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)})
	upstream := httptest.NewServer(handler)
	t.Cleanup(upstream.Close)
	proxy := &cutProxy{target: upstream.URL, hc: upstream.Client(), cutAfter: 5}
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)

	rec := newRecorder()
	c, logs := startHTTP(t, Config{URL: front.URL, Transport: TransportStreamableHTTP}, rec)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id := c.NextID()
	res, err := c.CallWithID(ctx, id, "tools/call", json.RawMessage(`{"name":"count","arguments":{},"_meta":{"progressToken":"p-1"}}`))
	if err != nil {
		t.Fatalf("count: %v\nlogs:\n%s", err, logs)
	}
	if !strings.Contains(string(res), "counted to 20") {
		t.Fatalf("count returned %s", res)
	}

	proxy.mu.Lock()
	cut, passed, resume := proxy.cut, proxy.passed, append([]string(nil), proxy.resume...)
	proxy.mu.Unlock()
	if !cut || passed != proxy.cutAfter {
		t.Fatalf("the proxy did not cut the stream after %d events (cut %v, passed %d)", proxy.cutAfter, cut, passed)
	}
	if len(resume) == 0 {
		t.Fatalf("the proxy saw no GET with Last-Event-ID\nlogs:\n%s", logs)
	}

	var got []int
	for i, n := range rec.notifications("notifications/progress") {
		var p struct {
			ProgressToken string  `json:"progressToken"`
			Progress      float64 `json:"progress"`
		}
		json.Unmarshal(n.Params, &p)
		if p.ProgressToken != "p-1" {
			t.Errorf("notification %d has token %q", i, p.ProgressToken)
		}
		got = append(got, int(p.Progress))
	}
	want := make([]int, total)
	for i := range want {
		want[i] = i + 1
	}
	if len(got) != total || !equalInts(got, want) {
		t.Errorf("progress delivered %v, want 1..%d exactly once each, in order (resumed with Last-Event-ID %v)", got, total, resume)
	}
	for _, rel := range rec.relatedOf("notifications/progress") {
		if string(rel) != string(id) {
			t.Errorf("a progress notification had related %q, want %s", rel, id)
			break
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
