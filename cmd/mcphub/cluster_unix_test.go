//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/store/pgtest"
)

// teamHub is replicas of `mcphub serve` on one PostgreSQL store, each with
// its own home, data directory and port, behind a balancer with no
// stickiness: it sends each request to the next replica in turn, except
// that pick, when set, may choose.
type teamHub struct {
	t    *testing.T
	reps []*procHub
	runs []*hubRun
	lb   *httptest.Server
	next atomic.Int64
	// pick chooses the replica for a request by its body (-1: in turn).
	pick func(body []byte) int
	// hits counts the requests each replica got from the balancer; down
	// are the replicas its health check has taken out of the rotation.
	mu   sync.Mutex
	hits []int
	down map[int]bool
}

func startTeam(t *testing.T, n int, servers string) *teamHub {
	t.Helper()
	return startTeamWith(t, n, "", "", servers)
}

// startTeamWith is startTeam with more [hub] keys, when token is set auth
// on with that token (MCPHUB_TOKEN), and more environment, on every
// replica.
func startTeamWith(t *testing.T, n int, hubKeys, token, servers string, env ...string) *teamHub {
	t.Helper()
	return startTeamOn(t, pgtest.URL(t), n, hubKeys, token, servers, env...)
}

// startTeamOn is startTeamWith on the PostgreSQL store at u.
func startTeamOn(t *testing.T, u string, n int, hubKeys, token, servers string, env ...string) *teamHub {
	t.Helper()
	th := &teamHub{t: t, hits: make([]int, n), down: map[int]bool{}}
	if token != "" {
		hubKeys += "\nauth = \"token\"\n"
		env = append(env, "MCPHUB_TOKEN="+token)
	}
	for i := range n {
		ph := newProcHub(t)
		ph.storeURL, ph.token = u, token
		ph.write(t, ph.registry(hubKeys, servers))
		th.reps = append(th.reps, ph)
		th.runs = append(th.runs, ph.start(env, "--store", u, "--replica", fmt.Sprintf("r%d", i)))
	}
	for i, ph := range th.reps {
		ph.waitStatus(t, th.runs[i], 30*time.Second, "the replica connects its servers and sees the others", func(st *api.Status) error {
			if servers != "" && len(st.Servers) == 0 {
				return errors.New("no server listed yet")
			}
			for _, s := range st.Servers {
				if err := connected(s.Name)(st); err != nil {
					return err
				}
			}
			if st.Cluster == nil || len(st.Cluster.Replicas) != n {
				return fmt.Errorf("cluster %+v", st.Cluster)
			}
			return nil
		})
	}
	targets := make([]*url.URL, n)
	for i, ph := range th.reps {
		targets[i], _ = url.Parse(ph.base())
	}
	// Like nginx's proxy_next_upstream error: a replica that does not take
	// the connection (it died) is skipped for the next one.
	th.lb = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		i := -1
		if th.pick != nil {
			i = th.pick(body)
		}
		for range n {
			th.mu.Lock()
			for i < 0 || th.down[i] {
				i = int(th.next.Add(1)-1) % n
			}
			th.hits[i]++
			th.mu.Unlock()
			unreached := false
			target := targets[i]
			proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) }, FlushInterval: -1,
				ErrorHandler: func(http.ResponseWriter, *http.Request, error) { unreached = true }}
			r.Body = io.NopCloser(bytes.NewReader(body))
			proxy.ServeHTTP(w, r)
			if !unreached || r.Context().Err() != nil {
				return
			}
			i = -1
		}
		http.Error(w, "no replica answers", http.StatusBadGateway)
	}))
	t.Cleanup(th.lb.Close)
	return th
}

// owner is the index of the live replica holding sessions, by the cluster
// status of replica from.
func (th *teamHub) owner(from int) (int, *api.ClusterStatus) {
	th.t.Helper()
	st, err := th.reps[from].status()
	if err != nil || st.Cluster == nil {
		th.t.Fatalf("status of r%d: %v", from, err)
	}
	for _, r := range st.Cluster.Replicas {
		if r.Sessions > 0 && r.Alive {
			var i int
			fmt.Sscanf(r.Name, "r%d", &i)
			return i, st.Cluster
		}
	}
	return -1, st.Cluster
}

