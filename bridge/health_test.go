package bridge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// healthConfig is a remote server whose health checks run on the fake
// clock: pinged after 2 s of silence, given 1 s to answer.
func healthConfig() Config {
	return Config{Name: "linear", Client: client.Config{URL: remoteURL}, PingInterval: 2 * time.Second, PingTimeout: time.Second}
}

// expectTimer takes the next timer set and fails unless it is want.
func expectTimer(t *testing.T, clk *fakeClock, want time.Duration, what string) {
	t.Helper()
	if got := clk.nextTimer(t); got != want {
		t.Fatalf("%s: timer of %v, want %v", what, got, want)
	}
}

// expectPing takes the next request on c and fails unless it is a ping.
func expectPing(t *testing.T, c *fakeConn) *fakeCall {
	t.Helper()
	fc := c.nextCall(t)
	if fc.method != "ping" || len(fc.params) != 0 {
		t.Fatalf("request %s %s, want a ping without params", fc.method, fc.params)
	}
	return fc
}

// expectLost waits for the server's next report and fails unless it says
// the connection was lost with an error containing want; it then waits
// until the lost connection is closed.
func expectLost(t *testing.T, h *harness, c *fakeConn, want string) Status {
	t.Helper()
	st := h.nextChange()
	if st.State != StateRestarting || !strings.Contains(st.LastError, want) || st.Restarts != 1 {
		t.Fatalf("status after the failed check = %+v, want restarting, 1 restart, last error containing %q", st, want)
	}
	recv(t, c.Done(), "the lost connection to be closed")
	return st
}

// TestPingOnIdle checks that a remote connection is pinged only once it
// has been silent for PingInterval (a sign of life pushes the ping back),
// that an answered ping keeps it, and that a ping left unanswered for
// PingTimeout ends it; the link then reconnects.
func TestPingOnIdle(t *testing.T) {
	h := startHarness(t, healthConfig(), nil)
	c := h.connect()
	expectTimer(t, h.clk, 2*time.Second, "after connecting")

	// Activity 1 s in: when the timer fires the server has been silent
	// for only 1 s, so the check waits 1 s more instead of pinging.
	h.clk.advance(time.Second)
	c.cfg.OnActivity()
	h.clk.advance(time.Second)
	expectTimer(t, h.clk, time.Second, "after activity")
	c.noMoreCalls(t)

	h.clk.advance(time.Second)
	expectTimer(t, h.clk, time.Second, "the ping's timeout")
	expectPing(t, c).answer(`{}`)
	expectTimer(t, h.clk, 2*time.Second, "after an answered ping")
	if st := h.srv.Status(); st.State != StateConnected || st.Restarts != 0 {
		t.Fatalf("status after an answered ping = %+v, want connected", st)
	}

	h.clk.advance(2 * time.Second)
	expectTimer(t, h.clk, time.Second, "the second ping's timeout")
	p := expectPing(t, c)
	h.clk.advance(time.Second)
	expectLost(t, h, c, "the server stopped answering: no answer to a ping within 1s")
	if !errors.Is(context.Cause(p.ctx), errPingTimeout) {
		t.Errorf("the unanswered ping's context ended with %v, want the ping timeout", context.Cause(p.ctx))
	}
	d := h.clk.nextTimer(t)
	if !withinJitter(d, 500*time.Millisecond) {
		t.Errorf("wait before reconnecting = %v, want the first backoff step", d)
	}
	h.clk.advance(d)
	h.connect()
}

// TestPingBudgetSpreadsIdlePings: Servers sharing a PingBudget take turns
// for their idle pings; a connection whose check falls due while another
// has the slot waits for the next one.
func TestPingBudgetSpreadsIdlePings(t *testing.T) {
	cfg := healthConfig()
	cfg.PingBudget = NewPingBudget(5*time.Second, 1)
	h := startHarness(t, cfg, nil)
	c := h.connect()
	expectTimer(t, h.clk, 2*time.Second, "after connecting")
	if d := cfg.PingBudget.reserve(h.clk.Now()); d != 0 { // another server pings now
		t.Fatalf("a free budget made the first ping wait %v", d)
	}
	h.clk.advance(2 * time.Second)
	expectTimer(t, h.clk, 3*time.Second, "waiting for the budget's next slot")
	c.noMoreCalls(t)
	h.clk.advance(3 * time.Second)
	expectTimer(t, h.clk, time.Second, "the ping's timeout")
	expectPing(t, c).answer(`{}`)
	expectTimer(t, h.clk, 2*time.Second, "after an answered ping")

	// A burst of 3 go at once; then slots are one spacing apart, never in
	// the past; a budget unused for a while has its burst again.
	b := NewPingBudget(50*time.Millisecond, 3)
	t0 := time.Unix(1000, 0)
	for i, want := range []time.Duration{0, 0, 0, 50 * time.Millisecond, 100 * time.Millisecond} {
		if got := b.reserve(t0); got != want {
			t.Errorf("reservation %d = %v, want %v", i, got, want)
		}
	}
	for i := range 3 {
		if got := b.reserve(t0.Add(time.Second)); got != 0 {
			t.Errorf("reservation %d of a rested budget = %v, want 0", i, got)
		}
	}
}

