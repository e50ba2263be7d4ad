package main

// The abuse soak drives a real `mcphub serve` process the way careless and
// hostile clients do, and prints what it cost:
//
//   - abandoned sessions: clients initialize and never send DELETE, past
//     the /mcp cap, twice over; every initialize must succeed (idle
//     sessions make room) and the live count stays at the cap;
//   - a never-reading stream: a client opens a GET stream, sets its log
//     level, and never reads, while an upstream floods log notifications
//     through the hub; the hub's peak RSS and, after a forced GC, its live
//     heap are printed, before and after the session is deleted;
//   - concurrent edits: many `mcphub add` processes at once, and hub.toml
//     compared with the set of servers that were added (soakEdits).
//
// TestSoakAbuseShort runs by default with small numbers. The full soak
// (1,000 sessions past a cap of 1,000, a 500 MB flood, 160 adds) runs only
// when asked:
//
//	MCPHUB_SOAK=1 go test -run 'TestSoakAbuse$' -count=1 -v ./cmd/mcphub/
//
// Every identifier here starts with "soakAbuse".

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// soakAbuseConfig sizes one run.
type soakAbuseConfig struct {
	maxSessions int // [hub] max_sessions
	abandoned   int // sessions initialized and left, beyond the cap
	floodN      int // log notifications fed to the never-reading stream
	floodBytes  int // the size of each
	adds        int // concurrent `mcphub add` processes
}

func TestSoakAbuse(t *testing.T) {
	if os.Getenv("MCPHUB_SOAK") != "1" {
		t.Skip("the abuse soak runs with MCPHUB_SOAK=1 go test -run 'TestSoakAbuse$' -count=1 -v ./cmd/mcphub/")
	}
	soakAbuseRun(t, soakAbuseConfig{maxSessions: 1000, abandoned: 1000, floodN: 5000, floodBytes: 100 << 10, adds: 160})
}

func TestSoakAbuseShort(t *testing.T) {
	soakAbuseRun(t, soakAbuseConfig{maxSessions: 20, abandoned: 20, floodN: 200, floodBytes: 100 << 10, adds: 8})
}

