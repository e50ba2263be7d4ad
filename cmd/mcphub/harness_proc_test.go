package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/store"
)

// ---------------------------------------------------------------------------
// Processes: /proc (Linux) and waiting for a PID to go.

// procStat reads a process's state, parent and group from /proc/PID/stat.
func procStat(pid int) (state byte, ppid, pgrp int, err error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	// The fields follow the parenthesised command name, which may itself
	// hold spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[i+1:])) // state ppid pgrp …
	if i < 0 || len(f) < 3 {
		return 0, 0, 0, fmt.Errorf("/proc/%d/stat: %q", pid, stat)
	}
	ppid, _ = strconv.Atoi(f[1])
	pgrp, _ = strconv.Atoi(f[2])
	return f[0][0], ppid, pgrp, nil
}

// procGone reports whether a process has exited: no such PID, or a zombie.
// A stdio child outlives its parent only by being reparented to PID 1, and
// when PID 1 does not reap orphans (as in some containers) the exited child
// stays a zombie forever; it runs no code, so it counts as gone. Only Linux
// has /proc to tell a zombie from a running process; elsewhere a PID that
// pidGone does not report gone counts as running.
func procGone(pid int) (gone bool, how string) {
	if pidGone(pid) {
		return true, "ESRCH"
	}
	if runtime.GOOS != "linux" {
		return false, "running"
	}
	state, _, _, err := procStat(pid)
	switch {
	case err != nil:
		return errors.Is(err, os.ErrNotExist), "no /proc entry"
	case state == 'Z':
		return true, "zombie (exited; PID 1 has not reaped it)"
	}
	return false, "running"
}

// waitProcGone polls procGone.
func waitProcGone(pid int, within time.Duration) (gone bool, how string) {
	gone = poll(within, func() bool {
		var g bool
		g, how = procGone(pid)
		return g
	})
	return gone, how
}

// waitReaped fails the test unless pid is gone for good within 5 s: exited
// and reaped by its parent (a zombie does not count).
func waitReaped(t testing.TB, pid int, what string) {
	t.Helper()
	if pid <= 0 {
		t.Fatalf("%s: no PID to check", what)
	}
	eventually(t, 5*time.Second, fmt.Sprintf("%s (pid %d) is gone", what, pid), func() error {
		if pidGone(pid) {
			return nil
		}
		return errors.New("kill(pid, 0) still succeeds")
	})
}

// procEnviron reads a process's initial environment from /proc.
func procEnviron(t testing.TB, pid int) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatalf("read the environment of %d: %v", pid, err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

// openFDs counts this process's open file descriptors; the test is skipped
// where /proc cannot tell.
func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// logBuffer collects what a hub or a process writes, for a test to search
// and to print when it fails. With keep > 0 it holds only the last keep
// writes and counts them all, so that a long soak does not fill memory.
type logBuffer struct {
	mu    sync.Mutex
	keep  int
	n     int
	text  []byte
	lines []string
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	if l.keep == 0 {
		l.text = append(l.text, p...)
		return len(p), nil
	}
	l.lines = append(l.lines, strings.TrimSpace(string(p)))
	if len(l.lines) > l.keep {
		l.lines = l.lines[1:]
	}
	return len(p), nil
}

// writes counts every write so far.
func (l *logBuffer) writes() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keep == 0 {
		return string(l.text)
	}
	return fmt.Sprintf("%d writes; last: %q", l.n, l.lines)
}

// ---------------------------------------------------------------------------
// A real `mcphub serve`.

var mcphubBuild struct {
	once sync.Once
	path string
	err  error
}

// mcphubBinary builds ./cmd/mcphub once per test process, into a directory
// keyed by this source tree so that repeated runs reuse it (go build only
// rewrites it when the sources changed).
func mcphubBinary(t testing.TB) string {
	t.Helper()
	mcphubBuild.once.Do(func() {
		wd, err := os.Getwd()
		if err != nil {
			mcphubBuild.err = err
			return
		}
		sum := sha256.Sum256([]byte(wd))
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("mcphub-e2e-bin-%d-%x", os.Getuid(), sum[:6]))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			mcphubBuild.err = err
			return
		}
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		out := filepath.Join(dir, "mcphub")
		// One retry: other builds sharing the build cache can make a
		// first attempt fail spuriously.
		for range 2 {
			b, err := exec.Command(goTool, "build", "-o", out, ".").CombinedOutput()
			if err == nil {
				mcphubBuild.path, mcphubBuild.err = out, nil
				return
			}
			mcphubBuild.err = fmt.Errorf("go build: %v\n%s", err, b)
		}
	})
	if mcphubBuild.err != nil {
		t.Fatal(mcphubBuild.err)
	}
	return mcphubBuild.path
}