// TestSlowPingWithActivityKeepsConnection checks that a ping left
// unanswered does not end a connection on which the server sent something
// meanwhile: it is busy, not gone.
func TestSlowPingWithActivityKeepsConnection(t *testing.T) {
	h := startHarness(t, healthConfig(), nil)
	c := h.connect()
	expectTimer(t, h.clk, 2*time.Second, "after connecting")
	h.clk.advance(2 * time.Second)
	expectTimer(t, h.clk, time.Second, "the ping's timeout")
	expectPing(t, c)
	h.clk.advance(500 * time.Millisecond)
	c.cfg.OnActivity()
	h.clk.advance(500 * time.Millisecond)
	// The next check is due 2 s after the activity, 1.5 s from now.
	expectTimer(t, h.clk, 1500*time.Millisecond, "after the unanswered ping")
	if st := h.srv.Status(); st.State != StateConnected {
		t.Errorf("status = %+v, want connected", st)
	}
}

// TestPingOnTransportFailure checks that a transport failure the client
// reports brings the ping forward to at once, and what the answer means:
// a network error (on the ping and on its one retry) or an expired session
// ends the connection, a JSON-RPC error answer (a server that does not
// know ping) counts as alive.
func TestPingOnTransportFailure(t *testing.T) {
	refused := errors.New("POST http://upstream.invalid/mcp: dial tcp 127.0.0.1:1: connect: connection refused")
	tests := []struct {
		name    string
		replies []func(fc *fakeCall) // one per ping sent
		lost    string               // "" when the connection must stay
	}{
		{"network error, twice", []func(fc *fakeCall){
			func(fc *fakeCall) { fc.fail(errors.New("POST http://upstream.invalid/mcp: EOF")) },
			func(fc *fakeCall) { fc.fail(refused) },
		}, "the server stopped answering: ping: " + refused.Error()},
		{"network error, then answered", []func(fc *fakeCall){
			func(fc *fakeCall) { fc.fail(errors.New("POST http://upstream.invalid/mcp: EOF")) },
			func(fc *fakeCall) { fc.answer(`{}`) },
		}, ""},
		{"session gone", []func(fc *fakeCall){
			func(fc *fakeCall) {
				fc.fail(fmt.Errorf("%w: re-initializing failed: HTTP 503", client.ErrSessionExpired))
			},
		}, client.ErrSessionExpired.Error()},
		{"session gone, renewal refused", []func(fc *fakeCall){
			func(fc *fakeCall) {
				fc.fail(fmt.Errorf("%w: re-initializing failed: %w", client.ErrSessionExpired, httpStatus(400)))
			},
		}, client.ErrSessionExpired.Error()},
		{"method not found", []func(fc *fakeCall){
			func(fc *fakeCall) { fc.fail(jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found")) },
		}, ""},
		// An HTTP answer without a JSON-RPC body is an answer all the
		// same: the server is there.
		{"HTTP 400", []func(fc *fakeCall){func(fc *fakeCall) { fc.fail(httpStatus(400)) }}, ""},
		{"HTTP 404 without a session", []func(fc *fakeCall){func(fc *fakeCall) { fc.fail(httpStatus(404)) }}, ""},
		{"HTTP 405", []func(fc *fakeCall){func(fc *fakeCall) { fc.fail(httpStatus(405)) }}, ""},
		{"HTTP 401 without a Bearer challenge", []func(fc *fakeCall){func(fc *fakeCall) { fc.fail(httpStatus(401)) }}, ""},
		{"HTTP 403", []func(fc *fakeCall){func(fc *fakeCall) { fc.fail(httpStatus(403)) }}, ""},
		{"HTTP 500", []func(fc *fakeCall){func(fc *fakeCall) { fc.fail(httpStatus(500)) }}, ""},
		// A gateway's errors speak for a server behind it that is gone.
		{"HTTP 502, twice", []func(fc *fakeCall){
			func(fc *fakeCall) { fc.fail(httpStatus(502)) },
			func(fc *fakeCall) { fc.fail(httpStatus(502)) },
		}, "HTTP 502"},
		{"HTTP 503, twice", []func(fc *fakeCall){
			func(fc *fakeCall) { fc.fail(httpStatus(503)) },
			func(fc *fakeCall) { fc.fail(httpStatus(503)) },
		}, "HTTP 503"},
		{"HTTP 504, then answered", []func(fc *fakeCall){
			func(fc *fakeCall) { fc.fail(httpStatus(504)) },
			func(fc *fakeCall) { fc.answer(`{}`) },
		}, ""},
		{"answered", []func(fc *fakeCall){func(fc *fakeCall) { fc.answer(`{}`) }}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startHarness(t, healthConfig(), nil)
			c := h.connect()
			expectTimer(t, h.clk, 2*time.Second, "after connecting")
			c.cfg.OnTransportError(errors.New("the notification stream ended"))
			expectTimer(t, h.clk, time.Second, "the ping's timeout")
			for _, reply := range tt.replies {
				reply(expectPing(t, c))
			}
			if tt.lost != "" {
				expectLost(t, h, c, tt.lost)
				return
			}
			// Alive: the next check is a full interval away, and the
			// connection is still the one in use.
			expectTimer(t, h.clk, 2*time.Second, "after the ping")
			if st := h.srv.Status(); st.State != StateConnected || st.LastError != "" {
				t.Errorf("status after the ping = %+v, want connected", st)
			}
			select {
			case <-c.Done():
				t.Errorf("the connection was closed although the server answered")
			default:
			}
		})
	}
}

// httpStatus is the error a ping gets for an HTTP answer of status without
// a JSON-RPC body.
func httpStatus(status int) error {
	return &client.HTTPError{Method: "POST", URL: remoteURL, Status: status}
}

// TestTransportFailuresWhilePinging checks that reports arriving while a
// ping is out are settled by its answer: they cost no ping each.
func TestTransportFailuresWhilePinging(t *testing.T) {
	h := startHarness(t, healthConfig(), nil)
	c := h.connect()
	expectTimer(t, h.clk, 2*time.Second, "after connecting")
	c.cfg.OnTransportError(errors.New("reset"))
	expectTimer(t, h.clk, time.Second, "the ping's timeout")
	fc := expectPing(t, c)
	for range 5 {
		c.cfg.OnTransportError(errors.New("reset again"))
	}
	fc.answer(`{}`)
	expectTimer(t, h.clk, 2*time.Second, "after the ping")
	// The next ping is the idle one, a full interval later.
	h.clk.advance(2 * time.Second)
	expectTimer(t, h.clk, time.Second, "the idle ping's timeout")
	expectPing(t, c).answer(`{}`)
	expectTimer(t, h.clk, 2*time.Second, "after the idle ping")
	c.noMoreCalls(t)
}

// TestStdioIsNotPinged checks that a stdio server gets no health check:
// no hooks, no timer, no ping; its exit alone tells that it is gone.
func TestStdioIsNotPinged(t *testing.T) {
	cfg := healthConfig()
	cfg.Client = client.Config{Command: "fake-server"}
	h := startHarness(t, cfg, nil)
	c := h.connect()
	if c.cfg.OnActivity != nil || c.cfg.OnTransportError != nil {
		t.Errorf("a stdio connection got health hooks")
	}
	c.drop(&client.ExitError{Status: "exit status 1"})
	if st := h.nextChange(); st.State != StateRestarting {
		t.Fatalf("state after the exit = %q, want restarting", st.State)
	}
	// The first timer since connecting is the backoff's: no check ran.
	if d := h.clk.nextTimer(t); !withinJitter(d, 500*time.Millisecond) {
		t.Errorf("first timer = %v, want the first backoff step (no ping timer)", d)
	}
	c.noMoreCalls(t)
}

// TestBackoffDelayWithin pins the remote servers' delays: the same curve as
// delay, from Initial doubling, spread by 25% either way, but never past
// Max.
func TestBackoffDelayWithin(t *testing.T) {
	b := Backoff{}.withDefaults()
	lowest := func(time.Duration) time.Duration { return 0 }
	highest := func(n time.Duration) time.Duration { return n - 1 }
	tests := []struct {
		attempt       int
		short, longer time.Duration
	}{
		{0, 375 * time.Millisecond, 625 * time.Millisecond},
		{1, 750 * time.Millisecond, 1250 * time.Millisecond},
		{4, 6 * time.Second, 10 * time.Second},
		{5, 12 * time.Second, 20 * time.Second},
		{6, 22500 * time.Millisecond, 30 * time.Second}, // 32 s capped at 30
		{7, 22500 * time.Millisecond, 30 * time.Second},
		{1000, 22500 * time.Millisecond, 30 * time.Second},
	}
	for _, tt := range tests {
		if got := b.delayWithin(tt.attempt, lowest); got != tt.short {
			t.Errorf("attempt %d: shortest delay %v, want %v", tt.attempt, got, tt.short)
		}
		if got := b.delayWithin(tt.attempt, highest); got != tt.longer {
			t.Errorf("attempt %d: longest delay %v, want %v", tt.attempt, got, tt.longer)
		}
	}
}

// TestRemoteBackoffHasNoCliff drives a remote server that stays down with
// the default policy: the waits climb from 0.5 s to 30 s and stay there,
// never the one-minute slow retry a crash-looping stdio server waits, and
// it is never called crash-looping: it has not connected yet, so it shows
// failed.
func TestRemoteBackoffHasNoCliff(t *testing.T) {
	h := startHarness(t, Config{Client: client.Config{URL: remoteURL}}, func(c *fakeConn) {
		c.startErr = errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	})
	bases := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second}
	for i, base := range bases {
		h.dialer.next(t)
		if st := h.nextChange(); st.State != StateFailed {
			t.Errorf("after failure %d: state %q, want %q", i+1, st.State, StateFailed)
		}
		d := h.clk.nextTimer(t)
		if d < base*3/4 || d > min(base*5/4, 30*time.Second) {
			t.Errorf("wait after failure %d = %v, want %v -25%%/+25%%, at most 30s", i+1, d, base)
		}
		h.clk.advance(d)
	}
}

