package hub

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// setVar sets a package variable for one test.
func setVar[T any](t *testing.T, v *T, to T) {
	old := *v
	*v = to
	t.Cleanup(func() { *v = old })
}

// rawPost sends a POST head for /mcp on a new connection, declaring
// length bytes of body and sending only first; the caller sends the rest.
func rawPost(t *testing.T, th *testHub, length int, first string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", th.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", length, first)
	return conn
}

// TestSlowBodyIsCutOff: a body that stops arriving, or trickles in slower
// than minBodyRate, is answered 408 soon after bodyGrace (plus what did
// arrive, at minBodyRate), not after the allowance of the length it
// declared, while the hub keeps serving everyone else.
func TestSlowBodyIsCutOff(t *testing.T) {
	setVar(t, &bodyGrace, 300*time.Millisecond)
	th := routedHub(t)
	for _, tc := range []struct {
		name    string
		trickle bool
	}{{"stalled", false}, {"trickling", true}} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			const length = 1 << 20 // an allowance of 32 s
			conn := rawPost(t, th, length, `{"jsonrpc":"2.0",`)
			if tc.trickle {
				go func() {
					// One byte every 20 ms: 50 B/s, far below the minimum.
					for {
						time.Sleep(20 * time.Millisecond)
						if _, err := conn.Write([]byte(" ")); err != nil {
							return
						}
					}
				}()
			}
			if r := th.send(http.MethodGet, "/healthz", ""); r.status != http.StatusOK {
				t.Errorf("/healthz while a body stalls: %d", r.status)
			}
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer to the slow body: %v", err)
			}
			took := time.Since(start)
			if resp.StatusCode != http.StatusRequestTimeout {
				t.Fatalf("status %d, want 408", resp.StatusCode)
			}
			if took < bodyGrace || took > bodyGrace+3*time.Second {
				t.Errorf("cut off after %s; want soon after bodyGrace (%s), not its %s allowance", took, bodyGrace, bodyAllowance(length))
			}
		})
	}
}

// TestPacedBodyGetsItsTime: a body that keeps minBodyRate is taken however
// long it takes in all, and one that stalls after a good start is cut off
// once the time its bytes earned is spent, not at once and not after the
// allowance of its whole length.
func TestPacedBodyGetsItsTime(t *testing.T) {
	setVar(t, &bodyGrace, 300*time.Millisecond)
	setVar(t, &minBodyRate, 1000)
	th := routedHub(t)
	body := initReq("2025-06-18", `{}`)
	body += strings.Repeat(" ", 3000-len(body))
	t.Run("paced", func(t *testing.T) {
		start := time.Now()
		conn := rawPost(t, th, len(body), "")
		for rest := body; rest != ""; {
			// 2,000 B/s: twice the minimum, for 1.5 s, five times bodyGrace.
			n := min(100, len(rest))
			if _, err := conn.Write([]byte(rest[:n])); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
			time.Sleep(50 * time.Millisecond) // the pace under test, not synchronization
		}
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("a body at twice the minimum rate, %s in all: %v %v", time.Since(start), resp, err)
		}
	})
	t.Run("stalled after a start", func(t *testing.T) {
		start := time.Now()
		rawConn := rawPost(t, th, len(body), body[:1000])
		rawConn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(rawConn), nil)
		if err != nil || resp.StatusCode != http.StatusRequestTimeout {
			t.Fatalf("a body that stalls after 1000 bytes: %v %v, want 408", resp, err)
		}
		earned := bodyAllowance(1000) // 1.3 s
		if took := time.Since(start); took < earned || took >= bodyAllowance(int64(len(body))) {
			t.Errorf("cut off after %s; want between the %s its 1000 bytes earned and the %s of its whole length", took, earned, bodyAllowance(int64(len(body))))
		}
	})
}

