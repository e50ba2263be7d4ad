package main

// Process-level tests of live registry changes, supervision and the control
// commands: `mcphub serve` runs as a real process (the built binary) with
// `mcphub demo` stdio servers and, in the walk, one Streamable HTTP server
// (the fake on httptest), while one SDK client session stays open on /mcp.
// Each test is a table of steps; a step says what it changes and what the
// hub must show afterwards, and a failed step stops the walk.

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcphub/mcphub/api"
)

// quietWindow is how long a step watches for notifications that must not
// come: more than the hub's 250 ms coalescing window, with margin for a
// loaded machine.
const quietWindow = 900 * time.Millisecond

// reloadWorld is a running hub and what the steps over it share.
type reloadWorld struct {
	h         *procHub
	run       *hubRun
	s         *sdkSession
	web       *httpUpstream  // the HTTP server, nil when the test has none
	webOpened int64          // sessions the hub opened on web at the start
	pids      map[string]int // each stdio server's last PID
	last      *api.Status    // what /readyz showed after the step's change
}

// changes is how many tools/list_changed notifications a step may cause: at
// least min (waited for), at most max (watched for quietWindow; max < 0
// leaves it open). The zero value checks nothing.
type changes struct {
	min, max int64
	set      bool
}

func exactly(n int64) changes { return changes{n, n, true} }
func atMost(n int64) changes  { return changes{0, n, true} }
func atLeast(n int64) changes { return changes{n, -1, true} }

// reloadStep is one change to a running hub and what must follow.
type reloadStep struct {
	name string
	do   func(t *testing.T, w *reloadWorld) // the change

	// What /readyz must show within 10 s of the change.
	connected []string                // connected, with tools
	replaced  []string                // connected with a new PID; the old process is reaped
	removed   []string                // no longer listed; the process is reaped
	disabled  []string                // disabled with no PID; the process is reaped
	until     func(*api.Status) error // anything else

	// What must hold then.
	kept      []string // the same process as before the step, connected
	sameTools bool     // tools/list as before the step
	tools     []string // listed
	noTools   []string // not listed
	echo      []string // tools that echo what they are given
	fails     []string // tools whose call fails
	webKept   bool     // the hub opened no new session on web
	changed   changes
	check     func(t *testing.T, w *reloadWorld) // what only this step checks, last
}

// runSteps runs each step as a subtest and stops at the first that fails.
func runSteps(t *testing.T, w *reloadWorld, steps []reloadStep) {
	for _, st := range steps {
		if !t.Run(st.name, func(t *testing.T) { w.step(t, st) }) {
			t.FailNow()
		}
	}
}