// TestRemoteFlappingClimbsTheCurve checks that a remote server that
// connects and is lost at once, again and again, waits longer each time,
// up to Max, rather than starting again from Initial after every
// connection, and shows restarting throughout: past CrashLoopAfter losses
// a stdio server would be crash-looping, a remote one is not.
func TestRemoteFlappingClimbsTheCurve(t *testing.T) {
	b := Backoff{Initial: time.Second, Max: 8 * time.Second, CrashLoopAfter: 3, Window: time.Hour, SlowRetry: time.Hour}
	h := startHarness(t, Config{Client: client.Config{URL: remoteURL}, Backoff: b}, nil)
	for i, base := range []time.Duration{1, 2, 4, 8, 8} {
		base *= time.Second
		c := h.connect()
		c.drop(errors.New("stream reset"))
		st := h.nextChange()
		if st.State != StateRestarting {
			t.Errorf("after loss %d: state %q, want restarting", i+1, st.State)
		}
		d := h.clk.nextTimer(t)
		if d < base*3/4 || d > min(base*5/4, b.Max) {
			t.Errorf("wait after loss %d = %v, want %v ±25%%, at most %v", i+1, d, base, b.Max)
		}
		h.clk.advance(d)
	}
}

// authRequired is the error a remote server's 401 with a Bearer challenge
// becomes; its realm and metadata must never reach the status.
func authRequired() error {
	return fmt.Errorf("initialize: %w", &client.AuthRequiredError{
		Method: "POST", URL: remoteURL, Status: 401, Scheme: "Bearer",
		Realm: "realm-value-7", ResourceMetadata: "https://auth.example/meta-value-7",
	})
}