// A session's requests land on every replica and are served as by one hub:
// the SDK client's calls, a sampling request answered through a replica
// that does not hold the session, and, after the replica holding it is
// killed, the next call, taken over by another.
func TestTeamHubAnyRequestOnAnyReplica(t *testing.T) {
	up := startUpstream(t, "up", upstreamOpts{})
	th := startTeam(t, 3, remoteServer("up", up.url, `connect_timeout = "10s"`))
	sampled := atomic.Int32{}
	s := connectSDK(t, th.lb.URL+"/mcp", sdkOpts{client: &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			sampled.Add(1)
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test", Content: &mcp.TextContent{Text: "yes"}}, nil
		}}})
	for i := range 9 {
		if got, err := s.call("up__echo", map[string]any{"text": fmt.Sprint("n", i)}); err != nil || got != fmt.Sprint("up:n", i) {
			t.Fatalf("call %d through the balancer: %q, %v", i, got, err)
		}
	}
	th.mu.Lock()
	hits := append([]int(nil), th.hits...)
	th.mu.Unlock()
	for i, n := range hits {
		if n == 0 {
			t.Errorf("replica r%d got no request (hits %v): the balancer did not spread them", i, hits)
		}
	}
	owner, cl := th.owner(0)
	if owner < 0 || cl.RegistriesDiffer {
		t.Fatalf("cluster status: %+v", cl)
	}

	// The client's answer to the sampling request goes to a replica that
	// does not hold the session.
	var answeredAt atomic.Int64
	answeredAt.Store(-1)
	th.pick = func(body []byte) int {
		var m struct {
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method == "" && m.Result != nil {
			i := (owner + 1) % 3
			answeredAt.Store(int64(i))
			return i
		}
		return -1
	}
	if got, err := s.call("up__sample", map[string]any{"prompt": "ok?"}); err != nil || got != "sampled:yes" {
		t.Fatalf("sample through the balancer: %q, %v", got, err)
	}
	if sampled.Load() != 1 || answeredAt.Load() == int64(owner) || answeredAt.Load() < 0 {
		t.Errorf("sampling answered %d times, at r%d (the session is on r%d)", sampled.Load(), answeredAt.Load(), owner)
	}
	th.pick = nil

	// The replica holding the session dies; the session goes on.
	th.runs[owner].kill9(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if got, err := s.callText(ctx, "up__echo", map[string]any{"text": "after"}); err != nil || got != "up:after" {
		t.Fatalf("call after r%d was killed: %q, %v", owner, got, err)
	}
	other := (owner + 1) % 3
	next, cl := th.owner(other)
	if next < 0 || next == owner {
		t.Errorf("after the kill the session is on r%d (it was on r%d): %+v", next, owner, cl)
	}
	for _, r := range cl.Replicas {
		if r.Name == fmt.Sprint("r", owner) && r.Alive {
			t.Errorf("the killed replica is shown alive: %+v", r)
		}
	}
}

// A replica that is frozen (SIGSTOP) is taken for dead: its session moves
// and is served by another. When it thaws (SIGCONT) it learns it was
// fenced, lets go, and the session stays where it went.
func TestTeamHubFrozenReplicaIsFenced(t *testing.T) {
	up := startUpstream(t, "up", upstreamOpts{})
	th := startTeam(t, 2, remoteServer("up", up.url, `connect_timeout = "10s"`))
	s := connectSDK(t, th.lb.URL+"/mcp", sdkOpts{})
	if _, err := s.call("up__echo", map[string]any{"text": "a"}); err != nil {
		t.Fatal(err)
	}
	owner, _ := th.owner(0)
	other := 1 - owner
	pid := th.runs[owner].pid()
	// The balancer's health check takes the frozen replica out (a frozen
	// process's kernel still accepts connections, and a request sent there
	// waits for it to thaw); requests that reached it before stay queued.
	th.mu.Lock()
	th.down[owner] = true
	th.mu.Unlock()
	if err := signalPID(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	thawed := false
	defer func() {
		if !thawed {
			signalPID(pid, syscall.SIGCONT)
		}
	}()
	th.reps[other].waitStatus(t, th.runs[other], 30*time.Second, "the frozen replica's session moves", func(st *api.Status) error {
		if st.Sessions != 1 {
			return fmt.Errorf("r%d holds %d sessions", other, st.Sessions)
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if got, err := s.callText(ctx, "up__echo", map[string]any{"text": "b"}); err != nil || got != "up:b" {
		t.Fatalf("call while r%d is frozen: %q, %v", owner, got, err)
	}
	// A request that reached the frozen replica waits in its socket; once
	// thawed, it must not be answered from the session it no longer holds,
	// but by the replica that holds it now.
	conn, err := net.Dial("tcp", th.reps[owner].addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req, _ := http.NewRequest(http.MethodPost, th.reps[owner].base()+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"queued"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", s.ID())
	req.Header.Set("MCP-Protocol-Version", sessionVersion)
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	signalPID(pid, syscall.SIGCONT)
	thawed = true
	th.mu.Lock()
	th.down[owner] = false
	th.mu.Unlock()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatalf("the request queued at the frozen replica: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "up:queued") {
		t.Errorf("the request queued at the frozen replica: HTTP %d %s", resp.StatusCode, body)
	}
	if !strings.Contains(th.runs[other].out.String(), "rpc_id=77") {
		t.Errorf("the request queued at the thawed replica was not served by r%d, which holds the session", other)
	}
	eventually(t, 30*time.Second, "the thawed replica says it was fenced", func() error {
		if !strings.Contains(th.runs[owner].out.String(), "taken for dead") {
			return fmt.Errorf("no word of it in its log yet")
		}
		return nil
	})
	st := th.reps[owner].waitStatus(t, th.runs[owner], 30*time.Second, "the thawed replica beats again, holding nothing", func(st *api.Status) error {
		if st.Sessions != 0 {
			return fmt.Errorf("r%d holds %d sessions", owner, st.Sessions)
		}
		for _, r := range st.Cluster.Replicas {
			if r.Self && !r.Alive {
				return fmt.Errorf("not alive yet")
			}
		}
		return nil
	})
	for _, r := range st.Cluster.Replicas {
		if r.Name == fmt.Sprint("r", other) && r.Sessions != 1 {
			t.Errorf("r%d holds %d sessions after the thaw, want the session still there", other, r.Sessions)
		}
	}
	for i := range 4 {
		if got, err := s.callText(ctx, "up__echo", map[string]any{"text": fmt.Sprint("c", i)}); err != nil || got != fmt.Sprint("up:c", i) {
			t.Fatalf("call %d after the thaw: %q, %v", i, got, err)
		}
	}
}

// A call relayed by a replica that is SIGKILLed midway is taken over by
// another: it resumes the upstream session the dead replica kept (the
// upstream keeps its streams' events), so the client, resuming its POST
// stream through the balancer, gets every one of the 60 progress
// notifications exactly once, in order, and the result.
func TestTeamHubTakesOverACallOfAKilledReplica(t *testing.T) {
	up := startUpstream(t, "up", upstreamOpts{resumable: true})
	th := startTeam(t, 3, remoteServer("up", up.url, `connect_timeout = "10s"`))
	rc := newRawClient(t, th.lb.URL)
	s, _ := rc.initialize("/mcp")
	const n = 60
	resp, err := s.post(context.Background(), rpcRequest(5, "tools/call",
		progressCall("up__slow_progress", map[string]any{"n": n, "delay_ms": 40, "tag": "k"}, "tok")))
	if err != nil || resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("tools/call: %v %v", resp, err)
	}
	var got []sseEvent
	first := follow(resp.Body)
	for len(got) < 20 {
		got = append(got, first.await(t, 20*time.Second, "the first progress", func(sseEvent) bool { return true }))
	}
	owner, _ := th.owner(0)
	th.runs[owner].kill9(t)
	got = append(got, first.drain(5*time.Second)...)
	first.body.Close()
	last := ""
	for _, ev := range got {
		if ev.ID != "" {
			last = ev.ID
		}
	}
	// Resume through the balancer until the stream's end, as a client does
	// (a 503 while the dead replica is not yet taken for dead says retry).
	eventually(t, 60*time.Second, "the resumed stream reaches the call's result", func() error {
		r, err := s.get(context.Background(), last)
		if err != nil {
			return err
		}
		if r.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			return fmt.Errorf("GET with Last-Event-ID %s: HTTP %d %s", last, r.StatusCode, b)
		}
		rest := follow(r.Body).drain(30 * time.Second)
		r.Body.Close()
		for _, ev := range rest {
			got = append(got, ev)
			if ev.ID != "" {
				last = ev.ID
			}
			if ev.Msg != nil && ev.Msg.IsResponse() {
				return nil
			}
		}
		return fmt.Errorf("the stream ended after %d events without the result", len(got))
	})
	checkProgressOnce(t, got, n, "across the kill")
	if c := up.calls.Load(); c != 1 {
		t.Errorf("the upstream ran the tool %d times, want once (a taken-over call is resumed, never replayed)", c)
	}
	resumedBy := -1
	for i, r := range th.runs {
		if i != owner && strings.Contains(r.out.String(), "calls_resumed=1") {
			resumedBy = i
		}
	}
	if resumedBy < 0 {
		t.Errorf("no surviving replica says it resumed the call")
	}
}

// The official TypeScript SDK client's call with 60 progress notifications,
// through the balancer, keeps every one exactly once and gets the result
// while the replica relaying it is SIGKILLed: the SDK resumes its stream
// with Last-Event-ID, and the replica taking over resumes the upstream's.
func TestTeamHubTSClientThroughAKill(t *testing.T) {
	node, modules := tsSDK(t)
	script, err := filepath.Abs(filepath.Join("testdata", "team_ts_client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	up := startUpstream(t, "up", upstreamOpts{resumable: true})
	th := startTeam(t, 3, remoteServer("up", up.url, `connect_timeout = "10s"`))

	cmd := exec.Command(node, script, th.lb.URL+"/mcp", "60")
	cmd.Env = append(th.reps[0].env(), "MCPHUB_NODE_MODULES="+modules)
	var stderr logBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	next, _ := tsSteps(t, cmd, stdout, &stderr, nil)
	next("progress20")
	owner, _ := th.owner(0)
	th.runs[owner].kill9(t)
	r := next("done")
	for i, v := range r.Progress {
		if v != float64(i+1) {
			t.Fatalf("progress %v: want 1..60, each once, in order", r.Progress)
		}
	}
	if len(r.Progress) != 60 || !strings.HasPrefix(r.Result, "done 60") {
		t.Errorf("%d progress notifications, result %q; want 60 and the tool's result", len(r.Progress), r.Result)
	}
	if c := up.calls.Load(); c != 1 {
		t.Errorf("the upstream ran the tool %d times, want once", c)
	}
}

// pgGate is a TCP proxy in front of the test PostgreSQL: cut drops every
// connection and refuses new ones, as a store that went away; open lets
// them through again.
type pgGate struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
}

func newPGGate(t *testing.T, rawURL string) (*pgGate, string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &pgGate{ln: ln, target: u.Host, conns: map[net.Conn]struct{}{}}
	t.Cleanup(func() { ln.Close(); g.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			g.mu.Lock()
			if g.closed {
				g.mu.Unlock()
				c.Close()
				continue
			}
			up, err := net.Dial("tcp", g.target)
			if err != nil {
				g.mu.Unlock()
				c.Close()
				continue
			}
			g.conns[c], g.conns[up] = struct{}{}, struct{}{}
			g.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	u.Host = ln.Addr().String()
	return g, u.String()
}

func (g *pgGate) cut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	for c := range g.conns {
		c.Close()
	}
	clear(g.conns)
}

func (g *pgGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = false
}

// The store goes away while a call streams its progress: /readyz fails
// and new sessions are refused (503) naming the store as the cause; the
// call's events wait in memory; when the store is back, every one of them
// reaches the client, once, with the result, and all are stored: a resume
// from the first replays the whole stream, without a gap.
func TestTeamHubStoreOutage(t *testing.T) {
	gate, gated := newPGGate(t, pgtest.URL(t))
	up := startUpstream(t, "up", upstreamOpts{})
	h := newProcHub(t)
	h.storeURL = gated
	h.write(t, h.registry("", remoteServer("up", up.url, `connect_timeout = "10s"`)))
	run := h.start(nil, "--store", gated, "--replica", "solo")
	h.waitStatus(t, run, 30*time.Second, "up connects", connected("up"))
	rc := newRawClient(t, h.base())
	s, _ := rc.initialize("/mcp")
	const n = 40
	resp, err := s.post(context.Background(), rpcRequest(9, "tools/call",
		progressCall("up__slow_progress", map[string]any{"n": n, "delay_ms": 50, "tag": "o"}, "tok")))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("tools/call: %v %v", resp, err)
	}
	stream := follow(resp.Body)
	defer resp.Body.Close()
	var got []sseEvent
	for len(got) < 6 {
		got = append(got, stream.await(t, 20*time.Second, "progress before the outage", func(sseEvent) bool { return true }))
	}
	gate.cut()
	eventually(t, 30*time.Second, "/readyz fails while the store is away", func() error {
		code, st, err := readyzStatus(h.base())
		if err != nil {
			return err
		}
		if code != http.StatusServiceUnavailable || st.StoreError == "" {
			return fmt.Errorf("/readyz %d, store_error %q", code, st.StoreError)
		}
		if strings.Contains(st.StoreError, "Hunter") {
			t.Errorf("store_error shows a password: %s", st.StoreError)
		}
		return nil
	})
	status, m := rc.session("/mcp", "").call(1, "initialize", map[string]any{
		"protocolVersion": sessionVersion, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "late", "version": "0"}})
	if status != http.StatusServiceUnavailable || !strings.Contains(string(m.Result), "store") {
		t.Errorf("initialize while the store is away: HTTP %d %s; want 503 naming the store", status, m.Encode())
	}
	gate.open()
	for {
		ev := stream.await(t, 60*time.Second, "the rest of the call after the store came back", func(sseEvent) bool { return true })
		got = append(got, ev)
		if ev.Msg != nil && ev.Msg.IsResponse() {
			break
		}
	}
	checkProgressOnce(t, got, n, "live")
	// Everything was stored: a resume from the priming event replays it all.
	first := ""
	for _, ev := range got {
		if ev.ID != "" {
			first = ev.ID
			break
		}
	}
	replay := s.resume(first, 20*time.Second).drain(10 * time.Second)
	all := append([]sseEvent(nil), got[:1]...)
	checkProgressOnce(t, append(all, replay...), n, "replayed from the store")
	h.waitStatus(t, run, 30*time.Second, "/readyz is well again", func(st *api.Status) error {
		if st.StoreError != "" {
			return fmt.Errorf("store_error %q", st.StoreError)
		}
		return nil
	})
}

// readyzStatus fetches /readyz once, with its HTTP status.
func readyzStatus(base string) (int, *api.Status, error) {
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var st api.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return resp.StatusCode, nil, err
	}
	return resp.StatusCode, &st, nil
}

// mcphub status on any replica shows the cluster: every replica, live, with
// its sessions; and says so when one serves another registry.
func TestTeamHubStatus(t *testing.T) {
	up := startUpstream(t, "up", upstreamOpts{})
	servers := remoteServer("up", up.url, `connect_timeout = "10s"`)
	th := startTeam(t, 2, servers)
	connectSDK(t, th.lb.URL+"/mcp", sdkOpts{})
	code, out, errOut := th.reps[1].cli(t, nil, "status")
	if code != 0 {
		t.Fatalf("status: exit %d: %s%s", code, out, errOut)
	}
	for _, want := range []string{"team hub: this is replica r1", "r0 ", "r1 (this)", "live", "SESSIONS"} {
		if !strings.Contains(out, want) {
			t.Errorf("status does not show %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "different registries") {
		t.Errorf("status says the registries differ when they do not:\n%s", out)
	}
	// r1's registry gains a server: the replicas now differ, and say so.
	th.reps[1].write(t, th.reps[1].registry("", servers, remoteServer("extra", up.url, "")))
	th.reps[0].waitStatus(t, th.runs[0], 30*time.Second, "r0 sees the registries differ", func(st *api.Status) error {
		if !st.Cluster.RegistriesDiffer {
			return fmt.Errorf("registries_differ is false")
		}
		return nil
	})
	if _, out, _ = th.reps[0].cli(t, nil, "status"); !strings.Contains(out, "different registries") {
		t.Errorf("status does not say the registries differ:\n%s", out)
	}
}

// A thousand sessions opened through the balancer spread over the
// replicas, and each is served wherever its next request lands.
func TestTeamHubThousandSessions(t *testing.T) {
	up := startUpstream(t, "up", upstreamOpts{})
	th := startTeam(t, 3, remoteServer("up", up.url, `connect_timeout = "10s"`))
	const n = 1000
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	defer client.CloseIdleConnections()
	post := func(sid, body string) (string, int, error) {
		req, _ := http.NewRequest(http.MethodPost, th.lb.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", sessionVersion)
		}
		resp, err := client.Do(req)
		if err != nil {
			return "", 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.Header.Get("Mcp-Session-Id"), resp.StatusCode, nil
	}
	ids := make([]string, n)
	var failed atomic.Int64
	work := func(f func(i int) error) {
		var wg sync.WaitGroup
		next := atomic.Int64{}
		for range 16 {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
					if err := f(i); err != nil {
						if failed.Add(1) <= 5 {
							t.Errorf("session %d: %v", i, err)
						}
					}
				}
			})
		}
		wg.Wait()
	}
	work(func(i int) error {
		sid, code, err := post("", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"many","version":"0"}}}`, sessionVersion))
		if err != nil || code != http.StatusOK || sid == "" {
			return fmt.Errorf("initialize: HTTP %d %v", code, err)
		}
		ids[i] = sid
		if _, code, err = post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil || code != http.StatusAccepted {
			return fmt.Errorf("initialized: HTTP %d %v", code, err)
		}
		return nil
	})
	work(func(i int) error {
		if _, code, err := post(ids[i], `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); err != nil || code != http.StatusOK {
			return fmt.Errorf("tools/list: HTTP %d %v", code, err)
		}
		return nil
	})
	if failed.Load() > 0 {
		t.Fatalf("%d of %d sessions failed", failed.Load(), n)
	}
	st, err := th.reps[0].status()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, r := range st.Cluster.Replicas {
		total += r.Sessions
		if r.Sessions < n/6 {
			t.Errorf("replica %s holds %d of %d sessions: not spread", r.Name, r.Sessions, n)
		}
	}
	if total != n {
		t.Errorf("the replicas hold %d sessions, want %d", total, n)
	}
}

// A stdio server with replicas = "one" runs one process cluster-wide: every
// replica's calls reach the same process, through the replica that runs
// it. When that replica dies, another takes the server and starts it.
func TestTeamHubOneProcessForTheCluster(t *testing.T) {
	th := startTeam(t, 3, childServer(t, "up", childOpts{lines: "replicas = \"one\"\nconnect_timeout = \"20s\""}))
	s := connectSDK(t, th.lb.URL+"/mcp", sdkOpts{})
	pids := map[int]bool{}
	for range 6 {
		pids[s.state(t, "up__state").PID] = true
	}
	if len(pids) != 1 {
		t.Fatalf("calls through the balancer reached processes %v, want one", pids)
	}
	runsOn := -1
	for i, ph := range th.reps {
		st, err := ph.status()
		if err != nil {
			t.Fatal(err)
		}
		up := findServer(st, "up")
		switch {
		case up.PID > 0 && runsOn < 0:
			runsOn = i
		case up.PID > 0:
			t.Errorf("replicas r%d and r%d both run a process of up", runsOn, i)
		case !strings.HasPrefix(up.Transport, "via replica"):
			t.Errorf("r%d: up is %+v, want it reached via the replica that runs it", i, up)
		}
	}
	if runsOn < 0 {
		t.Fatal("no replica runs up's process")
	}
	if _, out, _ := th.reps[(runsOn+1)%3].cli(t, nil, "status"); !strings.Contains(out, fmt.Sprintf("server up runs once for the team, on replica r%d", runsOn)) {
		t.Errorf("status does not say which replica runs up:\n%s", out)
	}
	var old int
	for pid := range pids {
		old = pid
	}
	th.runs[runsOn].kill9(t)
	eventually(t, 60*time.Second, "another replica runs up, and every call reaches it", func() error {
		seen := map[int]bool{}
		for range 4 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			text, err := s.callText(ctx, "up__state", map[string]any{})
			cancel()
			if err != nil {
				return err
			}
			var st fakeState
			if err := json.Unmarshal([]byte(text), &st); err != nil {
				return err
			}
			seen[st.PID] = true
		}
		if len(seen) != 1 || seen[old] {
			return fmt.Errorf("processes %v (the old one was %d)", seen, old)
		}
		return nil
	})
}