// freeAddr returns a loopback address whose port was free a moment ago; a
// process hub listens there on every run, so that a client finds it again
// after a restart, and a test may use it as a dead address too.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// procHub is the home of a real `mcphub serve`: its registry, data
// directory and port outlive every run of the process, so a test can kill
// it and start it again on the same state.
type procHub struct {
	t     *testing.T
	bin   string
	home  string // $HOME of the hub and of every command run against it
	cfg   string // $MCPHUB_CONFIG, where the default under XDG_CONFIG_HOME is
	data  string // $MCPHUB_DATA
	addr  string // [hub] listen
	token string // the bearer token status requests carry, when the hub wants one
	// storeURL is the PostgreSQL store the test gives the hub with
	// --store; "" for SQLite in data.
	storeURL string
	runs     []*hubRun
}

// hubRun is one run of `mcphub serve`.
type hubRun struct {
	cmd    *exec.Cmd
	stdout logBuffer
	out    logBuffer // stdout and stderr, as they came
	exited chan struct{}
	werr   error // cmd.Wait's result, set before exited is closed
}

// newProcHub makes the directories and picks the port; write a registry,
// then start. When the test fails, every run's output is logged.
func newProcHub(t *testing.T) *procHub {
	t.Helper()
	home := t.TempDir()
	h := &procHub{t: t, bin: mcphubBinary(t), home: home,
		cfg: filepath.Join(home, "config", "mcphub", "hub.toml"), data: filepath.Join(home, "data"), addr: freeAddr(t)}
	if err := os.MkdirAll(filepath.Dir(h.cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, r := range h.runs {
				t.Logf("mcphub serve run %d output:\n%s", i+1, r.out.String())
			}
		}
	})
	return h
}

func (h *procHub) base() string { return "http://" + h.addr }

// registry is a registry that listens on the hub's port, with more [hub]
// keys and the servers' tables.
func (h *procHub) registry(hubKeys string, servers ...string) string {
	return fmt.Sprintf("[hub]\nlisten = %q\n%s\n\n%s", h.addr, hubKeys, strings.Join(servers, ""))
}

// write replaces the registry the way editors save: a temporary file in the
// same directory, then a rename over the original.
func (h *procHub) write(t testing.TB, text string) {
	t.Helper()
	tmp, err := os.CreateTemp(filepath.Dir(h.cfg), ".hub.toml.*")
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmp.WriteString(text)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), h.cfg)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// env is the environment of the hub and of every command run against it:
// this one without mcphub's own variables (a stray MCPHUB_TEST_CHILD would
// make a child of the hub something else), with a private home, then extra.
func (h *procHub) env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "MCPHUB_") || strings.HasPrefix(k, "XDG_") || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+h.home, "XDG_CONFIG_HOME="+filepath.Join(h.home, "config"),
		"XDG_DATA_HOME="+filepath.Join(h.home, "share"), "MCPHUB_CONFIG="+h.cfg, "MCPHUB_DATA="+h.data)
	return append(env, extra...)
}

// start runs `mcphub serve` with extra environment and flags, and does not
// wait for it to answer. Cleanup stops it by its PID.
func (h *procHub) start(env []string, flags ...string) *hubRun {
	h.t.Helper()
	r := &hubRun{exited: make(chan struct{})}
	r.cmd = exec.Command(h.bin, append([]string{"serve"}, flags...)...)
	r.cmd.Dir = h.home
	r.cmd.Env = h.env(env...)
	r.cmd.Stdout = io.MultiWriter(&r.stdout, &r.out)
	r.cmd.Stderr = &r.out
	if err := r.cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	go func() {
		r.werr = r.cmd.Wait()
		close(r.exited)
	}()
	h.runs = append(h.runs, r)
	h.t.Cleanup(r.stop)
	return r
}

// startReady is start that waits until the hub answers /readyz.
func (h *procHub) startReady(within time.Duration, env []string, flags ...string) *hubRun {
	h.t.Helper()
	r := h.start(env, flags...)
	h.waitStatus(h.t, r, within, "the hub answers /readyz", func(*api.Status) error { return nil })
	return r
}

func (r *hubRun) pid() int { return r.cmd.Process.Pid }

