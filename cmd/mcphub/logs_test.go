package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/logfile"
	"github.com/mcphub/mcphub/logfile/logfiletest"
)

// runLogsCmd runs `mcphub --data-dir dataDir logs args...` in this process.
func runLogsCmd(t *testing.T, dataDir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLI(t, append([]string{"--data-dir", dataDir, "logs"}, args...)...)
}

// A line that is not JSON is printed as it is; --json prints raw lines.
func TestLogsPrinter(t *testing.T) {
	var out bytes.Buffer
	p := &logPrinter{w: &out}
	p.print([]byte("panic: runtime error"))
	p.print([]byte(`{"time":"2026-11-25T10:00:00Z","level":"INFO","msg":"m","server":"abc"}`))
	p.print([]byte(`{"time":"2026-11-25T10:00:00Z","level":"INFO","msg":"hub"}`))
	want := "panic: runtime error\n2026-11-25T10:00:00.000Z INFO  abc  m\n2026-11-25T10:00:00.000Z INFO       hub\n"
	if out.String() != want {
		t.Errorf("printed:\n%s\nwant:\n%s", out.String(), want)
	}
	out.Reset()
	(&logPrinter{w: &out, json: true}).print([]byte(`{"msg":"m"}`))
	if out.String() != "{\"msg\":\"m\"}\n" {
		t.Errorf("--json printed %q", out.String())
	}
}