// checkProgressOnce checks a call's stream: progress 1..n, each once, in
// order, then its result, not an error.
func checkProgressOnce(t *testing.T, evs []sseEvent, n int, what string) {
	t.Helper()
	var values []int
	var result *jsonrpc.Message
	for _, ev := range evs {
		if p, ok := progressOf(ev.Msg); ok {
			values = append(values, int(p.Progress))
		} else if ev.Msg != nil && ev.Msg.IsResponse() {
			result = ev.Msg
		}
	}
	for i, v := range values {
		if v != i+1 {
			t.Fatalf("%s: progress %v, want 1..%d each once, in order", what, values, n)
		}
	}
	if len(values) != n || result == nil || result.Error != nil || !strings.Contains(string(result.Result), "done") {
		t.Errorf("%s: %d progress notifications, result %v; want %d and the tool's result", what, len(values), result, n)
	}
}

// A 2026-07-28 client's call of a session-era server that asks for
// sampling is held by the replica that got it (input_required with a
// requestState); the client's retry with inputResponses, landing on another
// replica, is forwarded to that one and completes the call.
func TestTeamHubParkedCallRetriedElsewhere(t *testing.T) {
	up := startUpstream(t, "up", upstreamOpts{})
	th := startTeam(t, 3, remoteServer("up", up.url, `connect_timeout = "10s"`))
	th.pick = func(body []byte) int {
		if strings.Contains(string(body), `"requestState"`) {
			return 1
		}
		return 0
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/clientInfo":{"name":"modern","version":"0"}}`
	call := func(extra string) map[string]json.RawMessage {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__sample","arguments":{"prompt":"ok?"},` + meta + extra + `}}`
		req, _ := http.NewRequest(http.MethodPost, th.lb.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "up__sample")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m struct {
			Result map[string]json.RawMessage `json:"result"`
			Error  json.RawMessage            `json:"error"`
		}
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, &m); err != nil || m.Result == nil {
			t.Fatalf("tools/call: HTTP %d %s", resp.StatusCode, b)
		}
		return m.Result
	}
	first := call("")
	var state string
	json.Unmarshal(first["requestState"], &state)
	var asks map[string]struct {
		Method string `json:"method"`
	}
	json.Unmarshal(first["inputRequests"], &asks)
	if string(first["resultType"]) != `"input_required"` || state == "" || len(asks) != 1 {
		t.Fatalf("first round: %v", first)
	}
	var key string
	for k := range asks {
		key = k
	}
	stateJSON, _ := json.Marshal(state)
	keyJSON, _ := json.Marshal(key)
	res := call(`,"requestState":` + string(stateJSON) + `,"inputResponses":{` + string(keyJSON) +
		`:{"role":"assistant","model":"m","content":{"type":"text","text":"yes"}}}`)
	if !strings.Contains(string(res["content"]), "sampled:yes") {
		t.Errorf("the retry through another replica: %v", res)
	}
	th.mu.Lock()
	hits := append([]int(nil), th.hits...)
	th.mu.Unlock()
	if hits[0] != 1 || hits[1] != 1 {
		t.Errorf("requests by replica %v: want the call on r0 and its retry on r1", hits)
	}
}
