package main

// `mcphub stdio` as a process, against `mcphub serve` processes: a hub
// restart between two calls is invisible to the client, and a hub is
// started in the background when none runs.

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/internal/filelock"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/stdioface"
)

// TestStdioFaceHubRestart: the hub is killed (SIGKILL, by its PID) between
// two calls and started again on the same address and data directory; the
// next call succeeds on the same hub session, and stdin's end makes
// `mcphub stdio` exit 0 and end that session.
func TestStdioFaceHubRestart(t *testing.T) {
	h := newProcHub(t)
	h.write(t, h.registry("", childServer(t, "a", childOpts{lines: `connect_timeout = "20s"`})))
	run := h.start(nil, "--log-level", "debug")
	h.waitStatus(t, run, 20*time.Second, "a connects", connected("a"))

	p := startStdioProc(t, h, samplingAnswer("face"))
	p.initialize()
	if got := p.tool("a__echo", map[string]any{"text": "one"}); got != "a:one" {
		t.Fatalf("a__echo = %q, want a:one", got)
	}
	before, err := hubSessions(h.base(), "")
	if err != nil || len(before) != 1 {
		t.Fatalf("sessions before the restart: %+v, %v; want the face's one", before, err)
	}

	// Calls in flight when the hub dies: their stdio upstream dies with
	// the hub, so they cannot succeed, but each must be answered. One that
	// has streamed progress has a resumable SSE stream, and the restarted
	// hub answers it there, through the face's resumed session; the other's
	// answer may have been one JSON body, and is then lost.
	streamed := p.send(900, "tools/call", progressCall("a__slow_progress", map[string]any{"n": 1000, "delay_ms": 20, "tag": "k1"}, "tok-k1"))
	plain := p.send(902, "tools/call", map[string]any{"name": "a__block", "arguments": map[string]any{"tag": "k2"}})
	if !poll(10*time.Second, func() bool {
		notes, _ := p.messages(func(m *jsonrpc.Message) bool { n, ok := progressOf(m); return ok && n.Token == "tok-k1" })
		return len(notes) > 0 && slices.Contains(p.state("a__state").Inflight, "k2")
	}) {
		t.Fatal("the calls never reached the upstream")
	}

	run.kill9(t)
	// A request made while no hub runs waits for the hub to come back.
	// (ping, which the hub answers itself: a tool call could find the
	// restarted hub's server still connecting.)
	whileDown := p.send(901, "ping", map[string]any{})
	run = h.start(nil, "--log-level", "debug")
	if m := p.await(whileDown, 30*time.Second, "the ping made while the hub was down"); m.Error != nil {
		t.Errorf("the ping made while the hub was down failed: %s", m.Encode())
	}
	h.waitStatus(t, run, 20*time.Second, "a connects again", connected("a"))
	const lost = "the hub restarted while this request was in flight"
	if m := p.await(streamed, 30*time.Second, "the streamed call in flight when the hub died"); m.Error == nil || strings.Contains(m.Error.Message, lost) {
		t.Errorf("the streamed call in flight when the hub died: %s, want the restarted hub's error on the resumed stream", m.Encode())
	}
	if m := p.await(plain, 30*time.Second, "the plain call in flight when the hub died"); m.Error == nil {
		t.Errorf("the plain call in flight when the hub died: %s, want an error", m.Encode())
	}

	if got := p.tool("a__echo", map[string]any{"text": "two"}); got != "a:two" {
		t.Fatalf("a__echo after the restart = %q, want a:two", got)
	}
	if got := p.tool("a__sample", map[string]any{"prompt": "after"}); got != "sampled:face|after" {
		t.Errorf("a__sample after the restart = %q, want sampled:face|after", got)
	}
	after, err := hubSessions(h.base(), "")
	if err != nil || sessionIDs(after) != sessionIDs(before) {
		t.Errorf("sessions after the restart: %s (%v), want the same one: %s", sessionIDs(after), err, sessionIDs(before))
	}
	if code := p.exitCode(t); code != 0 {
		t.Errorf("mcphub stdio exited %d at stdin's end, want 0", code)
	}
	eventually(t, 5*time.Second, "the face's session is ended", func() error {
		ss, err := hubSessions(h.base(), "")
		if err == nil && len(ss) > 0 {
			err = fmt.Errorf("sessions %s", sessionIDs(ss))
		}
		return err
	})
	if bad := p.badLines(); len(bad) > 0 {
		t.Errorf("stdout lines that are not one JSON-RPC message: %q", bad)
	}
}