func (w *reloadWorld) step(t *testing.T, st reloadStep) {
	before := w.s.changed.Load()
	var toolsBefore []string
	if st.sameTools {
		var err error
		if toolsBefore, err = w.s.tools(); err != nil {
			t.Fatal(err)
		}
	}
	old := maps.Clone(w.pids)
	if st.do != nil {
		st.do(t, w)
	}
	if st.connected != nil || st.replaced != nil || st.removed != nil || st.disabled != nil || st.until != nil {
		// Servers connected before the step are bystanders: they must stay
		// connected on the first snapshot that shows the change, not just
		// come back within the wait. The others are part of the change.
		var waitFor, bystanders []string
		for _, n := range append(slices.Clone(st.connected), st.replaced...) {
			if srv := findServer(w.last, n); srv != nil && srv.State == api.StateConnected && !slices.Contains(st.replaced, n) {
				bystanders = append(bystanders, n)
			} else {
				waitFor = append(waitFor, n)
			}
		}
		w.last = w.h.waitStatus(t, nil, 10*time.Second, "/readyz shows the change", func(s *api.Status) error {
			if err := connected(waitFor...)(s); err != nil {
				return err
			}
			for _, n := range st.replaced {
				if p := findServer(s, n).PID; p <= 0 || p == old[n] {
					return fmt.Errorf("%s has not been replaced yet", n)
				}
			}
			for _, n := range st.removed {
				if findServer(s, n) != nil {
					return fmt.Errorf("%s is still listed", n)
				}
			}
			for _, n := range st.disabled {
				if srv := findServer(s, n); srv == nil || srv.State != api.StateDisabled || srv.PID != 0 {
					return fmt.Errorf("%s is not disabled yet", n)
				}
			}
			if st.until != nil {
				return st.until(s)
			}
			return nil
		})
		for _, n := range bystanders {
			if srv := findServer(w.last, n); srv == nil || srv.State != api.StateConnected {
				t.Errorf("%s was not connected when the change showed: %s", n, describe(w.last))
			}
		}
		for _, n := range st.kept {
			if srv := findServer(w.last, n); srv == nil || srv.PID != old[n] || srv.State != api.StateConnected {
				t.Errorf("%s was touched by this change: pid %d before; now %s", n, old[n], describe(w.last))
			}
		}
		for _, srv := range w.last.Servers {
			if srv.PID > 0 {
				w.pids[srv.Name] = srv.PID
			}
		}
		for _, n := range slices.Concat(st.replaced, st.removed, st.disabled) {
			waitReaped(t, old[n], n+"'s old process")
		}
	}
	if st.sameTools {
		if got, err := w.s.tools(); err != nil || !slices.Equal(got, toolsBefore) {
			t.Errorf("tools/list changed: %v (%v), want %v", got, err, toolsBefore)
		}
	}
	if st.tools != nil || st.noTools != nil {
		w.s.waitTools(t, st.tools, st.noTools)
	}
	if st.changed.min > 0 {
		w.s.waitChanged(t, before+st.changed.min, "tools/list_changed for the change")
	}
	for _, tool := range st.echo {
		w.s.mustEcho(t, tool, tool+" after "+st.name)
	}
	for _, tool := range st.fails {
		if _, err := w.s.call(tool, map[string]any{"text": "anyone?"}); err == nil {
			t.Errorf("%s succeeded after %s", tool, st.name)
		}
	}
	if st.webKept {
		if n := w.web.opened.Load(); n != w.webOpened {
			t.Errorf("web was reconnected by this change: %d sessions opened, want %d (requests: %s)", n, w.webOpened, w.web.methodCounts())
		}
	}
	if st.check != nil {
		st.check(t, w)
	}
	if c := st.changed; c.set && c.max >= 0 {
		holds(quietWindow, func() bool { return w.s.changed.Load()-before <= c.max })
		if delta := w.s.changed.Load() - before; delta < c.min || delta > c.max {
			t.Errorf("%d tools/list_changed for this change, want %d to %d (the hub coalesces)", delta, c.min, c.max)
		}
	}
	t.Logf("tools/list_changed received during the step: %d", w.s.changed.Load()-before)
}

// startWorld starts the hub over the registry, waits until the servers
// connect, and opens the session once their tools are listed.
func startWorld(t *testing.T, h *procHub, web *httpUpstream, registry string, servers, tools []string) *reloadWorld {
	t.Helper()
	h.write(t, registry)
	w := &reloadWorld{h: h, run: h.startReady(15*time.Second, nil), pids: map[string]int{}}
	w.last = w.h.waitStatus(t, w.run, 15*time.Second, "the servers connect", connected(servers...))
	for _, srv := range w.last.Servers {
		if srv.PID > 0 {
			w.pids[srv.Name] = srv.PID
		}
	}
	// The sessions the hub opened on web are counted before a client
	// connects: a client session must not make the hub reconnect.
	if web != nil {
		w.web, w.webOpened = web, web.opened.Load()
	}
	w.s = connectSDK(t, h.base()+"/mcp", sdkOpts{within: 15 * time.Second})
	w.s.waitTools(t, tools, nil)
	return w
}