// TestBodyDeadlineEndsWithTheBody: once the body is in, its deadline no
// longer applies: a call that runs well past it still gets its answer on
// the same request, as JSON.
func TestBodyDeadlineEndsWithTheBody(t *testing.T) {
	setVar(t, &bodyGrace, 100*time.Millisecond)
	fake := newFake("alpha").setList("tools/list", toolItems("slow")).setHandler(
		func(ctx context.Context, c *fakeCall) (json.RawMessage, error) {
			select {
			case <-time.After(5 * bodyGrace):
				return json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`), nil
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		})
	th := startHub(t, "[servers.alpha]\ncommand = \"x\"\n", map[string]*fakeUpstream{"alpha": fake})
	c := th.connect("/mcp", "2025-11-25", `{}`)
	m := c.call(1, "tools/call", `{"name":"alpha__slow"}`)
	if m.Error != nil || !strings.Contains(string(m.Result), "done") {
		t.Fatalf("a call longer than the body's deadline: %s %v", m.Result, m.Error)
	}
}

// TestStreamWriteDeadline: a client that stops reading its GET stream loses
// the connection once a write has waited past its deadline; the stream is
// detached and kept for a resumption instead of holding the handler (and
// everything queued for it) forever.
func TestStreamWriteDeadline(t *testing.T) {
	setVar(t, &writeTimeout, 200*time.Millisecond)
	th := routedHub(t, func(o *Options) { o.Heartbeat = 100 * time.Millisecond })
	c := th.connect("/mcp", "2025-06-18", `{}`)
	c.get() // read by nobody after its first event
	s := c.session()
	var st *stream
	eventually(t, "the GET stream to attach", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, x := range s.streams {
			if !x.post && x.isAttached() {
				st = x
				return true
			}
		}
		return false
	})
	// Far more than loopback's socket buffers hold.
	big := strings.Repeat("x", 64<<10)
	for i := range 600 {
		th.fakes["alpha"].notify("", jsonrpc.NewNotification("notifications/message",
			json.RawMessage(fmt.Sprintf(`{"level":"info","data":"%d %s"}`, i, big))))
	}
	eventually(t, "the stream of a client that never reads to be let go", func() bool { return !st.isAttached() })
}

// TestReadingStreamOutlivesWriteTimeout: the write deadline bounds each
// write, not the stream: a client that reads keeps its GET stream well past
// writeTimeout and gets what is sent late.
func TestReadingStreamOutlivesWriteTimeout(t *testing.T) {
	setVar(t, &writeTimeout, 100*time.Millisecond)
	th := routedHub(t, func(o *Options) { o.Heartbeat = 50 * time.Millisecond })
	c := th.connect("/mcp", "2025-06-18", `{}`)
	s := c.get()
	for i := range 3 {
		// Each wait spans several heartbeats and write timeouts.
		time.Sleep(10 * writeTimeout)
		th.fakes["alpha"].notify("", logMsg(i))
		m, _ := s.nextMsg()
		if !strings.Contains(string(m.Params), fmt.Sprintf("msg-%d", i)) {
			t.Fatalf("message %d: got %s", i, m.Params)
		}
	}
}

// TestHugeDeclaredBodyGetsNoLongerAllowance: a client that declares a body
// far over max_body_bytes and stalls is cut off soon after bodyGrace, within
// the allowance of the largest body the hub takes, not of what it declared.
func TestHugeDeclaredBodyGetsNoLongerAllowance(t *testing.T) {
	setVar(t, &bodyGrace, 300*time.Millisecond)
	th := startHub(t, "[hub]\nmax_body_bytes = 16384\n"+twoServers, routedFakes())
	start := time.Now()
	conn := rawPost(t, th, 1<<32, `{"jsonrpc":"2.0",`)
	conn.SetReadDeadline(time.Now().Add(bodyAllowance(th.h.servers.registry().Hub.MaxBodyBytes) + 5*time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body declaring 4 GiB after %s: %v", time.Since(start), err)
	}
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("status %d, want 408", resp.StatusCode)
	}
	if took, most := time.Since(start), bodyAllowance(16384); took < bodyGrace || took > most+3*time.Second {
		t.Errorf("cut off after %s; want between bodyGrace (%s) and soon after the %s allowance of the largest body", took, bodyGrace, most)
	}
	if d := bodyAllowance(1 << 62); d < 24*time.Hour || d > 25*time.Hour {
		t.Errorf("the allowance of an absurd size is %s; want it capped at a day", d)
	}
}

// slowPost sends a POST whose body arrives in two parts, pause apart.
func slowPost(t *testing.T, th *testHub, sid, body string, pause time.Duration) reply {
	t.Helper()
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte(body[:10]))
		time.Sleep(pause) // the slowness under test, not synchronization
		pw.Write([]byte(body[10:]))
		pw.Close()
	}()
	req := th.request(context.Background(), http.MethodPost, "/mcp", "", "Mcp-Session-Id", sid)
	req.Body = pr
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := th.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("a POST whose body took %s: %v", pause, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer to a POST whose body took %s: %v", pause, err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// TestSlowBodyStillAnswered: the response's write deadline never runs out
// while a body is still within its allowance: a body slower than
// writeTimeout but within its allowance gets its answer, and one past its
// allowance gets its 408, over HTTP/1.1 and over HTTP/2.
func TestSlowBodyStillAnswered(t *testing.T) {
	setVar(t, &bodyGrace, 2*time.Second)
	setVar(t, &writeTimeout, 300*time.Millisecond)
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("h2=%v", h2), func(t *testing.T) {
			var th *testHub
			if h2 {
				th = routedHubTLS(t)
			} else {
				th = routedHub(t)
			}
			c := th.connect("/mcp", "2025-06-18", `{}`)
			r := slowPost(t, th, c.sid, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"alpha__echo","arguments":{}}}`, 700*time.Millisecond)
			if r.status != http.StatusOK || !strings.Contains(string(r.body), `"id":5`) {
				t.Fatalf("a body within its allowance: %d %s", r.status, r.body)
			}
			if h2 {
				return
			}
			conn := rawPost(t, th, 1000, `{"jsonrpc":"2.0",`)
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil || resp.StatusCode != http.StatusRequestTimeout {
				t.Fatalf("a stalled body whose allowance exceeds writeTimeout: %v %v, want 408", resp, err)
			}
		})
	}
}

