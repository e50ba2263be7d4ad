package hub

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/sse"
)

// The ways a connection may be closed to make room, in the order
// leastUseful takes them; evictNone: it is serving a request.
const (
	evictIdle = iota
	evictHead
	evictBody
	evictNewHead
	evictNone
)

// evictable says how c may be closed to make room.
func (c *trackedConn) evictable(now time.Time) int {
	switch c.list {
	case listIdle:
		return evictIdle
	case listHead:
		if now.Sub(c.since) >= headEvictAfter {
			return evictHead
		}
		return evictNewHead
	case listBody:
		return evictBody
	}
	return evictNone
}

// limitedHub is a hub served by a server of its own, whose connection caps
// the test can look into, and whose log it can read.
type limitedHub struct {
	*testHub
	conns *connLimiter
	logs  *lockedBuffer
}

// lockedBuffer is a log any goroutine may write.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startLimited starts a hub over twoServers with more [hub] keys, served
// (over TLS with HTTP/2 when tls is set) by newServer.
func startLimited(t *testing.T, hubKeys string, tls bool) *limitedHub {
	t.Helper()
	th := startHubOn(t, false, "[hub]\n"+hubKeys+"\n"+twoServers, routedFakes())
	logs := &lockedBuffer{}
	srv, conns := newServer(th.h, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = srv
	if tls {
		ts.EnableHTTP2 = true
		ts.StartTLS()
	} else {
		ts.Start()
	}
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	own := *th
	own.srv = &testServer{ts}
	return &limitedHub{testHub: &own, conns: conns, logs: logs}
}

// dial opens a raw connection to the hub, closed at the end of the test.
func (lh *limitedHub) dial(t *testing.T) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", lh.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// slowHead opens a connection that sends part of a request head and stops.
func (lh *limitedHub) slowHead(t *testing.T) net.Conn {
	conn := lh.dial(t)
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl")
	return conn
}

// slowBody opens a connection that sends a whole head declaring a body of
// 10,000 bytes, and only its first bytes.
func (lh *limitedHub) slowBody(t *testing.T) net.Conn {
	conn := lh.dial(t)
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 10000\r\n\r\n{\"jsonrpc\":\"2.0\",")
	return conn
}

// ways counts the tracked connections by how they may be closed.
func (lh *limitedHub) ways() map[int]int {
	lh.conns.mu.Lock()
	defer lh.conns.mu.Unlock()
	n := map[int]int{}
	now := time.Now()
	for _, c := range lh.conns.conns {
		n[c.evictable(now)]++
	}
	return n
}

// oneConn returns a client of the hub that keeps to one connection, so a
// test knows which connection its requests take.
func (lh *limitedHub) oneConn(t *testing.T) *http.Client {
	tr := lh.srv.Client().Transport.(*http.Transport).Clone()
	tr.MaxConnsPerHost = 1
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// do sends a request through cl and reads its whole answer.
func (lh *limitedHub) do(t *testing.T, cl *http.Client, method, sid, body string) reply {
	t.Helper()
	req := lh.request(context.Background(), method, "/mcp", body, "Mcp-Session-Id", sid)
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatalf("%s /mcp: %v", method, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s /mcp: %v", method, err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// session initializes a session through cl and opens its GET stream, whose
// messages arrive on the channel until the end of the test; took is how
// long initialize took.
func (lh *limitedHub) session(t *testing.T, cl *http.Client) (took time.Duration, msgs <-chan string) {
	t.Helper()
	start := time.Now()
	r := lh.do(t, cl, http.MethodPost, "", initReq("2025-06-18", `{}`))
	took = time.Since(start)
	sid := r.header.Get("Mcp-Session-Id")
	if r.status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	if r := lh.do(t, cl, http.MethodPost, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", r.status, r.body)
	}
	resp, err := cl.Do(lh.request(context.Background(), http.MethodGet, "/mcp", "", "Mcp-Session-Id", sid))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /mcp: %v %v", resp, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	out := make(chan string, 16)
	go func() {
		defer close(out)
		rd := sse.NewReader(resp.Body, 0)
		for {
			ev, err := rd.Next()
			if err != nil {
				return
			}
			if ev.Data != "" {
				out <- ev.Data
			}
		}
	}()
	return took, out
}

// wantClosed checks that the hub has closed conn: a read ends at once with
// EOF or a reset, not an answer and not a timeout.
func wantClosed(t *testing.T, conn net.Conn, what string) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, err := io.ReadFull(conn, make([]byte, 1))
	var ne net.Error
	switch {
	case err == nil || n > 0:
		t.Errorf("%s: the hub answered instead of closing the connection", what)
	case errors.As(err, &ne) && ne.Timeout():
		t.Errorf("%s: still open", what)
	}
}

// TestSlowlorisMakesRoom: with the per-address cap filled by connections
// that send part of a head or part of a body and stall, each newcomer's
// initialize is answered at once, and the slow ones are closed to make
// room: the slow heads first, oldest first, then the stalled bodies. The
// newcomers hold GET streams, so none of them is closed for the next one.
func TestSlowlorisMakesRoom(t *testing.T) {
	setVar(t, &headEvictAfter, 100*time.Millisecond)
	lh := startLimited(t, "max_connections_per_address = 6", false)
	// One at a time, so that oldest first is the order they were opened in.
	var slow []net.Conn
	for i := range 3 {
		slow = append(slow, lh.slowHead(t))
		eventually(t, fmt.Sprintf("slow head %d counted", i), func() bool {
			w := lh.ways()
			return w[evictNewHead]+w[evictHead] == i+1
		})
	}
	for i := range 3 {
		slow = append(slow, lh.slowBody(t))
		eventually(t, fmt.Sprintf("stalled body %d read", i), func() bool { return lh.ways()[evictBody] == i+1 })
	}
	eventually(t, "the slow heads past headEvictAfter", func() bool { return lh.ways()[evictHead] == 3 })
	for i := range slow {
		if took, _ := lh.session(t, lh.oneConn(t)); took > time.Second {
			t.Errorf("newcomer %d: initialize took %s with the cap full of slow connections", i, took)
		}
		wantClosed(t, slow[i], fmt.Sprintf("slow connection %d, after newcomer %d", i, i))
	}
	if total, from := lh.conns.counts("127.0.0.1"); total != 6 || from != 6 {
		t.Errorf("counted %d connections, %d from 127.0.0.1; want the 6 newcomers", total, from)
	}
	if !strings.Contains(lh.logs.String(), "closed_to_make_room=1") {
		t.Errorf("closing connections at the cap left no line in the log:\n%s", lh.logs)
	}
}

// TestBodyFloodKeepsNewcomers: when stalled bodies arrive faster than any
// of them could be called slow, a newcomer still takes the place of one,
// and keeps it while its own head is on its way: connections just
// accepted are closed only when nothing else can be.
func TestBodyFloodKeepsNewcomers(t *testing.T) {
	setVar(t, &headEvictAfter, time.Minute) // however slowly the test runs
	lh := startLimited(t, "max_connections_per_address = 4", false)
	var bodies []net.Conn
	for i := range 4 {
		bodies = append(bodies, lh.slowBody(t))
		eventually(t, fmt.Sprintf("stalled body %d read", i), func() bool { return lh.ways()[evictBody] == i+1 })
	}
	quiet := lh.dial(t) // a newcomer that has sent nothing yet
	eventually(t, "the newcomer counted", func() bool { return lh.ways()[evictNewHead] == 1 })
	wantClosed(t, bodies[0], "the oldest stalled body, for the newcomer")
	for i := range 3 {
		bodies = append(bodies, lh.slowBody(t))
		wantClosed(t, bodies[i+1], fmt.Sprintf("stalled body %d, for a later one", i+1))
		eventually(t, fmt.Sprintf("the later stalled body %d read", i), func() bool { return lh.ways()[evictBody] == 3 })
	}
	fmt.Fprintf(quiet, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	quiet.SetReadDeadline(time.Now().Add(waitFor))
	if resp, err := http.ReadResponse(bufio.NewReader(quiet), nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the newcomer, after 3 more stalled bodies: %v %v", resp, err)
	}
}

// TestNothingToEvict: when every connection at the cap is serving a
// request (GET streams), a newcomer is closed at once, with one warning
// however many follow, and the streams carry on. Over HTTP/2 the streams
// share one connection.
func TestNothingToEvict(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("h2=%v", h2), func(t *testing.T) {
			lh := startLimited(t, fmt.Sprintf("max_connections_per_address = %d", map[bool]int{false: 2, true: 1}[h2]), h2)
			// Over HTTP/2 both sessions share one connection.
			cl := lh.oneConn(t)
			var held []<-chan string
			for range 2 {
				if !h2 {
					cl = lh.oneConn(t)
				}
				_, msgs := lh.session(t, cl)
				held = append(held, msgs)
			}
			eventually(t, "every connection serving a GET stream", func() bool {
				w, want := lh.ways(), map[bool]int{false: 2, true: 1}[h2]
				return w[evictNone] == want && w[evictIdle]+w[evictHead]+w[evictBody]+w[evictNewHead] == 0
			})
			for i := range 3 {
				wantClosed(t, lh.dial(t), fmt.Sprintf("newcomer %d", i))
			}
			if got := strings.Count(lh.logs.String(), "refused new client connections"); got != 1 {
				t.Errorf("%d warnings for 3 refused connections; want 1:\n%s", got, lh.logs)
			}
			if !strings.Contains(lh.logs.String(), "refused=1") {
				t.Errorf("the warning does not count the refused connection:\n%s", lh.logs)
			}
			lh.fakes["alpha"].notify("", logMsg(7))
			for i, msgs := range held {
				select {
				case m := <-msgs:
					if !strings.Contains(m, "msg-7") {
						t.Errorf("stream %d after the refusals: %s", i, m)
					}
				case <-time.After(waitFor):
					t.Errorf("stream %d: nothing within %s after the refusals", i, waitFor)
				}
			}
		})
	}
}

// TestTotalConnectionCap: the total cap holds across addresses, the oldest
// of the least useful connections goes first, and a registry reload lowers
// the cap for the next connection.
func TestTotalConnectionCap(t *testing.T) {
	lh := startLimited(t, "max_connections = 4", false)
	var slow []net.Conn
	for i := range 4 {
		slow = append(slow, lh.slowHead(t))
		eventually(t, fmt.Sprintf("slow head %d counted", i), func() bool {
			total, _ := lh.conns.counts("127.0.0.1")
			return total == i+1
		})
	}
	if r := lh.send(http.MethodGet, "/healthz", ""); r.status != http.StatusOK {
		t.Fatalf("/healthz at the total cap: %d", r.status)
	}
	wantClosed(t, slow[0], "the oldest slow head")
	if total, from := lh.conns.counts("127.0.0.1"); total != 4 || from != 4 {
		t.Errorf("counted %d connections, %d from 127.0.0.1; want 4 and 4", total, from)
	}
	// From another address: the first newcomer takes the place of the
	// kept-alive connection of /healthz, the second that of the oldest
	// slow head.
	for i := range 2 {
		other, err := net.DialTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, lh.srv.Listener.Addr().(*net.TCPAddr))
		if err != nil {
			t.Logf("no second loopback address here (%v): the cap across addresses is not checked", err)
			break
		}
		t.Cleanup(func() { other.Close() })
		eventually(t, fmt.Sprintf("connection %d from 127.0.0.2 counted", i), func() bool {
			_, from := lh.conns.counts("127.0.0.2")
			return from == i+1
		})
		if i == 1 {
			wantClosed(t, slow[1], "the oldest slow head, for a client at another address")
			if total, from := lh.conns.counts("127.0.0.1"); total != 4 || from != 2 {
				t.Errorf("counted %d connections, %d from 127.0.0.1; want 4 and 2", total, from)
			}
		}
	}
	lh.h.Apply(parseRegistry(t, "[hub]\nmax_connections = 2\n"+twoServers))
	if r := lh.send(http.MethodGet, "/healthz", ""); r.status != http.StatusOK {
		t.Fatalf("/healthz after lowering the cap: %d", r.status)
	}
	if total, _ := lh.conns.counts(""); total > 2 {
		t.Errorf("%d connections counted after the cap was lowered to 2", total)
	}
	for i, conn := range slow[2:] {
		wantClosed(t, conn, fmt.Sprintf("slow head %d after the cap was lowered", i+2))
	}
}

// TestLeastUseful: the order connections are closed in to make room.
func TestLeastUseful(t *testing.T) {
	setVar(t, &headEvictAfter, time.Second)
	type conn struct {
		state            http.ConnState
		handlers, bodies int
		age              time.Duration // how long ago it entered its phase
	}
	idleNew := conn{state: http.StateIdle, age: time.Second}
	idleOld := conn{state: http.StateIdle, age: time.Minute}
	headNew := conn{state: http.StateNew, age: 2 * time.Second}
	headOld := conn{state: http.StateNew, age: time.Minute}
	bodyOld := conn{state: http.StateActive, handlers: 1, bodies: 1, age: time.Minute}
	bodyNew := conn{state: http.StateActive, handlers: 1, bodies: 1, age: time.Millisecond}
	justIn := conn{state: http.StateNew, age: 100 * time.Millisecond}
	justInOlder := conn{state: http.StateNew, age: 500 * time.Millisecond}
	serving := conn{state: http.StateActive, handlers: 1, age: time.Hour}
	// Over HTTP/2: one stream reads its body, another is served.
	mixed := conn{state: http.StateActive, handlers: 2, bodies: 1, age: time.Hour}
	// Over HTTP/2: the client reset its stream, the handler still runs.
	reset := conn{state: http.StateIdle, handlers: 1, age: time.Hour}
	// Over HTTP/1: the handler has returned, its answer is being sent.
	finishing := conn{state: http.StateActive, age: time.Hour}
	for _, tc := range []struct {
		name  string
		conns []conn
		want  int // the index of the one closed first; -1 for none
	}{
		{"idle before heads and bodies", []conn{bodyOld, headOld, idleNew}, 2},
		{"oldest idle first", []conn{idleNew, idleOld}, 1},
		{"slow heads before bodies", []conn{bodyOld, headNew}, 1},
		{"oldest head first", []conn{headNew, headOld}, 1},
		{"oldest body first", []conn{bodyNew, bodyOld}, 1},
		{"any body before a connection just accepted", []conn{justInOlder, bodyNew}, 1},
		{"oldest of those just accepted last", []conn{justIn, justInOlder, serving}, 1},
		{"requests being served stay", []conn{serving, mixed, reset, finishing}, -1},
		{"never the newcomer", nil, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Now()
			l := newConnLimiter(slog.New(slog.DiscardHandler), defaultConnLimits)
			tracked := make([]*trackedConn, len(tc.conns))
			// Added oldest first, as they would have been.
			order := make([]int, len(tc.conns))
			for i := range order {
				order[i] = i
			}
			slices.SortFunc(order, func(a, b int) int { return int(tc.conns[b].age - tc.conns[a].age) })
			for _, i := range order {
				c := tc.conns[i]
				tracked[i] = &trackedConn{nc: &testConn{}, addr: "a", state: c.state, handlers: c.handlers, bodies: c.bodies, list: listNone}
				l.add(tracked[i], now.Add(-c.age))
			}
			newcomer := &trackedConn{nc: &testConn{}, addr: "a", state: http.StateNew, list: listNone}
			l.add(newcomer, now)
			for _, g := range []*group{&l.all, l.byAddr["a"]} {
				got := g.leastUseful(newcomer, now)
				if tc.want < 0 && got != nil || tc.want >= 0 && got != tracked[tc.want] {
					t.Errorf("chose %+v, want %d", got, tc.want)
				}
			}
		})
	}
}