// TestReloadLiveRegistry walks one running hub through the registry changes
// a user makes while an IDE stays connected (issue 8): an edit that needs a
// new connection, an added server, an upstream whose tools change, a removed
// server, a broken save and its fix, a crashed child, then status and
// shutdown.
func TestReloadLiveRegistry(t *testing.T) {
	web := startUpstream(t, "web", upstreamOpts{})
	h := newProcHub(t)
	reg := func(aGen string, withB, withC bool) string {
		servers := []string{demoServer(h.bin, "a", "RELOAD_GEN", aGen)}
		if withB {
			servers = append(servers, demoServer(h.bin, "b"))
		}
		if withC {
			servers = append(servers, demoServer(h.bin, "c"))
		}
		return h.registry("", append(servers, remoteServer("web", web.url, `connect_timeout = "10s"`))...)
	}
	write := func(text string) func(t *testing.T, w *reloadWorld) {
		return func(t *testing.T, w *reloadWorld) { h.write(t, text) }
	}
	w := startWorld(t, h, web, reg("1", true, false), []string{"a", "b", "web"},
		[]string{"a__echo", "a__add", "a__countdown", "b__echo", "web__echo"})
	if pa, pb := w.pids["a"], w.pids["b"]; pa <= 0 || pb <= 0 || pa == pb {
		t.Fatalf("stdio servers need distinct PIDs: a=%d b=%d", pa, pb)
	}
	if w.webOpened < 1 {
		t.Fatalf("the hub never opened a session on web (requests: %s)", web.methodCounts())
	}
	w.s.mustEcho(t, "a__echo", "hello a")
	w.s.mustEcho(t, "web__echo", "hello web")
	// A session opened within the hub's coalescing window after the last
	// server connected receives the startup list_changed as well; let it
	// pass before counting.
	if n := steady(quietWindow, 10*time.Second, w.s.changed.Load); n > 1 {
		t.Errorf("a session opened after the servers connected got %d tools/list_changed before any change, want at most the startup one", n)
	}

	runSteps(t, w, []reloadStep{{
		// An env-only change to a: its tools are the same, so at most one
		// list_changed.
		name: "1_env_change_replaces_only_a", do: write(reg("2", true, false)),
		replaced: []string{"a"}, connected: []string{"b", "web"}, kept: []string{"b"},
		echo: []string{"a__echo", "b__echo", "web__echo"}, webKept: true, changed: atMost(1),
	}, {
		name: "2_add_server_c", do: write(reg("2", true, true)),
		connected: []string{"a", "b", "c", "web"}, kept: []string{"a", "b"},
		tools: []string{"c__echo", "c__add", "c__countdown", "a__echo", "b__echo", "web__echo"},
		echo:  []string{"c__echo"}, webKept: true, changed: exactly(1),
		check: func(t *testing.T, w *reloadWorld) {
			if w.pids["c"] <= 0 {
				t.Fatalf("c has no PID")
			}
		},
	}, {
		name: "2b_remote_tool_list_changes", do: func(*testing.T, *reloadWorld) { web.addShout() },
		tools: []string{"web__shout", "web__echo"}, changed: exactly(1),
		check: func(t *testing.T, w *reloadWorld) {
			if got, err := w.s.call("web__shout", map[string]any{"text": "loud"}); err != nil || got != "LOUD" {
				t.Errorf("web__shout: %q, %v", got, err)
			}
		},
	}, {
		name: "3_remove_server_b", do: write(reg("2", false, true)),
		removed: []string{"b"}, tools: []string{"a__echo", "c__echo", "web__echo"}, noTools: []string{"b__echo", "b__add", "b__countdown"},
		echo: []string{"a__echo", "c__echo"}, changed: exactly(1),
		check: func(t *testing.T, w *reloadWorld) {
			_, err := w.s.call("b__echo", map[string]any{"text": "anyone there?"})
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
		},
	}, {
		// An unterminated table header three lines below the good text:
		// the running set stays as it was, and says why, until the fix.
		name: "4_broken_save_keeps_last_good", do: write(reg("2", false, true) + "\n\n[servers.d\ncommand = \"x\"\n"),
		until: func(st *api.Status) error {
			if st.RegistryError == "" {
				return errors.New("no registry_error yet")
			}
			return nil
		},
		connected: []string{"a", "c", "web"}, kept: []string{"a", "c"}, sameTools: true,
		echo: []string{"a__echo"}, changed: exactly(0),
		check: func(t *testing.T, w *reloadWorld) { brokenSaveAndFix(t, w, reg("2", false, true)) },
	}, {
		name: "5_killed_child_restarts_with_backoff", do: killAndWatch,
		replaced: []string{"a"}, tools: []string{"a__echo", "c__echo"}, echo: []string{"c__echo"},
		check: func(t *testing.T, w *reloadWorld) {
			eventually(t, 5*time.Second, "a__echo works again", func() error {
				_, err := w.s.call("a__echo", map[string]any{"text": "a after the crash"})
				return err
			})
		},
	}, {
		name: "6_status_then_sigterm", check: statusThenSIGTERM,
	}})
}

