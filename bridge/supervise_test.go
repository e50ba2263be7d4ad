package bridge

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/client"
)

// TestBackoffDelay pins the retry delays: Initial doubled per attempt,
// capped at Max, spread over exactly ±25%.
func TestBackoffDelay(t *testing.T) {
	b := Backoff{Initial: time.Second, Max: 8 * time.Second}.withDefaults()
	lowest := func(time.Duration) time.Duration { return 0 }
	highest := func(n time.Duration) time.Duration { return n - 1 }
	tests := []struct {
		attempt int
		base    time.Duration
	}{
		{0, time.Second},
		{1, 2 * time.Second},
		{2, 4 * time.Second},
		{3, 8 * time.Second},
		{4, 8 * time.Second},
		{63, 8 * time.Second}, // a shift that would overflow stays at Max
		{1000, 8 * time.Second},
	}
	for _, tt := range tests {
		if got, want := b.delay(tt.attempt, lowest), tt.base*3/4; got != want {
			t.Errorf("attempt %d: shortest delay %v, want %v", tt.attempt, got, want)
		}
		if got, want := b.delay(tt.attempt, highest), tt.base*5/4; got != want {
			t.Errorf("attempt %d: longest delay %v, want %v", tt.attempt, got, want)
		}
	}
}

// TestBackoffDefaults pins the policy used when the registry sets none.
func TestBackoffDefaults(t *testing.T) {
	got := Backoff{}.withDefaults()
	want := Backoff{Initial: 500 * time.Millisecond, Max: 30 * time.Second, CrashLoopAfter: 4, Window: 2 * time.Minute, SlowRetry: time.Minute, Stable: time.Minute}
	if got != want {
		t.Errorf("defaults = %+v, want %+v", got, want)
	}
	set := Backoff{Initial: time.Second, Max: time.Hour, CrashLoopAfter: 9, Window: time.Hour, SlowRetry: time.Hour, Stable: time.Hour}
	if got := set.withDefaults(); got != set {
		t.Errorf("set values changed: %+v, want %+v", got, set)
	}
}

// withinJitter reports whether d is base spread by at most 25%.
func withinJitter(d, base time.Duration) bool { return d >= base*3/4 && d <= base*5/4 }

// TestReconnectDelays drives a server that never connects through the
// supervisor with a fake clock: each wait doubles from Initial up to Max,
// within the jitter bounds, and the server reports itself failed.
func TestReconnectDelays(t *testing.T) {
	h := startHarness(t, Config{Backoff: Backoff{Initial: time.Second, Max: 8 * time.Second, CrashLoopAfter: 100}}, func(c *fakeConn) {
		c.startErr = errors.New("boom")
	})
	for i, base := range []time.Duration{1, 2, 4, 8, 8, 8} {
		base *= time.Second
		h.dialer.next(t)
		st := h.nextChange()
		if st.State != StateFailed || st.LastError != "boom" || st.Restarts != i {
			t.Errorf("after failure %d: status %+v, want failed, last error boom, %d restarts", i+1, st, i)
		}
		d := h.clk.nextTimer(t)
		if !withinJitter(d, base) {
			t.Errorf("wait after failure %d = %v, want %v ±25%%", i+1, d, base)
		}
		h.clk.advance(d)
	}
}

// TestCrashLoop checks that enough failures within the window mark the
// server crash-looping and switch to the slow retry, and that failures
// spread wider than the window never do.
func TestCrashLoop(t *testing.T) {
	tests := []struct {
		name   string
		window time.Duration
		want   []string // the state after each failure
	}{
		{"three failures within the window", time.Minute, []string{StateFailed, StateFailed, StateCrashLoop}},
		{"failures further apart than the window", 500 * time.Millisecond, []string{StateFailed, StateFailed, StateFailed, StateFailed, StateFailed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := Backoff{Initial: time.Second, Max: 2 * time.Second, CrashLoopAfter: 3, Window: tt.window, SlowRetry: 5 * time.Minute}
			h := startHarness(t, Config{Backoff: b}, func(c *fakeConn) { c.startErr = errors.New("exit status 1") })
			for i, want := range tt.want {
				st := h.nextChange()
				if st.State != want {
					t.Fatalf("state after failure %d = %q, want %q", i+1, st.State, want)
				}
				d := h.clk.nextTimer(t)
				switch {
				case want == StateCrashLoop && d != b.SlowRetry:
					t.Errorf("crash-looping server retries after %v, want the slow retry %v", d, b.SlowRetry)
				case want != StateCrashLoop && d > b.Max*5/4:
					t.Errorf("wait after failure %d = %v, want at most Max %v +25%%", i+1, d, b.Max)
				}
				h.clk.advance(d)
			}
		})
	}
}