// testConn is a distinct connection that is never used.
type testConn struct{ net.Conn }

// TestBodyMarkEndsWithTheBody: a request counts as waiting for its body
// only while its handler reads it, not once the body is in.
func TestBodyMarkEndsWithTheBody(t *testing.T) {
	lh := startLimited(t, "", false)
	c := lh.connect("/mcp", "2025-06-18", `{}`)
	started, release := make(chan struct{}), make(chan struct{})
	lh.fakes["alpha"].setHandler(func(ctx context.Context, _ *fakeCall) (json.RawMessage, error) {
		close(started)
		<-release
		return json.RawMessage(`{"content":[]}`), nil
	})
	done := c.postAsync(rpc(3, "tools/call", `{"name":"alpha__slow"}`), "Accept", "application/json")
	select {
	case <-started:
	case <-time.After(waitFor):
		t.Fatal("the call did not reach the upstream")
	}
	if w := lh.ways(); w[evictBody] != 0 || w[evictNone] != 1 {
		t.Errorf("a call running after its body was read: %v; want it never closed", w)
	}
	close(release)
	if r := <-done; r.status != http.StatusOK {
		t.Fatalf("the call: %d %s", r.status, r.body)
	}
}

// FuzzAddrKey: an IP address and port counts as its address alone, the
// same for an IPv4 address written as IPv6; anything else as it is.
func FuzzAddrKey(f *testing.F) {
	for _, s := range []string{"127.0.0.1:80", "[::1]:443", "[::ffff:10.0.0.1]:1", "[fe80::1%eth0]:9", "@", "", "x:y", "/tmp/sock"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k := addrKey(fakeAddr(s))
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			if k != s {
				t.Errorf("addrKey(%q) = %q; want it as it is", s, k)
			}
			return
		}
		a, err := netip.ParseAddr(k)
		if err != nil || a != ap.Addr().Unmap().WithZone("") {
			t.Errorf("addrKey(%q) = %q; want the address %s", s, k, ap.Addr().Unmap().WithZone(""))
		}
	})
}

type fakeAddr string

func (a fakeAddr) Network() string { return "tcp" }
func (a fakeAddr) String() string  { return string(a) }