// loginSentence is what the status and every call say of a server that
// asks for sign-in: the command that will sign in, and what works without
// it.
const loginSentence = `server "linear" needs you to sign in (it answered 401 with a Bearer challenge): run mcphub login linear; ` +
	`or put a valid token in its headers in hub.toml (or the variable they name) and run mcphub restart linear`

// expectNoRetry closes the server, which waits for its supervisor, and
// fails if it set a retry timer or made another connection.
func expectNoRetry(t *testing.T, h *harness, dialed int) {
	t.Helper()
	h.srv.Close()
	h.clk.noTimer(t)
	if n := len(h.dialer.conns); n != 0 {
		t.Errorf("%d more connections were made; want none after needs-login", n)
	}
	h.dialer.mu.Lock()
	defer h.dialer.mu.Unlock()
	if h.dialer.n != dialed {
		t.Errorf("%d connections dialed, want %d", h.dialer.n, dialed)
	}
}

// TestNeedsLoginAtConnect checks that a server asking for sign-in when
// mcphub connects is shown needs-login with the sentence that says what to
// do, that calls are told the same, and that it is not retried.
func TestNeedsLoginAtConnect(t *testing.T) {
	h := startHarness(t, healthConfig(), func(c *fakeConn) { c.startErr = authRequired() })
	h.dialer.next(t)
	st := h.nextChange()
	if st.State != StateNeedsLogin || st.LastError != loginSentence || st.Restarts != 0 {
		t.Fatalf("status = %+v, want needs-login, %q, no restart", st, loginSentence)
	}
	r := recv(t, h.call(context.Background(), "s1", "tools/call", `{}`, newPeer("p")), "the call's outcome")
	var u interface{ Unavailable() bool }
	if !errors.As(r.err, &u) || r.err.Error() != loginSentence {
		t.Errorf("call: err = %v, want unavailable saying %q", r.err, loginSentence)
	}
	expectNoRetry(t, h, 1)
}