// TestStableConnectionResetsFailures checks that a connection that stayed
// up for Stable clears the failures counted towards crash-looping, and one
// that went down sooner does not.
func TestStableConnectionResetsFailures(t *testing.T) {
	b := Backoff{Initial: time.Second, Max: 4 * time.Second, CrashLoopAfter: 2, Window: time.Hour, SlowRetry: 5 * time.Minute, Stable: time.Minute}
	tests := []struct {
		name      string
		uptime    time.Duration
		wantState string
	}{
		{"up for Stable", time.Minute, StateRestarting},
		{"up for less than Stable", time.Minute - time.Second, StateCrashLoop},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startHarness(t, Config{Backoff: b}, func(c *fakeConn) {
				if c.n == 1 {
					c.startErr = errors.New("not yet")
				}
			})
			h.dialer.next(t) // the attempt that fails
			if st := h.nextChange(); st.State != StateFailed {
				t.Fatalf("state after the first attempt = %q, want failed", st.State)
			}
			h.clk.advance(h.clk.nextTimer(t))
			c := h.connect()
			st := h.srv.Status()
			if st.Transport != client.TransportStdio || st.PID != c.PID() || !st.Since.Equal(h.clk.Now()) || st.LastError != "" {
				t.Errorf("connected status = %+v, want transport, pid %d, since now (%v) and no error", st, c.PID(), h.clk.Now())
			}
			h.clk.advance(tt.uptime)
			c.drop(&client.ExitError{Status: "exit status 2"})
			st = h.nextChange()
			if st.State != tt.wantState || st.Restarts != 1 || !strings.Contains(st.LastError, "exit status 2") {
				t.Errorf("status after the loss = %+v, want %s, 1 restart, the exit in LastError", st, tt.wantState)
			}
			d := h.clk.nextTimer(t)
			if tt.wantState == StateCrashLoop && d != b.SlowRetry {
				t.Errorf("wait = %v, want the slow retry %v", d, b.SlowRetry)
			}
			if tt.wantState != StateCrashLoop && !withinJitter(d, b.Initial) {
				t.Errorf("wait = %v, want Initial %v ±25%% (the count restarts)", d, b.Initial)
			}
		})
	}
}

// TestStatusLifecycle follows the states a server reports, and what a call
// made in each is told.
func TestStatusLifecycle(t *testing.T) {
	gate := make(chan struct{})
	h := newHarness(t, Config{}, func(c *fakeConn) {
		switch c.n {
		case 1:
			c.startGate = gate
		case 2:
			c.startErr = errors.New("refused")
		}
	})
	expectUnavailable := func(when, want string) {
		t.Helper()
		r := recv(t, h.call(context.Background(), "s1", "tools/call", `{}`, newPeer("p")), "the call's outcome")
		var u interface{ Unavailable() bool }
		if !errors.As(r.err, &u) || !strings.Contains(r.err.Error(), want) {
			t.Errorf("call %s: err = %v, want unavailable saying %q", when, r.err, want)
		}
	}
	if st := h.srv.Status(); st.State != StateStarting {
		t.Errorf("before Start: state %q, want starting", st.State)
	}
	expectUnavailable("before Start", "server fake is stopped")

	h.srv.Start(context.Background())
	c1 := h.dialer.next(t)
	if st := h.srv.Status(); st.State != StateStarting {
		t.Errorf("while connecting: state %q, want starting", st.State)
	}
	expectUnavailable("while connecting", "server fake is starting (still connecting)")

	close(gate)
	if st := h.nextChange(); st.State != StateConnected {
		t.Fatalf("after connecting: state %q, want connected", st.State)
	}
	c1.drop(errors.New("broken pipe"))
	if st := h.nextChange(); st.State != StateRestarting {
		t.Errorf("after the loss: state %q, want restarting", st.State)
	}
	expectUnavailable("while restarting", "server fake is restarting (attempt 1, last error: broken pipe)")

	h.clk.advance(h.clk.nextTimer(t))
	h.dialer.next(t)
	if st := h.nextChange(); st.State != StateRestarting || st.Restarts != 2 || st.LastError != "refused" {
		t.Errorf("after a failed reconnect: %+v, want restarting, 2 restarts, last error refused", st)
	}
	h.srv.Close()
	if st := h.srv.Status(); st.Transport != "" {
		t.Errorf("after Close: transport %q, want none", st.Transport)
	}
	expectUnavailable("after Close", "server fake is stopped")
}

// TestInFlightCallsFailNotReplayed checks that a call in flight when the
// connection is lost fails with an unavailable error and is not sent again
// on the next connection.
func TestInFlightCallsFailNotReplayed(t *testing.T) {
	h := startHarness(t, Config{}, nil)
	c1 := h.connect()
	result := h.call(context.Background(), "s1", "tools/call", `{"name":"once"}`, newPeer("p"))
	up := c1.nextCall(t)
	c1.drop(&client.ExitError{Status: "signal: killed"})

	r := recv(t, result, "the interrupted call's outcome")
	var u interface{ Unavailable() bool }
	if !errors.As(r.err, &u) || !strings.Contains(r.err.Error(), "not retried") || !strings.Contains(r.err.Error(), "signal: killed") {
		t.Errorf("interrupted call: err = %v, want unavailable, not retried, naming the exit", r.err)
	}
	if st := h.nextChange(); st.State != StateRestarting {
		t.Fatalf("state = %q, want restarting", st.State)
	}
	h.clk.advance(h.clk.nextTimer(t))
	c2 := h.connect()

	next := h.call(context.Background(), "s1", "tools/call", `{"name":"next"}`, newPeer("p"))
	first := c2.nextCall(t)
	if member(t, first.params, "name") != `"next"` {
		t.Errorf("first request on the new connection = %s %s, want the new call (the old one was replayed?)", first.method, first.params)
	}
	first.answer(`{}`)
	recv(t, next, "the new call's result")
	c1.noMoreCalls(t)
	c2.noMoreCalls(t)
	if string(up.id) == string(first.id) {
		t.Errorf("the new call reused the lost call's upstream id %s", up.id)
	}
}
