package main

// Scale: a real `mcphub serve` process over a registry of N servers that all
// point at one stateless Streamable HTTP upstream in this test process (the
// harness's fake server, with no session state, so N connections cost the
// upstream nothing but their requests). Each run reports how long the hub
// takes until every server is connected, until its CPU use settles (under
// 5% of one core for a whole second, read from /proc/PID/stat), its RSS
// then, the median latency of initialize, ping and the first page of
// tools/list on /mcp, and how long SIGTERM takes to stop it.
//
// TestScaleSmall (200 servers) runs by default with bounds a slow 2-core
// machine meets. The full table (100, 1,000 and 10,000 servers) runs only
// when asked, without -race for realistic figures:
//
//	MCPHUB_SCALE=1 go test -run 'TestScale$' -count=1 -v ./cmd/mcphub/
//
// MCPHUB_SCALE_N="100,1000" picks other sizes, and MCPHUB_SCALE_PPROF=addr
// starts the hub's profiler on addr (see pprof.go) for a look while it runs.
// Every identifier here starts with "scale"; the hub process, the upstream
// and the raw client are the harness's.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/api"
)

// scaleQuiet is the CPU share under which the hub counts as idle, and
// scaleQuietFor how long it must stay under it.
const (
	scaleQuiet    = 0.05
	scaleQuietFor = time.Second
)

// scaleClockTick is the unit of utime and stime in /proc/PID/stat
// (sysconf(_SC_CLK_TCK), 100 on every Linux port Go supports).
const scaleClockTick = 10 * time.Millisecond

// scaleSamples is how many requests each latency median is taken over.
const scaleSamples = 20

// scaleLimits bound one run; a run that passes one fails the test.
type scaleLimits struct {
	connect time.Duration // until every server is connected
	settle  time.Duration // from then until the CPU is quiet
	stop    time.Duration // from SIGTERM until the process exits
}

// scaleFigures are one run's measurements.
type scaleFigures struct {
	n         int
	ready     time.Duration // start → /readyz answers
	connect   time.Duration // start → every server connected
	settle    time.Duration // start → the start of the first quiet second
	cpu       time.Duration // CPU the hub used until it settled
	rss       int64         // bytes, after settling
	initMed   time.Duration
	pingMed   time.Duration
	listMed   time.Duration
	listItems int // tools on the first page
	stop      time.Duration
}

func (f scaleFigures) row() string {
	ms := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
	}
	return fmt.Sprintf("| %6d | %7s | %8s | %8s | %8s | %7.0f | %7s | %7s | %9s | %7s |",
		f.n, ms(f.ready), ms(f.connect), ms(f.settle), ms(f.cpu), float64(f.rss)/(1<<20), ms(f.initMed), ms(f.pingMed), ms(f.listMed), ms(f.stop))
}

const scaleHeader = "|      N | ready   | connect  | settle   | CPU      | RSS MiB | init    | ping    | tools/list| SIGTERM |\n" +
	"|        | ms      | ms       | ms       | ms       |         | ms med  | ms med  | ms med    | ms      |"

func TestScale(t *testing.T) {
	if os.Getenv("MCPHUB_SCALE") != "1" {
		t.Skip("the scale table runs with MCPHUB_SCALE=1 go test -run 'TestScale$' -count=1 -v ./cmd/mcphub/")
	}
	sizes := []int{100, 1000, 10000}
	if s := os.Getenv("MCPHUB_SCALE_N"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				t.Fatalf("MCPHUB_SCALE_N=%q: want sizes like 100,1000", s)
			}
			sizes = append(sizes, n)
		}
	}
	var rows []string
	for _, n := range sizes {
		lim := scaleLimits{connect: 10 * time.Minute, settle: 10 * time.Minute, stop: 5 * time.Minute}
		f := scaleRun(t, n, lim)
		rows = append(rows, f.row())
		t.Logf("%d servers:\n%s\n%s", n, scaleHeader, f.row())
	}
	t.Logf("scale:\n%s\n%s", scaleHeader, strings.Join(rows, "\n"))
}

// TestScaleSmall runs 200 servers with bounds that hold on a slow machine:
// the hub connects them, goes quiet within 10 s, answers initialize and
// ping, and stops within 5 s of SIGTERM.
func TestScaleSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a hub process over 200 servers")
	}
	f := scaleRun(t, 200, scaleLimits{connect: 30 * time.Second, settle: 10 * time.Second, stop: 5 * time.Second})
	t.Logf("\n%s\n%s", scaleHeader, f.row())
}