// TestNeedsLoginWhileConnected checks that a connected server that starts
// asking for sign-in (its token expired) is found out by the ping the
// client's report of the refusal brings, and is then left alone.
func TestNeedsLoginWhileConnected(t *testing.T) {
	h := startHarness(t, healthConfig(), nil)
	c := h.connect()
	expectTimer(t, h.clk, 2*time.Second, "after connecting")
	c.cfg.OnTransportError(authRequired())
	expectTimer(t, h.clk, time.Second, "the ping's timeout")
	expectPing(t, c).fail(authRequired())
	st := h.nextChange()
	if st.State != StateNeedsLogin || st.LastError != loginSentence {
		t.Fatalf("status = %+v, want needs-login, %q", st, loginSentence)
	}
	recv(t, c.Done(), "the connection to be closed")
	expectNoRetry(t, h, 1)
}

// TestCredentialRefusals checks a 401 without a Bearer challenge and a 403:
// the status names the status code and points at the headers in hub.toml,
// never quoting the body, and the server is retried with normal backoff.
func TestCredentialRefusals(t *testing.T) {
	for _, status := range []int{401, 403} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			h := startHarness(t, healthConfig(), func(c *fakeConn) {
				if c.n == 1 {
					c.startErr = fmt.Errorf("initialize: %w", &client.HTTPError{Method: "POST", URL: remoteURL, Status: status, Body: "denied: key body-secret-9"})
				}
			})
			h.dialer.next(t)
			st := h.nextChange()
			want := fmt.Sprintf("server \"linear\" refused mcphub with HTTP %d", status)
			if st.State != StateFailed || !strings.HasPrefix(st.LastError, want) || !strings.Contains(st.LastError, "hub.toml") || strings.Contains(st.LastError, "body-secret-9") {
				t.Fatalf("status = %+v, want failed, last error starting %q, naming hub.toml, without the body", st, want)
			}
			d := h.clk.nextTimer(t)
			if !withinJitter(d, 500*time.Millisecond) {
				t.Errorf("wait = %v, want the first backoff step", d)
			}
			h.clk.advance(d)
			h.connect()
		})
	}
}