// soakAbuseFloodServer is an upstream whose flood tool sends n log
// notifications of size bytes that belong to no request, so the hub fans
// them out to the sessions whose log level admits them.
func soakAbuseFloodServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "flood", Version: "1"}, nil)
	type floodIn struct {
		N     int `json:"n"`
		Bytes int `json:"bytes"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "flood"}, func(_ context.Context, req *mcp.CallToolRequest, in floodIn) (*mcp.CallToolResult, any, error) {
		data := strings.Repeat("x", in.Bytes)
		for range in.N {
			if err := req.Session.Log(context.Background(), &mcp.LoggingMessageParams{Level: "info", Logger: "flood", Data: data}); err != nil {
				return nil, nil, err
			}
		}
		return textResult("flooded"), nil, nil
	})
	return s
}

func soakAbuseRun(t *testing.T, cfg soakAbuseConfig) {
	h := newProcHub(t)
	up := startUpstream(t, "flood", upstreamOpts{server: soakAbuseFloodServer()})
	h.write(t, h.registry(fmt.Sprintf("max_sessions = %d\nstream_buffer_bytes = %d", cfg.maxSessions, 8<<20), remoteServer("flood", up.url, "")))
	pprofAddr := freeAddr(t)
	run := h.startReady(20*time.Second, []string{"MCPHUB_PPROF=" + pprofAddr})
	h.waitStatus(t, run, 20*time.Second, "flood is connected", connected("flood"))
	pid := run.pid()
	c := newRawClient(t, h.base())
	t.Logf("started: RSS %s, %d fds", soakAbuseMem(t, pid), soakAbuseFDs(pid))

	// Abandoned sessions: the cap's worth, then as many again.
	start := time.Now()
	for i := range cfg.maxSessions + cfg.abandoned {
		resp, body := c.do(rawReq{method: http.MethodPost, path: "/mcp", accept: acceptBoth, body: initBody})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("initialize %d (cap %d, none in use): HTTP %d %s", i+1, cfg.maxSessions, resp.StatusCode, body)
		}
	}
	st, err := h.status()
	if err != nil {
		t.Fatal(err)
	}
	if st.Sessions != cfg.maxSessions {
		t.Errorf("after %d abandoned sessions: %d live, want the cap, %d", cfg.maxSessions+cfg.abandoned, st.Sessions, cfg.maxSessions)
	}
	t.Logf("%d abandoned sessions in %v: %d live; RSS %s, %d fds", cfg.maxSessions+cfg.abandoned,
		time.Since(start).Round(time.Millisecond), st.Sessions, soakAbuseMem(t, pid), soakAbuseFDs(pid))

	// A never-reading stream, flooded.
	reader, _ := c.initialize("/mcp")
	if status, m := reader.call(2, "logging/setLevel", map[string]any{"level": "debug"}); status != http.StatusOK || m.Error != nil {
		t.Fatalf("logging/setLevel: HTTP %d %v", status, m.Error)
	}
	conn := soakAbuseNeverRead(t, h.addr, reader.sid)
	defer conn.Close()
	caller, _ := c.initialize("/mcp")
	start = time.Now()
	total := cfg.floodN * cfg.floodBytes
	if text := caller.toolOK("flood__flood", map[string]any{"n": cfg.floodN, "bytes": cfg.floodBytes}); text != "flooded" {
		t.Fatalf("flood answered %q", text)
	}
	t.Logf("flooded %d MB to a never-reading stream in %v: %s, live heap after GC %s, %d fds, store %s",
		total>>20, time.Since(start).Round(time.Millisecond), soakAbuseMem(t, pid), soakAbuseHeap(t, pprofAddr), soakAbuseFDs(pid), soakAbuseStore(h.data))
	if status := reader.delete(); status != http.StatusNoContent {
		t.Errorf("DELETE the flooded session: %d", status)
	}
	heap := soakAbuseHeap(t, pprofAddr)
	t.Logf("after deleting the flooded session: %s, live heap after GC %s", soakAbuseMem(t, pid), heap)

	// Concurrent edits.
	missing, extra := soakEdits(t, cfg.adds)
	t.Logf("%d concurrent adds: %d missing from hub.toml %v, %d unexpected %v", cfg.adds, len(missing), missing, len(extra), extra)
	if len(missing)+len(extra) > 0 {
		t.Errorf("hub.toml differs from the expected set: missing %v, unexpected %v", missing, extra)
	}
	if !run.running() {
		t.Fatalf("mcphub serve exited during the soak: %v", run.werr)
	}
}

// soakAbuseNeverRead opens a GET stream of session sid and never reads it.
func soakAbuseNeverRead(t *testing.T, addr, sid string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMCP-Protocol-Version: %s\r\n\r\n", addr, sid, sessionVersion)
	// The status line says the stream is open; nothing after it is read.
	line, err := bufio.NewReader(io.LimitReader(conn, 64)).ReadString('\n')
	if err != nil || !strings.Contains(line, "200") {
		t.Fatalf("GET stream: %q %v", line, err)
	}
	return conn
}

// soakAbuseMem is the process's RSS and peak RSS, from /proc.
func soakAbuseMem(t *testing.T, pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var rss, peak string
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rss = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			peak = strings.TrimSpace(v)
		}
	}
	return rss + " (peak " + peak + ")"
}

// soakAbuseFDs counts the process's open file descriptors.
func soakAbuseFDs(pid int) int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents)
}

// soakAbuseHeap forces a GC in the hub (through its profiler) and returns
// the heap in use after it.
func soakAbuseHeap(t *testing.T, pprofAddr string) string {
	resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		t.Fatalf("heap profile: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# HeapInuse = "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
		}
	}
	return "unknown"
}

// soakAbuseStore is the size of the SQLite files in the data directory.
func soakAbuseStore(dir string) string {
	var total int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	return fmt.Sprintf("%.1f MB", float64(total)/(1<<20))
}