// brokenSaveAndFix checks what a broken save shows, then saves good and
// checks that the fix changes nothing but the error.
func brokenSaveAndFix(t *testing.T, w *reloadWorld, good string) {
	st := w.last
	t.Logf("registry_error: %s", st.RegistryError)
	badLine := strings.Count(good, "\n") + 3
	m := regexp.MustCompile(regexp.QuoteMeta(w.h.cfg) + `:(\d+):(\d+): `).FindStringSubmatch(st.RegistryError)
	switch {
	case m == nil:
		t.Errorf("registry_error %q does not name %s with line:col", st.RegistryError, w.h.cfg)
	case m[1] != fmt.Sprint(badLine):
		t.Errorf("registry_error points at line %s, the broken header is on line %d", m[1], badLine)
	}
	code, out, errOut := w.h.cli(t, nil, "status")
	t.Logf("mcphub status with a broken file: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	if code != 0 {
		t.Errorf("mcphub status exited %d with a broken file; it must still show the running hub", code)
	}
	if !strings.Contains(out, "does not load") || (m != nil && !strings.Contains(out, m[0])) {
		t.Errorf("mcphub status does not print the registry error:\n%s", out)
	}

	w.h.write(t, good)
	st = w.h.waitStatus(t, nil, 10*time.Second, "fixing the file clears registry_error", func(st *api.Status) error {
		if st.RegistryError != "" {
			return errors.New("registry_error is still set")
		}
		return nil
	})
	if a, c := findServer(st, "a"), findServer(st, "c"); a == nil || c == nil || a.PID != w.pids["a"] || c.PID != w.pids["c"] {
		t.Errorf("fixing the file changed PIDs: %s (want a=%d c=%d)", describe(st), w.pids["a"], w.pids["c"])
	}
	code, out, _ = w.h.cli(t, nil, "status")
	if code != 0 || strings.Contains(out, "does not load") {
		t.Errorf("mcphub status after the fix: exit %d\n%s", code, out)
	}
}