// TestSlowCallKeepsConnection is a server that handles one request at a
// time, busy with a long tools/call: the idle ping queues behind the call
// and goes unanswered. While the server takes TCP connections that is busy,
// not gone: the connection and the call stay, and the next check is an
// interval later. Once it takes none either, the connection is ended.
func TestSlowCallKeepsConnection(t *testing.T) {
	h := startHarness(t, healthConfig(), nil)
	c := h.connect()
	expectTimer(t, h.clk, 2*time.Second, "after connecting")
	result := h.call(context.Background(), "s1", "tools/call", `{"name":"slow"}`, newPeer("p"))
	call := c.nextCall(t)
	if call.method != "tools/call" {
		t.Fatalf("first request %s, want the tools/call", call.method)
	}

	h.clk.advance(2 * time.Second)
	expectTimer(t, h.clk, time.Second, "the ping's timeout")
	expectPing(t, c)
	h.clk.advance(time.Second) // unanswered, behind the call
	if addr := h.nextProbe(); addr != probeAddr(client.Config{URL: remoteURL}) {
		t.Errorf("probed %s, want the server's address", addr)
	}
	// The probe counts as a sign of life: the next ping is a full
	// interval away.
	expectTimer(t, h.clk, 2*time.Second, "after the busy server's probe")
	if st := h.srv.Status(); st.State != StateConnected || st.Restarts != 0 {
		t.Errorf("status while busy = %+v, want connected", st)
	}
	select {
	case <-c.Done():
		t.Fatal("the connection was closed although the server takes connections")
	case r := <-result:
		t.Fatalf("the call ended while the server was busy with it: %v", r.err)
	default:
	}

	// Still busy at the next check: the same.
	h.clk.advance(2 * time.Second)
	expectTimer(t, h.clk, time.Second, "the second ping's timeout")
	expectPing(t, c)
	h.clk.advance(time.Second)
	h.nextProbe()
	expectTimer(t, h.clk, 2*time.Second, "after the second probe")
	call.answer(`{"content":[]}`)
	if r := recv(t, result, "the slow call's result"); r.err != nil {
		t.Fatalf("the slow call failed: %v", r.err)
	}

	// Another long call, and now the server is gone: no answer, no
	// connection.
	h.call(context.Background(), "s1", "tools/call", `{"name":"slow"}`, newPeer("p"))
	c.nextCall(t)
	h.clk.advance(2 * time.Second)
	expectTimer(t, h.clk, time.Second, "the third ping's timeout")
	expectPing(t, c)
	h.unreachable.Store(true)
	h.clk.advance(time.Second)
	h.nextProbe()
	expectLost(t, h, c, "no answer to a ping within 1s, and no connection to it: "+errRefused.Error())
}

// TestIdlePingTimeoutNeedsNoProbe checks that without calls in flight an
// unanswered ping ends the connection without a TCP probe: a server that
// takes connections but answers nothing is no use.
func TestIdlePingTimeoutNeedsNoProbe(t *testing.T) {
	h := startHarness(t, healthConfig(), nil)
	c := h.connect()
	expectTimer(t, h.clk, 2*time.Second, "after connecting")
	h.clk.advance(2 * time.Second)
	expectTimer(t, h.clk, time.Second, "the ping's timeout")
	expectPing(t, c)
	h.clk.advance(time.Second)
	expectLost(t, h, c, "no answer to a ping within 1s")
	// The one probe is the backoff's, after the loss.
	h.nextProbe()
	h.noProbe()
}

// TestPerSessionLinksNotPingedWhenIdle checks that with share = "session"
// only the shared connection is pinged when idle: a session's own
// connection sets no idle timer and is pinged only when the client reports
// a transport failure on it.
func TestPerSessionLinksNotPingedWhenIdle(t *testing.T) {
	cfg := healthConfig()
	cfg.Share = ShareSession
	h := startHarness(t, cfg, nil)
	shared := h.connect()
	expectTimer(t, h.clk, 2*time.Second, "the shared connection's idle check")
	result := h.call(context.Background(), "s1", "tools/call", `{}`, newPeer("p"))
	own := h.dialer.next(t)
	own.nextCall(t).answer(`{}`)
	recv(t, result, "the call's result")

	// The first timer the session's connection sets is the ping's
	// timeout, set when a failure is reported: no idle check came before.
	for range 2 {
		own.cfg.OnTransportError(errors.New("the notification stream ended"))
		expectTimer(t, h.clk, time.Second, "the session connection's ping timeout")
		p := expectPing(t, own)
		p.answer(`{}`)
		// Its context ends as the ping returns, once the answer is
		// taken: a failure reported from now on is a new one.
		recv(t, p.ctx.Done(), "the ping to return")
	}
	// Idle time pings the shared connection only.
	h.clk.advance(2 * time.Second)
	expectTimer(t, h.clk, time.Second, "the shared ping's timeout")
	expectPing(t, shared).answer(`{}`)
	expectTimer(t, h.clk, 2*time.Second, "the shared connection's next check")
	h.clk.advance(time.Hour)
	expectTimer(t, h.clk, time.Second, "the shared ping's timeout")
	expectPing(t, shared).answer(`{}`)
	expectTimer(t, h.clk, 2*time.Second, "the shared connection's next check")
	own.noMoreCalls(t)
}