// scaleRun starts a hub over n servers, measures it, and stops it with
// SIGTERM.
func scaleRun(t *testing.T, n int, lim scaleLimits) scaleFigures {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("no /proc to read the hub's CPU and memory from: %v", err)
	}
	up := scaleUpstream(t)
	h := newProcHub(t)
	servers := make([]string, n)
	for i := range servers {
		servers[i] = remoteServer(fmt.Sprintf("s%05d", i), up.url, `connect_timeout = "60s"`)
	}
	h.write(t, h.registry("", servers...))
	var env []string
	if addr := os.Getenv("MCPHUB_SCALE_PPROF"); addr != "" {
		env = append(env, "MCPHUB_PPROF="+addr)
	}
	f := scaleFigures{n: n}
	selfBefore, _ := scaleCPU(os.Getpid())
	started := time.Now()
	r := h.start(env)
	pid := r.pid()
	f.ready = scaleWaitConnected(t, h, r, n, lim.connect).Sub(started)
	f.connect = time.Since(started)
	quietAt, cpu := scaleSettle(t, r, pid, lim.settle)
	f.settle, f.cpu = quietAt.Sub(started), cpu
	f.rss = scaleRSS(t, pid)
	f.initMed, f.pingMed, f.listMed, f.listItems = scaleLatencies(t, h)
	if f.listItems == 0 {
		t.Errorf("the first page of tools/list on /mcp is empty with %d servers connected", n)
	}
	sent := time.Now()
	if err := termPID(pid); err != nil {
		t.Fatalf("SIGTERM %d: %v", pid, err)
	}
	if !r.waitExit(lim.stop) {
		t.Fatalf("mcphub serve over %d servers did not stop within %s of SIGTERM", n, lim.stop)
	}
	f.stop = time.Since(sent)
	selfAfter, _ := scaleCPU(os.Getpid())
	t.Logf("%d servers: requests the upstream got: %s; this test process (the upstream and the client) used %s of CPU",
		n, up.methodCounts(), selfAfter-selfBefore)
	return f
}

// scaleUpstream serves the harness's fake server over stateless Streamable
// HTTP until the test ends. It counts the requests it gets by method, so a
// run can show what each connection cost the upstream.
func scaleUpstream(t *testing.T) *httpUpstream {
	t.Helper()
	u := &httpUpstream{fake: newFake("up", false)}
	u.stop = make(chan struct{})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return u.srv },
		&mcp.StreamableHTTPOptions{Stateless: true, Logger: slog.New(slog.DiscardHandler)})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			u.count(r)
		}
		handler.ServeHTTP(w, r)
	}))
	u.url = ts.URL + "/mcp"
	t.Cleanup(func() {
		close(u.stop)
		ts.CloseClientConnections()
		ts.Close()
	})
	return u
}

// scaleWaitConnected polls /readyz until n servers are connected, and
// returns when it first answered; /readyz over thousands of servers is
// large, so each poll may take a while and polls are spaced.
func scaleWaitConnected(t *testing.T, h *procHub, r *hubRun, n int, within time.Duration) (answered time.Time) {
	t.Helper()
	deadline := time.Now().Add(within)
	hc := &http.Client{Timeout: 60 * time.Second}
	last := "no answer yet"
	for time.Now().Before(deadline) {
		if !r.running() {
			t.Fatalf("mcphub serve exited while %d servers connected: %v", n, r.werr)
		}
		st, err := scaleReadyz(hc, h.base())
		if err == nil && answered.IsZero() {
			answered = time.Now()
		}
		if err == nil {
			up := 0
			for _, s := range st.Servers {
				if s.State == api.StateConnected && s.Tools > 0 {
					up++
				}
			}
			if up == n && len(st.Servers) == n {
				return answered
			}
			last = fmt.Sprintf("%d of %d connected", up, n)
		} else {
			last = err.Error()
		}
		// A poll with a deadline: nothing signals "all connected". Each
		// poll costs the hub a status of every server, so a large hub is
		// asked less often.
		time.Sleep(200 * time.Millisecond * time.Duration(max(1, n/2000)))
	}
	t.Fatalf("%d servers were not all connected within %s: %s", n, within, last)
	return answered
}

