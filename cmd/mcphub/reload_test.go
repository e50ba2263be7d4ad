package main

// Process-level tests of live registry changes, supervision and the control
// commands: `mcphub serve` runs as a real process (the built binary) with two
// `mcphub demo` stdio servers and one Streamable HTTP server (an official Go
// SDK server on httptest), while one SDK client session stays open on /mcp.

import (
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcphub/mcphub/hub"
)

// TestReloadLiveRegistry walks one running hub through the registry changes
// a user makes while an IDE stays connected (issue 8): an edit that needs a
// new connection, an added server, an upstream whose tools change, a removed
// server, a broken save and its fix, a crashed child, then status and
// shutdown. Each step is a subtest; a failed step stops the walk.
func TestReloadLiveRegistry(t *testing.T) {
	web := rlNewWeb(t)
	h := rlNewHub(t)
	webURL := web.ts.URL + "/mcp"
	reg := func(aGen string, withB, withC bool) string {
		s := h.hubSection() + h.demo("a", "RELOAD_GEN", aGen)
		if withB {
			s += h.demo("b")
		}
		if withC {
			s += h.demo("c")
		}
		return s + h.remote("web", webURL)
	}
	h.writeRegistry(t, reg("1", true, false))
	h.start()
	st := h.waitStatus(t, 15*time.Second, "a, b and web connect", rlConnected("a", "b", "web"))
	pidA, pidB := rlServer(st, "a").PID, rlServer(st, "b").PID
	if pidA <= 0 || pidB <= 0 || pidA == pidB {
		t.Fatalf("stdio servers need distinct PIDs: a=%d b=%d", pidA, pidB)
	}
	webOpened := web.opened.Load()
	if webOpened < 1 {
		t.Fatalf("the hub never opened a session on web (requests: %s)", web.methodCounts())
	}

	s := rlConnect(t, h.addr)
	s.waitTools(t, []string{"a__echo", "a__add", "a__countdown", "b__echo", "web__lookup"}, nil)
	s.mustEcho(t, "a__echo", "hello a")
	s.mustEcho(t, "web__lookup", "hello web")
	// A session opened within the hub's coalescing window after the last
	// server connected receives the startup list_changed as well (see the
	// report); let it pass before counting.
	t.Logf("tools/list_changed received by a session opened just after the servers connected: %d", s.settleChanged())

	step := func(name string, f func(t *testing.T)) {
		t.Helper()
		if !t.Run(name, f) {
			t.FailNow()
		}
	}

	step("1_env_change_replaces_only_a", func(t *testing.T) {
		before := s.changed.Load()
		h.writeRegistry(t, reg("2", true, false))
		st := h.waitStatus(t, 10*time.Second, "a runs a new process", func(st *hub.Status) error {
			a := rlServer(st, "a")
			if a == nil || a.State != hub.StateConnected || a.PID <= 0 || a.PID == pidA {
				return errors.New("a has not been replaced yet")
			}
			return nil
		})
		oldA := pidA
		pidA = rlServer(st, "a").PID
		if got := rlServer(st, "b"); got.PID != pidB || got.State != hub.StateConnected {
			t.Errorf("b was touched by a change to a: pid %d → %d, state %s", pidB, got.PID, got.State)
		}
		if got := rlServer(st, "web"); got.State != hub.StateConnected {
			t.Errorf("web is %s after a change to a", got.State)
		}
		rlWaitGone(t, oldA, "a's old process")
		s.mustEcho(t, "a__echo", "a after the env change")
		s.mustEcho(t, "b__echo", "b after the env change")
		s.mustEcho(t, "web__lookup", "web after the env change")
		if n := web.opened.Load(); n != webOpened {
			t.Errorf("web was reconnected by a change to a: %d sessions opened, want %d (requests: %s)", n, webOpened, web.methodCounts())
		}
		delta := s.settleChanged() - before
		t.Logf("observed %d tools/list_changed for an env-only change to a (its tools are the same)", delta)
		if delta > 1 {
			t.Errorf("%d tools/list_changed for one change; the hub coalesces into at most one", delta)
		}
	})

	var pidC int
	step("2_add_server_c", func(t *testing.T) {
		before := s.changed.Load()
		h.writeRegistry(t, reg("2", true, true))
		st := h.waitStatus(t, 10*time.Second, "c connects", rlConnected("a", "b", "c", "web"))
		pidC = rlServer(st, "c").PID
		if pidC <= 0 {
			t.Fatalf("c has no PID")
		}
		if a, b := rlServer(st, "a"), rlServer(st, "b"); a.PID != pidA || b.PID != pidB {
			t.Errorf("adding c touched a or b: a %d → %d, b %d → %d", pidA, a.PID, pidB, b.PID)
		}
		s.waitTools(t, []string{"c__echo", "c__add", "c__countdown", "a__echo", "b__echo", "web__lookup"}, nil)
		s.waitChanged(t, before+1, "a tools/list_changed for the added server")
		s.mustEcho(t, "c__echo", "hello c")
		if delta := s.settleChanged() - before; delta != 1 {
			t.Errorf("adding c sent %d tools/list_changed, want exactly 1", delta)
		}
		if n := web.opened.Load(); n != webOpened {
			t.Errorf("web was reconnected when c was added: %d sessions opened, want %d", n, webOpened)
		}
	})

	step("2b_remote_tool_list_changes", func(t *testing.T) {
		before := s.changed.Load()
		web.addShout()
		s.waitTools(t, []string{"web__shout", "web__lookup"}, nil)
		s.waitChanged(t, before+1, "a tools/list_changed for web's new tool")
		if got, err := s.call("web__shout", "loud"); err != nil || got != "LOUD" {
			t.Errorf("web__shout: %q, %v", got, err)
		}
		if delta := s.settleChanged() - before; delta != 1 {
			t.Errorf("one upstream list change gave %d tools/list_changed, want exactly 1", delta)
		}
	})

	step("3_remove_server_b", func(t *testing.T) {
		before := s.changed.Load()
		h.writeRegistry(t, reg("2", false, true))
		h.waitStatus(t, 10*time.Second, "b leaves the status", func(st *hub.Status) error {
			if rlServer(st, "b") != nil {
				return errors.New("b is still listed")
			}
			return nil
		})
		s.waitTools(t, []string{"a__echo", "c__echo", "web__lookup"}, []string{"b__echo", "b__add", "b__countdown"})
		s.waitChanged(t, before+1, "a tools/list_changed for the removed server")
		_, err := s.call("b__echo", "anyone there?")
		var werr *sdkjsonrpc.Error
		switch {
		case err == nil:
			t.Errorf("b__echo succeeded after b was removed")
		case !errors.As(err, &werr):
			t.Errorf("b__echo after removal: want a JSON-RPC error, got %T: %v", err, err)
		case werr.Code != sdkjsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, `unknown tool "b__echo"`):
			t.Errorf("b__echo after removal: got JSON-RPC error %d %q, want %d unknown tool", werr.Code, werr.Message, sdkjsonrpc.CodeInvalidParams)
		default:
			t.Logf("b__echo after removal: JSON-RPC error %d: %s", werr.Code, werr.Message)
		}
		rlWaitGone(t, pidB, "b's process")
		s.mustEcho(t, "a__echo", "a after removing b")
		s.mustEcho(t, "c__echo", "c after removing b")
		if delta := s.settleChanged() - before; delta != 1 {
			t.Errorf("removing b sent %d tools/list_changed, want exactly 1", delta)
		}
	})

	step("4_broken_save_keeps_last_good", func(t *testing.T) {
		good := reg("2", false, true)
		toolsBefore, err := s.tools()
		if err != nil {
			t.Fatal(err)
		}
		changedBefore := s.changed.Load()
		// An unterminated table header three lines below the good text.
		broken := good + "\n\n[servers.d\ncommand = \"x\"\n"
		badLine := strings.Count(good, "\n") + 3
		h.writeRegistry(t, broken)
		st := h.waitStatus(t, 10*time.Second, "/readyz reports the registry error", func(st *hub.Status) error {
			if st.RegistryError == "" {
				return errors.New("no registry_error yet")
			}
			return nil
		})
		t.Logf("registry_error: %s", st.RegistryError)
		pos := regexp.MustCompile(regexp.QuoteMeta(h.cfg) + `:(\d+):(\d+): `)
		m := pos.FindStringSubmatch(st.RegistryError)
		switch {
		case m == nil:
			t.Errorf("registry_error %q does not name %s with line:col", st.RegistryError, h.cfg)
		case m[1] != fmt.Sprint(badLine):
			t.Errorf("registry_error points at line %s, the broken header is on line %d", m[1], badLine)
		}
		for _, n := range []string{"a", "c", "web"} {
			if srv := rlServer(st, n); srv == nil || srv.State != hub.StateConnected {
				t.Errorf("server %s is not connected after a broken save: %s", n, rlShowStatus(st))
			}
		}
		if a, c := rlServer(st, "a"), rlServer(st, "c"); a == nil || c == nil || a.PID != pidA || c.PID != pidC {
			t.Errorf("a broken save changed PIDs: %s (want a=%d c=%d)", rlShowStatus(st), pidA, pidC)
		}
		if got, err := s.tools(); err != nil || !slices.Equal(got, toolsBefore) {
			t.Errorf("a broken save changed tools/list: %v (%v), want %v", got, err, toolsBefore)
		}
		s.mustEcho(t, "a__echo", "a with a broken file")

		code, out, errOut := h.cli(t, "status")
		t.Logf("mcphub status with a broken file: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		if code != 0 {
			t.Errorf("mcphub status exited %d with a broken file; it must still show the running hub", code)
		}
		if !strings.Contains(out, "does not load") || (m != nil && !strings.Contains(out, m[0])) {
			t.Errorf("mcphub status does not print the registry error:\n%s", out)
		}

		h.writeRegistry(t, good)
		st = h.waitStatus(t, 10*time.Second, "fixing the file clears registry_error", func(st *hub.Status) error {
			if st.RegistryError != "" {
				return errors.New("registry_error is still set")
			}
			return nil
		})
		if a, c := rlServer(st, "a"), rlServer(st, "c"); a == nil || c == nil || a.PID != pidA || c.PID != pidC {
			t.Errorf("fixing the file changed PIDs: %s (want a=%d c=%d)", rlShowStatus(st), pidA, pidC)
		}
		if delta := s.settleChanged() - changedBefore; delta != 0 {
			t.Errorf("a broken save and its fix sent %d tools/list_changed; nothing changed", delta)
		}
		code, out, _ = h.cli(t, "status")
		if code != 0 || strings.Contains(out, "does not load") {
			t.Errorf("mcphub status after the fix: exit %d\n%s", code, out)
		}
	})

	step("5_killed_child_restarts_with_backoff", func(t *testing.T) {
		st, err := h.status()
		if err != nil {
			t.Fatal(err)
		}
		restartsBefore := rlServer(st, "a").Restarts
		killed := time.Now()
		if err := killPID(pidA); err != nil {
			t.Fatalf("kill a (pid %d): %v", pidA, err)
		}
		changedBefore := s.changed.Load()
		var (
			calledDuring bool
			states       []string
			back         time.Time
			final        *hub.ServerStatus
			deadline     = killed.Add(10 * time.Second)
		)
		for final == nil {
			if time.Now().After(deadline) {
				t.Fatalf("a did not reconnect within 10 s; states seen: %v", states)
			}
			st, err := h.status()
			if err != nil {
				t.Fatal(err)
			}
			a := rlServer(st, "a")
			if len(states) == 0 || states[len(states)-1] != a.State {
				states = append(states, a.State)
			}
			if a.State == hub.StateRestarting && !calledDuring {
				// A call while a is down must fail at once and say why, or
				// succeed if a came back meanwhile; it must not hang.
				calledDuring = true
				start := time.Now()
				_, err := s.call("a__echo", "while restarting")
				took := time.Since(start)
				t.Logf("a__echo while a was %s (tools %d): %v after %s", a.State, a.Tools, err, took.Round(time.Millisecond))
				var werr *sdkjsonrpc.Error
				if took > 2*time.Second {
					t.Errorf("a__echo while a was restarting took %s", took)
				}
				if err != nil && (!errors.As(err, &werr) || !strings.Contains(werr.Message, "restarting")) {
					t.Errorf("a__echo while a was restarting: want a JSON-RPC error saying a is restarting, got %v", err)
				}
			}
			if a.State == hub.StateConnected && a.PID > 0 && a.PID != pidA {
				back, final = time.Now(), a
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		gap := back.Sub(killed)
		t.Logf("a: killed pid %d; states seen %v; connected again as pid %d after %s, restarts %d → %d, last_error %q",
			pidA, states, final.PID, gap.Round(time.Millisecond), restartsBefore, final.Restarts, final.LastError)
		if !slices.Contains(states, hub.StateRestarting) {
			t.Errorf("/readyz never showed a as %s between the kill and the reconnection (saw %v)", hub.StateRestarting, states)
		}
		if final.Restarts < restartsBefore+1 {
			t.Errorf("a reconnected with restarts = %d, want ≥ %d", final.Restarts, restartsBefore+1)
		}
		if gap < 300*time.Millisecond {
			t.Errorf("a was back %s after the kill; the first reconnect waits 0.5 s ±25%%", gap)
		}
		rlWaitGone(t, pidA, "a's killed process")
		pidA = final.PID
		s.waitTools(t, []string{"a__echo", "c__echo"}, nil)
		t.Logf("tools/list_changed across the crash and reconnection: %d", s.settleChanged()-changedBefore)
		rlEventually(t, 5*time.Second, "a__echo works again", func() error {
			_, err := s.call("a__echo", "a after the crash")
			return err
		})
		s.mustEcho(t, "c__echo", "c after a crashed")
	})

	step("6_status_then_sigterm", func(t *testing.T) {
		code, out, errOut := h.cli(t, "status")
		t.Logf("mcphub status: exit %d\n%s%s", code, out, errOut)
		if code != 0 {
			t.Errorf("mcphub status exited %d against a running hub", code)
		}
		for _, n := range []string{"a", "c", "web"} {
			if !rlStatusLine(out, n, hub.StateConnected) {
				t.Errorf("mcphub status does not list %s as %s", n, hub.StateConnected)
			}
		}
		if rlStatusLine(out, "b", "") {
			t.Errorf("mcphub status still lists the removed server b")
		}

		if runtime.GOOS == "windows" {
			t.Skip("Windows has no SIGTERM for a console process (termPID terminates it), so a clean shutdown cannot be asked for by PID")
		}
		s.mustEcho(t, "a__echo", "last call")
		stopped := time.Now()
		if err := termPID(h.cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
		select {
		case <-h.exited:
		case <-time.After(10 * time.Second):
			t.Fatalf("mcphub serve did not exit within 10 s of SIGTERM (an SDK client session was open)")
		}
		t.Logf("mcphub serve exited %v after SIGTERM: %v", time.Since(stopped).Round(time.Millisecond), h.werr)
		if h.werr != nil {
			t.Errorf("mcphub serve exited with %v after SIGTERM, want status 0", h.werr)
		}
		if !strings.Contains(h.stdout.String(), "mcphub stopped") {
			t.Errorf("mcphub serve did not say it stopped:\n%s", h.stdout.String())
		}
		for name, pid := range map[string]int{"a": pidA, "c": pidC} {
			if !pidGone(pid) {
				t.Errorf("%s's process (pid %d) outlived the hub", name, pid)
			}
		}

		code, out, errOut = h.cli(t, "status")
		t.Logf("mcphub status after the hub stopped: exit %d\n%s%s", code, out, errOut)
		if code != 1 {
			t.Errorf("mcphub status exited %d with no hub running, want 1", code)
		}
		if want := "no mcphub is running at " + h.addr; !strings.Contains(out+errOut, want) {
			t.Errorf("mcphub status does not say %q", want)
		}
	})
}

// rlStatusLine reports whether `mcphub status` output has a row for server
// name, in the given state unless state is "".
func rlStatusLine(out, name, state string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == name && (state == "" || f[1] == state) {
			return true
		}
	}
	return false
}

// TestRestartAndEnableDisable drives the control commands against a running
// hub: `mcphub restart NAME` swaps in a new process while the session keeps
// working, and `mcphub disable NAME` / `enable NAME` stop and start it.
func TestRestartAndEnableDisable(t *testing.T) {
	h := rlNewHub(t)
	h.writeRegistry(t, h.hubSection()+h.demo("a")+h.demo("b"))
	h.start()
	st := h.waitStatus(t, 15*time.Second, "a and b connect", rlConnected("a", "b"))
	pidA, pidB := rlServer(st, "a").PID, rlServer(st, "b").PID
	s := rlConnect(t, h.addr)
	s.waitTools(t, []string{"a__echo", "b__echo"}, nil)

	step := func(name string, f func(t *testing.T)) {
		t.Helper()
		if !t.Run(name, f) {
			t.FailNow()
		}
	}

	step("restart", func(t *testing.T) {
		code, out, errOut := h.cli(t, "restart", "a")
		if code != 0 || !strings.Contains(out, "restarting a") {
			t.Fatalf("mcphub restart a: exit %d\n%s%s", code, out, errOut)
		}
		st := h.waitStatus(t, 10*time.Second, "a runs a new process", func(st *hub.Status) error {
			a := rlServer(st, "a")
			if a.State != hub.StateConnected || a.PID <= 0 || a.PID == pidA {
				return errors.New("a has not been replaced yet")
			}
			return nil
		})
		if b := rlServer(st, "b"); b.PID != pidB {
			t.Errorf("restarting a changed b's PID: %d → %d", pidB, b.PID)
		}
		rlWaitGone(t, pidA, "a's old process")
		pidA = rlServer(st, "a").PID
		s.mustEcho(t, "a__echo", "a after restart")
		s.mustEcho(t, "b__echo", "b after restart")

		code, out, errOut = h.cli(t, "restart", "nope")
		if code != 1 || !strings.Contains(errOut, "404") {
			t.Errorf("mcphub restart nope: exit %d, want 1 with the hub's 404\n%s%s", code, out, errOut)
		}
	})

	step("disable", func(t *testing.T) {
		before := s.changed.Load()
		code, out, errOut := h.cli(t, "disable", "a")
		if code != 0 {
			t.Fatalf("mcphub disable a: exit %d\n%s%s", code, out, errOut)
		}
		st := h.waitStatus(t, 10*time.Second, "a is disabled", func(st *hub.Status) error {
			if a := rlServer(st, "a"); a == nil || a.State != hub.StateDisabled || a.PID != 0 {
				return errors.New("a is not disabled yet")
			}
			return nil
		})
		if b := rlServer(st, "b"); b.PID != pidB || b.State != hub.StateConnected {
			t.Errorf("disabling a touched b: %s", rlShowStatus(st))
		}
		rlWaitGone(t, pidA, "a's process")
		s.waitTools(t, []string{"b__echo"}, []string{"a__echo"})
		s.waitChanged(t, before+1, "a tools/list_changed for the disabled server")
		if _, err := s.call("a__echo", "anyone?"); err == nil {
			t.Errorf("a__echo succeeded while a is disabled")
		}
		s.mustEcho(t, "b__echo", "b while a is disabled")
	})

	step("enable", func(t *testing.T) {
		before := s.changed.Load()
		code, out, errOut := h.cli(t, "enable", "a")
		if code != 0 {
			t.Fatalf("mcphub enable a: exit %d\n%s%s", code, out, errOut)
		}
		st := h.waitStatus(t, 10*time.Second, "a is back", rlConnected("a", "b"))
		if a := rlServer(st, "a"); a.PID <= 0 || a.PID == pidA {
			t.Errorf("enabled a runs as pid %d (disabled one was %d)", a.PID, pidA)
		}
		s.waitTools(t, []string{"a__echo", "b__echo"}, nil)
		s.waitChanged(t, before+1, "a tools/list_changed for the enabled server")
		s.mustEcho(t, "a__echo", "a enabled again")
	})
}