// TestStdioFaceStartsHub: with no hub running, two `mcphub stdio` started
// at once race to start one in the background on the same registry and data
// directory; one hub results, exactly one face says on stderr that it
// started it, with its PID, and both relay to it. The hub outlives the
// faces, which end their sessions at stdin's end and on SIGTERM, and the
// test stops it by the PID in its run file.
func TestStdioFaceStartsHub(t *testing.T) {
	h := newProcHub(t)
	h.write(t, h.registry("", childServer(t, "a", childOpts{lines: `connect_timeout = "20s"`})))
	var hubPID int
	t.Cleanup(func() { // runs after the face's cleanup
		if hubPID <= 0 {
			return
		}
		termPID(hubPID)
		if gone, _ := waitProcGone(hubPID, 10*time.Second); !gone {
			killPID(hubPID)
			waitProcGone(hubPID, 5*time.Second)
		}
	})
	p, q := startStdioProc(t, h, nil), startStdioProc(t, h, nil)
	p.initialize()
	q.initialize()
	info, err := hubclient.ReadRunInfo(h.data)
	if err != nil {
		t.Fatalf("no hub recorded in the data directory after initialize: %v\nstderr:\n%s", err, p.stderr.String())
	}
	hubPID = info.PID
	said := regexp.MustCompile(`started a hub in the background \(pid (\d+)\)`)
	var lines []string
	for _, f := range []*stdioProc{p, q} {
		for _, m := range said.FindAllStringSubmatch(f.stderr.String(), -1) {
			lines = append(lines, m[1])
		}
	}
	if !slices.Equal(lines, []string{strconv.Itoa(hubPID)}) {
		t.Errorf("the faces said they started hubs %v, want once the hub with pid %d:\n%s\n%s", lines, hubPID, p.stderr.String(), q.stderr.String())
	}
	h.waitStatus(t, nil, 20*time.Second, "a connects", connected("a"))
	for i, f := range []*stdioProc{p, q} {
		if names := f.tools(); !slices.Contains(names, "a__echo") {
			t.Errorf("face %d: tools/list = %v, want a__echo", i, names)
		}
		if got := f.tool("a__echo", map[string]any{"text": "auto"}); got != "a:auto" {
			t.Errorf("face %d: a__echo = %q, want a:auto", i, got)
		}
	}
	// One face ends at stdin's end, the other on SIGTERM; both end their
	// hub sessions.
	if code := p.exitCode(t); code != 0 {
		t.Errorf("mcphub stdio exited %d at stdin's end, want 0", code)
	}
	if code := q.termCode(t); code != 0 {
		t.Errorf("mcphub stdio exited %d on SIGTERM, want 0", code)
	}
	eventually(t, 5*time.Second, "the faces' sessions are ended", func() error {
		ss, err := hubSessions(h.base(), "")
		if err == nil && len(ss) > 0 {
			err = fmt.Errorf("sessions %s", sessionIDs(ss))
		}
		return err
	})
	if _, err := h.status(); err != nil || pidGone(hubPID) {
		t.Errorf("the hub did not outlive the face: %v", err)
	}
	var st *api.Status
	if st, err = h.status(); err == nil && findServer(st, "a") == nil {
		t.Errorf("the started hub does not serve the registry: %s", describe(st))
	}
}

// TestStdioFaceTLSToken: a hub that serves HTTPS and wants a bearer token is
// reached over HTTPS, trusting exactly its certificate, with the token from
// the registry; the token never shows on stderr, even at debug level.
func TestStdioFaceTLSToken(t *testing.T) {
	h := newProcHub(t)
	certPath, keyPath, pool := writeTestCert(t, h.home)
	const token = "stdio-tls-token-0123456789abcdef"
	tokenPath := filepath.Join(h.home, "token")
	if err := os.WriteFile(tokenPath, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.write(t, h.registry(fmt.Sprintf("auth = \"token\"\ntoken_file = %q\ntls_cert = %q\ntls_key = %q", tokenPath, certPath, keyPath),
		childServer(t, "a", childOpts{lines: `connect_timeout = "20s"`})))
	run := h.start(nil, "--log-level", "debug")
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: bearer{token, tr}}
	eventually(t, 20*time.Second, "the hub is ready over HTTPS", func() error {
		if !run.running() {
			t.Fatalf("mcphub serve exited: %v", run.werr)
		}
		resp, err := hc.Get("https://" + h.addr + "/readyz")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var st api.Status
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			return err
		}
		return connected("a")(&st)
	})

	p := startStdioProc(t, h, nil)
	p.initialize()
	if got := p.tool("a__echo", map[string]any{"text": "tls"}); got != "a:tls" {
		t.Errorf("a__echo over HTTPS = %q, want a:tls", got)
	}
	if code := p.exitCode(t); code != 0 {
		t.Errorf("mcphub stdio exited %d at stdin's end, want 0", code)
	}
	if strings.Contains(p.stderr.String(), token) {
		t.Errorf("the token shows on stderr:\n%s", p.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(h.data, stdioface.ServeLogName)); err == nil {
		t.Errorf("a second hub was started although one answered over HTTPS")
	}
}

// TestStdioFaceHubFailsToStart: when the hub it starts exits at once (here
// the data directory is held by a process that records no hub), `mcphub
// stdio` exits 1 and shows the end of serve.log, which says why.
func TestStdioFaceHubFailsToStart(t *testing.T) {
	h := newProcHub(t)
	h.write(t, h.registry("", childServer(t, "a", childOpts{})))
	if err := os.MkdirAll(h.data, 0o700); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(h.data, hubclient.RunFileName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := filelock.TryLock(lock); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := h.cli(t, nil, "stdio")
	if code != 1 || stdout != "" || !strings.Contains(stderr, "exited") || !strings.Contains(stderr, "the data directory is in use") {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant 1, nothing, and serve.log's reason", code, stdout, stderr)
	}
}