// scaleReadyz fetches /readyz with a client whose timeout suits a large
// answer.
func scaleReadyz(hc *http.Client, base string) (*api.Status, error) {
	resp, err := hc.Get(base + "/readyz")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/readyz: HTTP %d: %s", resp.StatusCode, short(body))
	}
	var st api.Status
	if err := json.Unmarshal(body, &st); err != nil {
		return nil, fmt.Errorf("/readyz: %v", err)
	}
	return &st, nil
}

// scaleStatFields are the fields of /proc/PID/stat after the command name,
// from the state (field 3) on.
func scaleStatFields(pid int) ([]string, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: %q", pid, stat)
	}
	return strings.Fields(string(stat[i+1:])), nil
}

// scaleCPU is the CPU time a process has used: utime and stime (fields 14
// and 15).
func scaleCPU(pid int) (time.Duration, error) {
	f, err := scaleStatFields(pid)
	if err != nil {
		return 0, err
	}
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat has %d fields", pid, len(f))
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return time.Duration(u+s) * scaleClockTick, nil
}

// scaleSettle samples the hub's CPU every 100 ms until it used under
// scaleQuiet of one core over a whole scaleQuietFor, and returns when that
// quiet second began and the CPU used until then. Sampling is the only way
// to see CPU use; the samples are the deadline-bounded poll.
func scaleSettle(t *testing.T, r *hubRun, pid int, within time.Duration) (quietAt time.Time, used time.Duration) {
	t.Helper()
	type sample struct {
		at  time.Time
		cpu time.Duration
	}
	var samples []sample
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if !r.running() {
			t.Fatalf("mcphub serve exited while settling: %v", r.werr)
		}
		c, err := scaleCPU(pid)
		if err != nil {
			t.Fatal(err)
		}
		now := sample{time.Now(), c}
		samples = append(samples, now)
		// The newest window of at least scaleQuietFor.
		for i := len(samples) - 1; i >= 0; i-- {
			if span := now.at.Sub(samples[i].at); span >= scaleQuietFor {
				if float64(now.cpu-samples[i].cpu) < scaleQuiet*float64(span) {
					return samples[i].at, samples[i].cpu
				}
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	last := samples[len(samples)-1]
	t.Fatalf("the hub's CPU did not settle within %s (%s used so far)", within, last.cpu)
	return time.Time{}, 0
}

// scaleRSS is a process's resident memory in bytes (VmRSS).
func scaleRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("/proc/%d/status has no VmRSS", pid)
	return 0
}

// scaleLatencies measures the medians of initialize (each session is then
// deleted), ping and the first page of tools/list on /mcp.
func scaleLatencies(t *testing.T, h *procHub) (initMed, pingMed, listMed time.Duration, listItems int) {
	t.Helper()
	c := newRawClient(t, h.base())
	var inits, pings, lists []time.Duration
	for range scaleSamples {
		s := c.session("/mcp", "")
		start := time.Now()
		status, m := s.call(int(c.ids.Add(1)), "initialize", map[string]any{
			"protocolVersion": sessionVersion, "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "scale", "version": "0"},
		})
		inits = append(inits, time.Since(start))
		if status != http.StatusOK || m.Error != nil || s.sid == "" {
			t.Fatalf("initialize: HTTP %d, session %q: %s", status, s.sid, m.Encode())
		}
		if code := s.delete(); code != http.StatusOK && code != http.StatusNoContent {
			t.Fatalf("DELETE the session: HTTP %d", code)
		}
	}
	s, _ := c.initialize("/mcp")
	defer s.delete()
	for range scaleSamples {
		start := time.Now()
		status, m, body := s.request("ping", nil)
		pings = append(pings, time.Since(start))
		if status != http.StatusOK || m.Error != nil {
			t.Fatalf("ping: HTTP %d: %s", status, short([]byte(body)))
		}
	}
	for range scaleSamples {
		start := time.Now()
		status, m, body := s.request("tools/list", nil)
		lists = append(lists, time.Since(start))
		if status != http.StatusOK || m.Error != nil {
			t.Fatalf("tools/list: HTTP %d: %s", status, short([]byte(body)))
		}
		var res struct {
			Tools []json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(m.Result, &res); err != nil {
			t.Fatalf("tools/list result: %v", err)
		}
		listItems = len(res.Tools)
	}
	return scaleMedian(inits), scaleMedian(pings), scaleMedian(lists), listItems
}

func scaleMedian(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