// TestHTTP2LongLivedReplies: over HTTP/2 the write deadline is a timer that
// resets the stream; a GET stream that reads and a long call answered as
// JSON both outlive it.
func TestHTTP2LongLivedReplies(t *testing.T) {
	setVar(t, &writeTimeout, 100*time.Millisecond)
	th := routedHubTLS(t, func(o *Options) { o.Heartbeat = 50 * time.Millisecond })
	release := make(chan struct{})
	th.fakes["alpha"].setHandler(func(ctx context.Context, c *fakeCall) (json.RawMessage, error) {
		select {
		case <-release:
			return json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`), nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	})
	c := th.connect("/mcp", "2025-06-18", `{}`)
	s := c.get()
	if s.resp.ProtoMajor != 2 {
		t.Fatalf("the stream went over HTTP/%d", s.resp.ProtoMajor)
	}
	time.AfterFunc(10*writeTimeout, func() { close(release) })
	if m := c.call(1, "tools/call", `{"name":"alpha__slow"}`); m.Error != nil || !strings.Contains(string(m.Result), "done") {
		t.Fatalf("a long call answered as JSON over HTTP/2: %s %v", m.Result, m.Error)
	}
	th.fakes["alpha"].notify("", logMsg(7))
	if m, _ := s.nextMsg(); !strings.Contains(string(m.Params), "msg-7") {
		t.Fatalf("the GET stream after %s: %s", 10*writeTimeout, m.Params)
	}
}

// TestHandlerPanicIsLoggedAsError: net/http reports a handler's panic
// through the server's ErrorLog; it reaches the hub's log as an error,
// visible at the default level.
func TestHandlerPanicIsLoggedAsError(t *testing.T) {
	logged := make(chan string, 16)
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		logged <- string(p)
		return len(p), nil
	}), &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom in handler") }), log)
	srv.Start()
	defer srv.Close()
	if resp, err := http.Get(srv.URL); err == nil {
		resp.Body.Close()
	}
	select {
	case line := <-logged:
		if !strings.Contains(line, "level=ERROR") || !strings.Contains(line, "boom in handler") {
			t.Fatalf("the panic was logged as %q", line)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a handler panic left nothing in an info-level log")
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