// TestRemoteOutageRecoversAtOnce takes a remote server away for 20 s: the
// reconnect attempts follow the backoff curve (0.5 s, 1 s, 2 s, 4 s, 8 s,
// 16 s from one to the next, with jitter), the server shows restarting and
// never crash-loop, and the probes every PingInterval find it back at once:
// it is reconnected within PingInterval of its return, not at the end of a
// wait grown to 16 s.
func TestRemoteOutageRecoversAtOnce(t *testing.T) {
	// gone fails the connection attempts as h.unreachable fails the
	// probes: the server's port is closed.
	var gone atomic.Bool
	h := startHarness(t, healthConfig(), func(c *fakeConn) {
		if gone.Load() {
			c.startErr = errRefused
		}
	})
	c := h.connect()
	expectTimer(t, h.clk, 2*time.Second, "after connecting")
	h.unreachable.Store(true)
	gone.Store(true)
	down := h.clk.Now()
	c.drop(errors.New("GET http://upstream.invalid/mcp: connection reset by peer"))
	if st := h.nextChange(); st.State != StateRestarting {
		t.Fatalf("state after the loss = %q, want restarting", st.State)
	}

	// due is when the current backoff ends, probeAt when the next probe
	// is made; both as the supervisor set them.
	var due, probeAt time.Time
	waiting := func() {
		t.Helper()
		due = h.clk.Now().Add(h.clk.nextTimer(t))
		h.nextProbe() // at once: fails
		expectTimer(t, h.clk, 2*time.Second, "the next probe")
		probeAt = h.clk.Now().Add(2 * time.Second)
	}
	waiting()
	var attempts []time.Duration
	for h.clk.Now().Sub(down) < 20*time.Second {
		if probeAt.Before(due) {
			h.clk.advance(probeAt.Sub(h.clk.Now()))
			h.nextProbe()
			expectTimer(t, h.clk, 2*time.Second, "the next probe")
			probeAt = probeAt.Add(2 * time.Second)
			continue
		}
		h.clk.advance(due.Sub(h.clk.Now()))
		h.dialer.next(t)
		attempts = append(attempts, h.clk.Now().Sub(down))
		if st := h.nextChange(); st.State != StateRestarting {
			t.Errorf("state after attempt %d = %q, want restarting", len(attempts), st.State)
		}
		waiting()
	}
	t.Logf("attempts during the outage at %v", attempts)
	if len(attempts) != 5 {
		t.Errorf("%d attempts in 20 s, want 5 (at about 0.5, 1.5, 3.5, 7.5 and 15.5 s)", len(attempts))
	}
	for i, base := range []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second} {
		if i == 0 || i >= len(attempts) {
			continue
		}
		if gap := attempts[i] - attempts[i-1]; gap < base*3/4 || gap > base*5/4 {
			t.Errorf("attempt %d came %v after the one before, want %v ±25%%", i+1, gap, base)
		}
	}

	// Back: the next probe finds it, long before the backoff ends.
	back := h.clk.Now()
	h.unreachable.Store(false)
	gone.Store(false)
	if !probeAt.Before(due) {
		t.Fatalf("the backoff ends at %v, before the next probe at %v", due.Sub(down), probeAt.Sub(down))
	}
	h.clk.advance(probeAt.Sub(h.clk.Now()))
	h.nextProbe()
	h.connect()
	if took := h.clk.Now().Sub(back); took > 2*time.Second {
		t.Errorf("reconnected %v after the server came back, want within the 2s probe interval", took)
	}
	t.Logf("reconnected %v after the server came back; the backoff would have waited %v", h.clk.Now().Sub(back), due.Sub(back))
}