// killAndWatch kills a's process and watches /readyz until a is back with a
// new process: it must show a restarting in between, come back no sooner
// than the first backoff, count the restart, and answer a call made while
// it is down at once.
func killAndWatch(t *testing.T, w *reloadWorld) {
	pidA := w.pids["a"]
	st, err := w.h.status()
	if err != nil {
		t.Fatal(err)
	}
	restartsBefore := findServer(st, "a").Restarts
	killed := time.Now()
	if err := killPID(pidA); err != nil {
		t.Fatalf("kill a (pid %d): %v", pidA, err)
	}
	var (
		calledDuring bool
		states       []string
		back         time.Time
		final        *api.ServerStatus
	)
	eventually(t, 10*time.Second, "a reconnects after the kill", func() error {
		st, err := w.h.status()
		if err != nil {
			t.Fatal(err)
		}
		a := findServer(st, "a")
		if len(states) == 0 || states[len(states)-1] != a.State {
			states = append(states, a.State)
		}
		if a.State == api.StateRestarting && !calledDuring {
			// A call while a is down must fail at once and say why, or
			// succeed if a came back meanwhile; it must not hang.
			calledDuring = true
			start := time.Now()
			_, err := w.s.call("a__echo", map[string]any{"text": "while restarting"})
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
		if a.State == api.StateConnected && a.PID > 0 && a.PID != pidA {
			back, final = time.Now(), a
			return nil
		}
		return fmt.Errorf("states seen: %v", states)
	})
	gap := back.Sub(killed)
	t.Logf("a: killed pid %d; states seen %v; connected again as pid %d after %s, restarts %d → %d, last_error %q",
		pidA, states, final.PID, gap.Round(time.Millisecond), restartsBefore, final.Restarts, final.LastError)
	if !slices.Contains(states, api.StateRestarting) {
		t.Errorf("/readyz never showed a as %s between the kill and the reconnection (saw %v)", api.StateRestarting, states)
	}
	if final.Restarts < restartsBefore+1 {
		t.Errorf("a reconnected with restarts = %d, want ≥ %d", final.Restarts, restartsBefore+1)
	}
	if gap < 300*time.Millisecond {
		t.Errorf("a was back %s after the kill; the first reconnect waits 0.5 s ±25%%", gap)
	}
}

// statusThenSIGTERM checks `mcphub status` against the running hub, stops
// the hub with SIGTERM, and checks that it stopped cleanly, took its
// children with it, and that status then says no hub runs.
func statusThenSIGTERM(t *testing.T, w *reloadWorld) {
	code, out, errOut := w.h.cli(t, nil, "status")
	t.Logf("mcphub status: exit %d\n%s%s", code, out, errOut)
	if code != 0 {
		t.Errorf("mcphub status exited %d against a running hub", code)
	}
	for _, n := range []string{"a", "c", "web"} {
		if !statusLine(out, n, api.StateConnected) {
			t.Errorf("mcphub status does not list %s as %s", n, api.StateConnected)
		}
	}
	if statusLine(out, "b", "") {
		t.Errorf("mcphub status still lists the removed server b")
	}

	if runtime.GOOS == "windows" {
		t.Skip("Windows has no SIGTERM for a console process (termPID terminates it), so a clean shutdown cannot be asked for by PID")
	}
	w.s.mustEcho(t, "a__echo", "last call")
	stopped := time.Now()
	if err := termPID(w.run.pid()); err != nil {
		t.Fatal(err)
	}
	if !w.run.waitExit(10 * time.Second) {
		t.Fatalf("mcphub serve did not exit within 10 s of SIGTERM (an SDK client session was open)")
	}
	t.Logf("mcphub serve exited %v after SIGTERM: %v", time.Since(stopped).Round(time.Millisecond), w.run.werr)
	if w.run.werr != nil {
		t.Errorf("mcphub serve exited with %v after SIGTERM, want status 0", w.run.werr)
	}
	if !strings.Contains(w.run.stdout.String(), "mcphub stopped") {
		t.Errorf("mcphub serve did not say it stopped:\n%s", w.run.stdout.String())
	}
	for _, name := range []string{"a", "c"} {
		if pid := w.pids[name]; !pidGone(pid) {
			t.Errorf("%s's process (pid %d) outlived the hub", name, pid)
		}
	}

	code, out, errOut = w.h.cli(t, nil, "status")
	t.Logf("mcphub status after the hub stopped: exit %d\n%s%s", code, out, errOut)
	if code != 1 {
		t.Errorf("mcphub status exited %d with no hub running, want 1", code)
	}
	if want := "no mcphub is running at " + w.h.addr; !strings.Contains(out+errOut, want) {
		t.Errorf("mcphub status does not say %q", want)
	}
}

// statusLine reports whether `mcphub status` output has a row for server
// name, in the given state unless state is "".
func statusLine(out, name, state string) bool {
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
	h := newProcHub(t)
	w := startWorld(t, h, nil, h.registry("", demoServer(h.bin, "a"), demoServer(h.bin, "b")), []string{"a", "b"},
		[]string{"a__echo", "b__echo"})
	// command runs a control command that must succeed and print want.
	command := func(want string, args ...string) func(t *testing.T, w *reloadWorld) {
		return func(t *testing.T, w *reloadWorld) {
			if code, out, errOut := w.h.cli(t, nil, args...); code != 0 || !strings.Contains(out, want) {
				t.Fatalf("mcphub %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
			}
		}
	}
	runSteps(t, w, []reloadStep{{
		name: "restart", do: command("restarting a", "restart", "a"),
		replaced: []string{"a"}, kept: []string{"b"}, echo: []string{"a__echo", "b__echo"},
		check: func(t *testing.T, w *reloadWorld) {
			if code, out, errOut := w.h.cli(t, nil, "restart", "nope"); code != 1 || !strings.Contains(errOut, `the hub refused: unknown server: "nope"`) {
				t.Errorf("mcphub restart nope: exit %d, want 1 with the hub's refusal as a sentence\n%s%s", code, out, errOut)
			}
		},
	}, {
		name: "disable", do: command("", "disable", "a"),
		disabled: []string{"a"}, kept: []string{"b"}, tools: []string{"b__echo"}, noTools: []string{"a__echo"},
		fails: []string{"a__echo"}, echo: []string{"b__echo"}, changed: atLeast(1),
	}, {
		name: "enable", do: command("", "enable", "a"),
		replaced: []string{"a"}, connected: []string{"b"}, tools: []string{"a__echo", "b__echo"},
		echo: []string{"a__echo"}, changed: atLeast(1),
	}})
}