func TestLogsServerFilter(t *testing.T) {
	data := t.TempDir()
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	logfiletest.WriteFiles(t, logfile.Dir(data), map[string][]string{
		"hub-2026-11-25T10-00-10.000.log.gz": {
			logfiletest.Record(t0, "WARN", "github", "old github line", "stream", "stderr"),
		},
		"hub.log": {
			logfiletest.Record(t0.Add(20*time.Second), "INFO", "", "hub line"),
			logfiletest.Record(t0.Add(21*time.Second), "WARN", "github", "github line", "stream", "stderr"),
			"not json at all",
			logfiletest.Record(t0.Add(22*time.Second), "WARN", "flaky", "flaky line", "stream", "stderr"),
			logfiletest.Record(t0.Add(23*time.Second), "INFO", "github", "server replaced"),
		},
	})
	code, out, errOut := runLogsCmd(t, data, "github")
	want := "2026-11-25T10:00:00.000Z WARN  github  old github line stream=stderr\n" +
		"2026-11-25T10:00:21.000Z WARN  github  github line stream=stderr\n" +
		"2026-11-25T10:00:23.000Z INFO  github  server replaced\n"
	if code != 0 || out != want || errOut != "" {
		t.Errorf("logs github: exit %d\n%s\nwant:\n%s\nstderr: %s", code, out, want, errOut)
	}
	code, out, _ = runLogsCmd(t, data, "flaky", "--json")
	if code != 0 || out != logfiletest.Record(t0.Add(22*time.Second), "WARN", "flaky", "flaky line", "stream", "stderr")+"\n" {
		t.Errorf("logs flaky --json: exit %d\n%s", code, out)
	}
	code, out, errOut = runLogsCmd(t, data, "githb")
	if code != 1 || out != "" || !strings.Contains(errOut, `no log records for server "githb"; servers with records: flaky, github`) {
		t.Errorf("logs githb: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	// A server with records, none of them recent: nothing, and no error.
	code, out, errOut = runLogsCmd(t, data, "flaky", "--since", "1m")
	if code != 0 || out != "" || errOut != "" {
		t.Errorf("logs flaky --since 1m: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

// -n reaches back through the rotated files, oldest first, whether gzipped
// or not; a backup being compressed (both .log and .log.gz) counts once.
func TestLogsLastNAcrossRotatedBackup(t *testing.T) {
	data := t.TempDir()
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	rec := func(i int) string {
		return logfiletest.Record(t0.Add(time.Duration(i)*time.Second), "INFO", "", fmt.Sprintf("record %d", i))
	}
	compressing := []string{rec(3), rec(4)}
	logfiletest.WriteFiles(t, logfile.Dir(data), map[string][]string{
		"hub-2026-11-25T10-00-02.500.log.gz": {rec(1), rec(2)},
		"hub-2026-11-25T10-00-04.500.log":    compressing,
		"hub-2026-11-25T10-00-04.500.log.gz": compressing[:1], // half written
		"hub.log":                            {rec(5), rec(6)},
		"other.log":                          {"not the hub's"},
	})
	msgs := func(out string) []string {
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			_, msg, _ := strings.Cut(l, "INFO  ")
			got = append(got, msg)
		}
		return got
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "3"}, "record 4,record 5,record 6"},
		{[]string{"-n", "5"}, "record 2,record 3,record 4,record 5,record 6"},
		{nil, "record 1,record 2,record 3,record 4,record 5,record 6"},
		{[]string{"-n", "1"}, "record 6"},
	} {
		code, out, errOut := runLogsCmd(t, data, tc.args...)
		if got := strings.Join(msgs(out), ","); code != 0 || got != tc.want {
			t.Errorf("logs %v: exit %d, records %s, want %s\n%s", tc.args, code, got, tc.want, errOut)
		}
	}
	code, out, _ := runLogsCmd(t, data, "-n", "0")
	if code != 0 || out != "" {
		t.Errorf("logs -n 0: exit %d\n%s", code, out)
	}
}

func TestLogsSince(t *testing.T) {
	data := t.TempDir()
	now := time.Now()
	old, recent := now.Add(-2*time.Hour), now.Add(-5*time.Minute)
	logfiletest.WriteFiles(t, logfile.Dir(data), map[string][]string{
		// Rotated out before the window: not even read.
		"hub-" + old.Add(time.Minute).UTC().Format(logfile.BackupTime) + ".log.gz": {logfiletest.Record(old, "INFO", "", "two hours ago")},
		"hub.log": {
			logfiletest.Record(old.Add(2*time.Minute), "INFO", "", "still old"),
			"old trailing line",
			logfiletest.Record(recent, "INFO", "", "five minutes ago"),
			"recent trailing line",
		},
	})
	code, out, _ := runLogsCmd(t, data, "--since", "10m")
	if code != 0 || strings.Contains(out, "old") || !strings.Contains(out, "five minutes ago") || !strings.Contains(out, "recent trailing line\n") {
		t.Errorf("logs --since 10m: exit %d\n%s", code, out)
	}
	code, out, _ = runLogsCmd(t, data, "--since", "3h")
	if code != 0 || strings.Count(out, "\n") != 5 {
		t.Errorf("logs --since 3h (every record, past -n's default): exit %d\n%s", code, out)
	}
	code, out, _ = runLogsCmd(t, data, "--since", "3h", "-n", "1")
	if code != 0 || out != "recent trailing line\n" {
		t.Errorf("logs --since 3h -n 1: exit %d\n%s", code, out)
	}
	code, _, errOut := runLogsCmd(t, data, "--since", "-1m")
	if code != 1 || !strings.Contains(errOut, "--since") || !strings.Contains(errOut, "want a positive duration") {
		t.Errorf("logs --since -1m: exit %d: %s", code, errOut)
	}
	code, _, errOut = runLogsCmd(t, data, "--since", "2d")
	if code != 1 || !strings.Contains(errOut, `"2d" for "--since"`) || !strings.Contains(errOut, "want a duration such as 30s, 10m or 48h") || strings.Contains(errOut, "unknown unit") {
		t.Errorf("logs --since 2d: exit %d: %s", code, errOut)
	}
}

func TestLogsNoLogDir(t *testing.T) {
	data := t.TempDir()
	dir := filepath.Join(data, "logs")
	code, out, errOut := runLogsCmd(t, data)
	want := fmt.Sprintf("mcphub: no logs yet in %s: start the hub with mcphub serve\n", dir)
	if code != 1 || out != "" || errOut != want {
		t.Errorf("logs without a log: exit %d\nstdout: %s\nstderr: %s\nwant: %s", code, out, errOut, want)
	}
}

// waitOutput waits until the buffer holds want.
func waitOutput(t *testing.T, out *logBuffer, want string) {
	t.Helper()
	eventually(t, 10*time.Second, fmt.Sprintf("the output shows %q", want), func() error {
		if strings.Contains(out.String(), want) {
			return nil
		}
		return fmt.Errorf("output so far:\n%s", out.String())
	})
}

// logs -f prints the last records, then each one as the hub appends it,
// through rotations: the rest of the renamed file first, then the new one,
// each record once and in order.
func TestLogsFollowAcrossRotation(t *testing.T) {
	data := t.TempDir()
	w, err := logfile.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	log := slog.New(slog.NewJSONHandler(w, nil))
	log.Info("before follow")
	log.With("server", "flaky").Info("not github's")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut := &logBuffer{}, &logBuffer{}
	done := make(chan error, 1)
	go func() {
		root := newRootCmd(&app{stdout: out, stderr: errOut})
		root.SetArgs([]string{"--data-dir", data, "logs", "-f", "--json"})
		done <- root.ExecuteContext(ctx)
	}()
	waitOutput(t, out, "not github's")

	want := []string{"before follow", "not github's", "appended"}
	log.Info("appended")
	waitOutput(t, out, `"appended"`)
	for i := range 3 {
		// Written, rotated and written again between two looks: the
		// follower meets the first record in the renamed (maybe already
		// compressed) file.
		last, first := fmt.Sprintf("last before rotation %d", i), fmt.Sprintf("first after rotation %d", i)
		log.Info(last)
		if err := w.Rotate(); err != nil {
			t.Fatal(err)
		}
		log.Info(first)
		want = append(want, last, first)
		waitOutput(t, out, first)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("logs -f: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("logs -f did not return within 10 s of its context ending")
	}
	// lumberjack compresses the rotated files in a goroutine of its own,
	// which Close does not wait for: the test waits, or it could write into
	// the temporary directory while it is removed.
	eventually(t, 10*time.Second, "the rotated files are compressed", func() error {
		ents, err := os.ReadDir(logfile.Dir(data))
		if err != nil {
			return err
		}
		var gz, plain []string
		for _, e := range ents {
			switch name := e.Name(); {
			case strings.HasSuffix(name, ".log.gz"):
				gz = append(gz, name)
			case name != logfile.FileName:
				plain = append(plain, name)
			}
		}
		if len(gz) != 3 || len(plain) != 0 {
			return fmt.Errorf("compressed %q, not yet %q", gz, plain)
		}
		return nil
	})
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		rec, ok := logfile.ParseRecord([]byte(l))
		if !ok {
			t.Fatalf("--json printed a line that is not a record: %s", l)
		}
		got = append(got, rec.Msg)
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("followed records:\n got %q\nwant %q\nstderr: %s", got, want, errOut.String())
	}
}

// A real `mcphub serve` writes <data>/logs/hub.log, and a stdio server's
// stderr line is in it under the server's name, while the console keeps
// its text format; the server's env values are in neither. logs shows it.
func TestServeWritesLogFileWithServerStderr(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stdio server is started through sh")
	}
	h := newProcHub(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const secret = "noisy-env-secret-0123456789"
	// No env value may be in the line: the hub redacts them from stderr.
	const line = "hello from the stdio server's stderr"
	keys, values := childOpts{env: []string{"NOISY_API_KEY", secret}}.envKeys("noisy")
	var env []string
	for i := range keys {
		env = append(env, fmt.Sprintf("%s = %q", keys[i], values[i]))
	}
	server := fmt.Sprintf("[servers.noisy]\ncommand = \"sh\"\nargs = [\"-c\", \"echo \\\"%s\\\" >&2; echo \\\"key: $NOISY_API_KEY\\\" >&2; exec \\\"$0\\\"\", %q]\nenv = { %s }\n\n",
		line, exe, strings.Join(env, ", "))
	h.write(t, h.registry("", server))
	r := h.startReady(20*time.Second, nil)
	h.waitStatus(t, r, 20*time.Second, "noisy connects", connected("noisy"))

	path := filepath.Join(h.data, "logs", "hub.log")
	var found map[string]any
	eventually(t, 10*time.Second, "hub.log holds noisy's stderr line", func() error {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, l := range strings.Split(string(data), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(l), &rec) == nil && rec["server"] == "noisy" && rec["msg"] == line {
				found = rec
				return nil
			}
		}
		return fmt.Errorf("not yet:\n%s", data)
	})
	if found["stream"] != "stderr" || found["level"] != "WARN" {
		t.Errorf("the stderr record: %v", found)
	}
	if !strings.Contains(r.out.String(), `level=WARN msg="`+line+`" server=noisy stream=stderr`) {
		t.Errorf("the console lacks the stderr line in text format:\n%s", r.out.String())
	}
	if runtime.GOOS != "windows" {
		for p, want := range map[string]os.FileMode{filepath.Dir(path): 0o700, path: 0o600} {
			if st, err := os.Stat(p); err != nil || st.Mode().Perm() != want {
				t.Errorf("%s: mode %v (%v), want %v", p, st.Mode().Perm(), err, want)
			}
		}
	}
	code, out, errOut := h.cli(t, nil, "logs", "noisy")
	if code != 0 || !strings.Contains(out, " WARN  noisy  "+line+" stream=stderr\n") {
		t.Errorf("mcphub logs noisy: exit %d\n%s\n%s", code, out, errOut)
	}
	r.stop()
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), secret) || strings.Contains(r.out.String(), secret) || !strings.Contains(string(data), `"msg":"key: `) {
		t.Errorf("the server's env value is in the log, or its redacted line is not:\n%s", data)
	}
	if !strings.Contains(string(data), `"msg":"stopping"`) {
		t.Errorf("hub.log lacks the hub's own stopping record:\n%s", data)
	}
}

// A hub.log that is not a file is no log: logs reads the backups, or says
// there is none.
func TestLogsSkipsWhatIsNotAFile(t *testing.T) {
	data := t.TempDir()
	if err := os.MkdirAll(filepath.Join(logfile.Dir(data), logfile.FileName), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(logfile.Dir(data), "hub-2026-11-25T10-00-00.000.log"), 0o700); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runLogsCmd(t, data); code != 1 || !strings.Contains(errOut, "no logs yet") {
		t.Errorf("logs with directories only: exit %d: %s", code, errOut)
	}
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	logfiletest.WriteFiles(t, logfile.Dir(data), map[string][]string{"hub-2026-11-25T10-00-01.000.log.gz": {logfiletest.Record(t0, "INFO", "", "rotated")}})
	if code, out, errOut := runLogsCmd(t, data); code != 0 || out != "2026-11-25T10:00:00.000Z INFO  rotated\n" {
		t.Errorf("logs: exit %d\n%s\n%s", code, out, errOut)
	}
}