// TestReachableServerKeepsTheCurve is a server that takes TCP connections
// but fails every handshake: the probe at the start of each wait succeeds,
// which does not cut the wait short, so the attempts still back off up to
// 30 s.
func TestReachableServerKeepsTheCurve(t *testing.T) {
	cfg := healthConfig()
	h := startHarness(t, cfg, func(c *fakeConn) {
		c.startErr = fmt.Errorf("initialize: %w", httpStatus(503))
	})
	bases := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for i, base := range bases {
		h.dialer.next(t)
		h.nextChange()
		d := h.clk.nextTimer(t)
		if d < base*3/4 || d > min(base*5/4, 30*time.Second) {
			t.Errorf("wait after failure %d = %v, want %v ±25%%, at most 30s", i+1, d, base)
		}
		h.nextProbe() // succeeds: no probe timer follows
		h.clk.noTimer(t)
		// Just short of the end nothing happens; at the end, the attempt.
		h.clk.advance(d - time.Millisecond)
		h.clk.noTimer(t)
		h.noProbe()
		select {
		case c := <-h.dialer.conns:
			t.Fatalf("connection %d dialed %v into a %v wait", c.n, d-time.Millisecond, d)
		default:
		}
		h.clk.advance(time.Millisecond)
	}
}

// steppedClock answers Now from a list, one reading per call, and keeps
// the last; timers are not used.
type steppedClock struct {
	mu    sync.Mutex
	reads []time.Time
}

func (c *steppedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.reads[0]
	if len(c.reads) > 1 {
		c.reads = c.reads[1:]
	}
	return now
}

func (*steppedClock) After(time.Duration) <-chan time.Time { panic("not used") }
func (*steppedClock) AfterFunc(time.Duration, func()) func() bool {
	panic("not used")
}

// wallStepped returns t with its wall clock reading moved by d and its
// monotonic reading left as it is, as time.Now reads after the system
// clock was set back or forward by d. It relies on the layout of
// time.Time (wall, ext, loc) with a monotonic reading, where wall holds
// the seconds from 1885 above 30 bits of nanoseconds; ok is false when the
// result does not behave so.
func wallStepped(t time.Time, d time.Duration) (time.Time, bool) {
	type layout struct {
		wall uint64
		ext  int64
		loc  *time.Location
	}
	out := t
	(*layout)(unsafe.Pointer(&out)).wall += uint64(int64(d/time.Second)) << 30
	ok := out.Sub(t) == 0 && out.Round(0).Sub(t.Round(0)) == d.Truncate(time.Second)
	return out, ok
}

// TestHealthUsesTheMonotonicClock checks that a step of the wall clock does
// not change how long the server has been silent: with the wall clock set
// back an hour three seconds after the last sign of life, the server has
// been silent three seconds (and is due a ping), not minus an hour (and
// not pinged for an hour).
func TestHealthUsesTheMonotonicClock(t *testing.T) {
	t0 := time.Now()
	t1 := t0.Add(3 * time.Second)
	stepped, ok := wallStepped(t1, -time.Hour)
	if !ok {
		t.Skip("time.Time's layout is not the one this test knows; it cannot fake a wall clock step")
	}
	h := newHealth(&steppedClock{reads: []time.Time{t0, stepped}}, true)
	if got := h.silent(); got != 3*time.Second {
		t.Errorf("silent for %v after the wall clock went back an hour, want 3s", got)
	}
	if !h.aliveSince(t0.Add(-time.Second)) || h.aliveSince(t0.Add(time.Second)) {
		t.Errorf("aliveSince does not follow the monotonic clock")
	}
}

// TestProbeAddr checks what a TCP probe dials: the URL's host and port,
// the port by scheme when the URL has none, and the proxy the connection
// uses instead when there is one.
func TestProbeAddr(t *testing.T) {
	direct := &http.Client{Transport: &http.Transport{}}
	proxyURL, _ := url.Parse("http://proxy.example:3128")
	proxied := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}
	tests := []struct {
		url  string
		hc   *http.Client
		want string
	}{
		{"http://127.0.0.1:8080/mcp", direct, "127.0.0.1:8080"},
		{"http://upstream.example/mcp", direct, "upstream.example:80"},
		{"https://upstream.example/mcp?key=secret", direct, "upstream.example:443"},
		{"https://[::1]/mcp", direct, "[::1]:443"},
		{"https://upstream.example:8443/mcp", proxied, "proxy.example:3128"},
		{"/mcp", direct, ""},
	}
	for _, tt := range tests {
		if got := probeAddr(client.Config{URL: tt.url, HTTPClient: tt.hc}); got != tt.want {
			t.Errorf("probeAddr(%s) = %q, want %q", tt.url, got, tt.want)
		}
	}
}
