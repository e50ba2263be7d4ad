package hub

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
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
// than minBodyRate, is answered 408 once its allowance (bodyGrace plus its
// length at minBodyRate) is spent, while the hub keeps serving everyone
// else.
func TestSlowBodyIsCutOff(t *testing.T) {
	setVar(t, &bodyGrace, 300*time.Millisecond)
	th := routedHub(t)
	for _, tc := range []struct {
		name    string
		trickle bool
	}{{"stalled", false}, {"trickling", true}} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			const length = 10000
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
			allowed := bodyGrace + length*time.Second/time.Duration(minBodyRate)
			if took < allowed || took > allowed+3*time.Second {
				t.Errorf("cut off after %s; want soon after its %s allowance", took, allowed)
			}
		})
	}
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