func (r *hubRun) running() bool {
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// waitExit reports whether the process exits within d.
func (r *hubRun) waitExit(d time.Duration) bool {
	select {
	case <-r.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// kill9 kills the hub with SIGKILL and waits until it is reaped.
func (r *hubRun) kill9(t testing.TB) {
	t.Helper()
	if err := killPID(r.pid()); err != nil {
		t.Fatalf("kill -9 %d: %v", r.pid(), err)
	}
	if !r.waitExit(10 * time.Second) {
		t.Fatalf("mcphub serve (pid %d) survived SIGKILL for 10 s", r.pid())
	}
}

// stop ends the process by its PID: SIGTERM, then SIGKILL if it is still
// there after 10 s.
func (r *hubRun) stop() {
	if !r.running() {
		return
	}
	termPID(r.pid())
	if !r.waitExit(10 * time.Second) {
		killPID(r.pid())
		<-r.exited
	}
}

// status fetches /readyz once.
func (h *procHub) status() (*api.Status, error) {
	return readyzOf(h.base(), h.token)
}

// waitStatus polls /readyz until cond accepts it (cond says why not), and
// fails at once if run (when given) has exited.
func (h *procHub) waitStatus(t testing.TB, r *hubRun, within time.Duration, what string, cond func(*api.Status) error) *api.Status {
	t.Helper()
	var got *api.Status
	eventually(t, within, what, func() error {
		if r != nil && !r.running() {
			t.Fatalf("%s: mcphub serve exited: %v", what, r.werr)
		}
		st, err := h.status()
		if err != nil {
			return err
		}
		if err := cond(st); err != nil {
			return fmt.Errorf("%w; /readyz: %s", err, describe(st))
		}
		got = st
		return nil
	})
	return got
}

// cli runs the mcphub binary with the hub's environment and extra.
func (h *procHub) cli(t testing.TB, extra []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Env = h.env(extra...)
	cmd.Dir = h.home
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("mcphub %s: %v", strings.Join(args, " "), err)
	}
	return code, out.String(), errb.String()
}

// logStored logs what a dead hub left in its store for a server: the
// upstream connection state a restart resumes and the in-flight calls.
func (h *procHub) logStored(server string) {
	h.t.Helper()
	var db *store.Store
	var err error
	if h.storeURL != "" {
		db, err = store.OpenURL(context.Background(), h.storeURL)
	} else {
		db, err = store.Open(h.data)
	}
	if err != nil {
		h.t.Logf("open the store: %v", err)
		return
	}
	defer db.Close()
	state, err := db.Upstream(server)
	h.t.Logf("stored upstream state of %s: %s (err %v)", server, short(state), err)
	calls, err := db.Calls()
	h.t.Logf("stored in-flight calls: %+v (err %v)", calls, err)
}

// ---------------------------------------------------------------------------
// Status.

// readyzOf fetches base/readyz once, with the bearer token unless it is "".
func readyzOf(base, token string) (*api.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/readyz: HTTP %d: %s", resp.StatusCode, body)
	}
	var st api.Status
	if err := json.Unmarshal(body, &st); err != nil {
		return nil, fmt.Errorf("/readyz: %v: %s", err, body)
	}
	return &st, nil
}

// findServer returns one server of a status, nil if it is not listed.
func findServer(st *api.Status, name string) *api.ServerStatus {
	for i := range st.Servers {
		if st.Servers[i].Name == name {
			return &st.Servers[i]
		}
	}
	return nil
}

// connected accepts a status in which every named server is connected with
// at least one tool.
func connected(names ...string) func(*api.Status) error {
	return func(st *api.Status) error {
		for _, n := range names {
			s := findServer(st, n)
			if s == nil {
				return fmt.Errorf("server %s is not listed", n)
			}
			if s.State != api.StateConnected || s.Tools == 0 {
				return fmt.Errorf("server %s is %s with %d tools (%s)", n, s.State, s.Tools, s.LastError)
			}
		}
		return nil
	}
}

// describe prints a status on one line for failure messages.
func describe(st *api.Status) string {
	var parts []string
	for _, s := range st.Servers {
		parts = append(parts, fmt.Sprintf("%s=%s(pid %d, tools %d, restarts %d, err %q)", s.Name, s.State, s.PID, s.Tools, s.Restarts, s.LastError))
	}
	if st.RegistryError != "" {
		parts = append(parts, "registry_error="+st.RegistryError)
	}
	return strings.Join(parts, " ")
}
