package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// writeLogFiles writes the files of a log under dataDir/logs: name to
// lines, gzipped when the name ends in .gz.
func writeLogFiles(t *testing.T, dataDir string, files map[string][]string) {
	t.Helper()
	dir := logDir(dataDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, lines := range files {
		data := []byte(strings.Join(lines, "\n") + "\n")
		if strings.HasSuffix(name, ".gz") {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			zw.Write(data)
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
			data = b.Bytes()
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// logRec is a JSON line as the hub's file handler writes it, at t.
func logRec(t time.Time, level, server, msg string, kv ...any) string {
	q := func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `{"time":%s,"level":%s,"msg":%s`, q(t.Format(time.RFC3339Nano)), q(level), q(msg))
	if server != "" {
		fmt.Fprintf(&b, `,"server":%s`, q(server))
	}
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, `,%s:%s`, q(kv[i]), q(kv[i+1]))
	}
	return b.String() + "}"
}

// runLogsCmd runs `mcphub --data-dir dataDir logs args...` in this process.
func runLogsCmd(t *testing.T, dataDir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLI(t, append([]string{"--data-dir", dataDir, "logs"}, args...)...)
}

func TestLogsFormatRecord(t *testing.T) {
	cases := []struct {
		name  string
		line  string
		width int
		want  string
	}{
		{"hub record without server column",
			`{"time":"2026-11-25T11:00:00.123456789+01:00","level":"INFO","msg":"stopping","signal":"interrupt"}`, 0,
			"2026-11-25T10:00:00.123Z INFO  stopping signal=interrupt"},
		{"server record",
			`{"time":"2026-11-25T10:00:00.5Z","level":"WARN","msg":"npm warn exec","server":"github","stream":"stderr"}`, 6,
			"2026-11-25T10:00:00.500Z WARN  github  npm warn exec stream=stderr"},
		{"hub record in a server column",
			`{"time":"2026-11-25T10:00:00Z","level":"ERROR","msg":"refused a server"}`, 6,
			"2026-11-25T10:00:00.000Z ERROR         refused a server"},
		{"values quoted, groups flattened, null, numbers, arrays",
			`{"time":"2026-11-25T10:00:00Z","level":"DEBUG","msg":"m","err":"EOF: no such file","empty":"","n":3,"ok":true,"x":null,"req":{"method":"tools/call","id":7},"ids":[1, 2],"eq":"a=b"}`, 0,
			`2026-11-25T10:00:00.000Z DEBUG m err="EOF: no such file" empty="" n=3 ok=true x=<nil> req.method=tools/call req.id=7 ids=[1,2] eq="a=b"`},
		{"control characters escaped, one line",
			`{"time":"2026-11-25T10:00:00Z","level":"WARN","msg":"\u001b[31mError\u001b[0m: boom\n  at x","server":"flaky"}`, 5,
			`2026-11-25T10:00:00.000Z WARN  flaky  \x1b[31mError\x1b[0m: boom\n  at x`},
		{"a server that is not a string is an attribute",
			`{"time":"2026-11-25T10:00:00Z","level":"INFO","msg":"m","server":42}`, 0,
			"2026-11-25T10:00:00.000Z INFO  m server=42"},
		{"a time that does not parse is shown as written",
			`{"time":"yesterday","level":"INFO","msg":"m"}`, 0,
			"yesterday INFO  m"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec, ok := parseLogRecord([]byte(tc.line))
			if !ok {
				t.Fatalf("%s does not parse", tc.line)
			}
			if got := rec.format(tc.width); got != tc.want {
				t.Errorf("format:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
	for _, bad := range []string{"panic: runtime error", `{"time":"2026-11-25T10:00:00Z"`, `{"a":1} trailing`, `[1,2]`, `"msg"`} {
		if _, ok := parseLogRecord([]byte(bad)); ok {
			t.Errorf("%q parses as a record", bad)
		}
	}
	// A line that is not JSON is printed as it is; --json prints raw lines.
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
	writeLogFiles(t, data, map[string][]string{
		"hub-2026-11-25T10-00-10.000.log.gz": {
			logRec(t0, "WARN", "github", "old github line", "stream", "stderr"),
		},
		"hub.log": {
			logRec(t0.Add(20*time.Second), "INFO", "", "hub line"),
			logRec(t0.Add(21*time.Second), "WARN", "github", "github line", "stream", "stderr"),
			"not json at all",
			logRec(t0.Add(22*time.Second), "WARN", "flaky", "flaky line", "stream", "stderr"),
			logRec(t0.Add(23*time.Second), "INFO", "github", "server replaced"),
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
	if code != 0 || out != logRec(t0.Add(22*time.Second), "WARN", "flaky", "flaky line", "stream", "stderr")+"\n" {
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
		return logRec(t0.Add(time.Duration(i)*time.Second), "INFO", "", fmt.Sprintf("record %d", i))
	}
	compressing := []string{rec(3), rec(4)}
	writeLogFiles(t, data, map[string][]string{
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
	writeLogFiles(t, data, map[string][]string{
		// Rotated out before the window: not even read.
		"hub-" + old.Add(time.Minute).UTC().Format(logBackupTime) + ".log.gz": {logRec(old, "INFO", "", "two hours ago")},
		"hub.log": {
			logRec(old.Add(2*time.Minute), "INFO", "", "still old"),
			"old trailing line",
			logRec(recent, "INFO", "", "five minutes ago"),
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

// The hub's file gets JSON lines at the console's level, whatever the
// console's format; the console's output stays as it was.
func TestLogsFileTeesConsole(t *testing.T) {
	data := t.TempDir()
	var console bytes.Buffer
	lv := new(slog.LevelVar)
	log, closeLog := withLogFile(slog.New(slog.NewTextHandler(&console, &slog.HandlerOptions{Level: lv})), lv, data, false)
	log.With("server", "github").Warn("npm warn exec", "stream", "stderr")
	log.Debug("not at this level")
	log.WithGroup("req").Info("done", "id", 7)
	closeLog()
	if !strings.Contains(console.String(), "level=WARN msg=\"npm warn exec\" server=github stream=stderr") || strings.Contains(console.String(), "{") {
		t.Errorf("console:\n%s", console.String())
	}
	file, err := os.ReadFile(filepath.Join(data, "logs", "hub.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(file)), "\n")
	if len(lines) != 2 {
		t.Fatalf("hub.log has %d lines, want 2:\n%s", len(lines), file)
	}
	rec, ok := parseLogRecord([]byte(lines[0]))
	if !ok || rec.server != "github" || rec.level != "WARN" || rec.msg != "npm warn exec" {
		t.Errorf("hub.log's first line: %s", lines[0])
	}
	if rec, ok := parseLogRecord([]byte(lines[1])); !ok || rec.format(0) == "" || !strings.Contains(rec.format(0), "req.id=7") {
		t.Errorf("hub.log's second line: %s", lines[1])
	}
	if runtime.GOOS != "windows" {
		for path, want := range map[string]os.FileMode{logDir(data): 0o700, filepath.Join(logDir(data), logFileName): 0o600} {
			if st, err := os.Stat(path); err != nil || st.Mode().Perm() != want {
				t.Errorf("%s: mode %v (%v), want %v", path, st.Mode().Perm(), err, want)
			}
		}
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
	w, err := openLogFile(data)
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
		ents, err := os.ReadDir(logDir(data))
		if err != nil {
			return err
		}
		var gz, plain []string
		for _, e := range ents {
			switch name := e.Name(); {
			case strings.HasSuffix(name, ".log.gz"):
				gz = append(gz, name)
			case name != logFileName:
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
		rec, ok := parseLogRecord([]byte(l))
		if !ok {
			t.Fatalf("--json printed a line that is not a record: %s", l)
		}
		got = append(got, rec.msg)
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("followed records:\n got %q\nwant %q\nstderr: %s", got, want, errOut.String())
	}
}

// The rest of a rotated hub.log is found even once lumberjack compressed
// it and removed the .log; a last line without its newline waits. The old
// hub.log is removed before the new one is made, so the new one may get its
// inode number: its first bytes tell them apart.
func TestLogsFollowReadsCompressedRotatedRest(t *testing.T) {
	data := t.TempDir()
	dir := logDir(data)
	writeLogFiles(t, data, map[string][]string{"hub.log": {`{"msg":"one"}`}})
	_, pos, err := readCurrent(dir)
	if err != nil || pos.off == 0 {
		t.Fatalf("readCurrent: %+v %v", pos, err)
	}
	os.Remove(filepath.Join(dir, logFileName))
	writeLogFiles(t, data, map[string][]string{
		"hub-2026-11-25T10-00-00.000.log.gz": {`{"msg":"one"}`, `{"msg":"two"}`},
	})
	os.WriteFile(filepath.Join(dir, logFileName), []byte("{\"msg\":\"three\"}\n{\"msg\":\"fo"), 0o600)
	var got []string
	emit := func(l []byte) error { got = append(got, string(l)); return nil }
	pos, err = followOnce(dir, pos, emit)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != `{"msg":"two"}|{"msg":"three"}` {
		t.Errorf("after the rotation: %q", got)
	}
	f, _ := os.OpenFile(filepath.Join(dir, logFileName), os.O_APPEND|os.O_WRONLY, 0o600)
	f.WriteString("ur\"}\n")
	f.Close()
	got = nil
	if _, err := followOnce(dir, pos, emit); err != nil || strings.Join(got, "|") != `{"msg":"four"}` {
		t.Errorf("the completed line: %q %v", got, err)
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

// Under a service manager the console, which the manager keeps in a file
// or journal, gets warnings and errors only, once the log file has every
// record; a log file that cannot be written leaves the console as it was.
func TestLogsFileQuietConsoleUnderManager(t *testing.T) {
	data := t.TempDir()
	var console bytes.Buffer
	lv := new(slog.LevelVar)
	log, closeLog := withLogFile(slog.New(slog.NewTextHandler(&console, &slog.HandlerOptions{Level: lv})), lv, data, true)
	log.Info("connected", "server", "github")
	log.With("server", "flaky").WithGroup("g").Warn("server exited", "code", 1)
	closeLog()
	if strings.Contains(console.String(), "connected") || !strings.Contains(console.String(), `level=WARN msg="server exited" server=flaky g.code=1`) {
		t.Errorf("console:\n%s", console.String())
	}
	file, err := os.ReadFile(filepath.Join(logDir(data), logFileName))
	if err != nil || !strings.Contains(string(file), `"msg":"connected"`) || !strings.Contains(string(file), `"msg":"server exited"`) {
		t.Errorf("hub.log (%v):\n%s", err, file)
	}

	// hub.log cannot be opened: said at once, and the console keeps every
	// record.
	data = t.TempDir()
	if err := os.MkdirAll(filepath.Join(logDir(data), logFileName), 0o700); err != nil {
		t.Fatal(err)
	}
	console.Reset()
	lv = new(slog.LevelVar)
	log, closeLog = withLogFile(slog.New(slog.NewTextHandler(&console, &slog.HandlerOptions{Level: lv})), lv, data, true)
	log.Info("connected")
	closeLog()
	if !strings.Contains(console.String(), "not writing the log file") || !strings.Contains(console.String(), "msg=connected") {
		t.Errorf("console with hub.log a directory:\n%s", console.String())
	}
}

// A hub.log that is not a file is no log: logs reads the backups, or says
// there is none.
func TestLogsSkipsWhatIsNotAFile(t *testing.T) {
	data := t.TempDir()
	if err := os.MkdirAll(filepath.Join(logDir(data), logFileName), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(logDir(data), "hub-2026-11-25T10-00-00.000.log"), 0o700); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runLogsCmd(t, data); code != 1 || !strings.Contains(errOut, "no logs yet") {
		t.Errorf("logs with directories only: exit %d: %s", code, errOut)
	}
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	writeLogFiles(t, data, map[string][]string{"hub-2026-11-25T10-00-01.000.log.gz": {logRec(t0, "INFO", "", "rotated")}})
	if code, out, errOut := runLogsCmd(t, data); code != 0 || out != "2026-11-25T10:00:00.000Z INFO  rotated\n" {
		t.Errorf("logs: exit %d\n%s\n%s", code, out, errOut)
	}
}

// The backups are listed after hub.log is read: a rotation just before the
// read leaves the renamed file in the list, one just after puts the file
// read among the backups, where it is not read twice.
func TestLogsHistoryAcrossRotation(t *testing.T) {
	rec := func(i int) string {
		return logRec(time.Date(2026, 11, 25, 10, 0, i, 0, time.UTC), "INFO", "", fmt.Sprintf("record %d", i))
	}
	msgs := func(h logHistory) string {
		var got []string
		for _, l := range h.lines {
			rec, _ := parseLogRecord(l)
			got = append(got, rec.msg)
		}
		return strings.Join(got, ",")
	}
	for _, gz := range []bool{false, true} {
		data := t.TempDir()
		dir := logDir(data)
		writeLogFiles(t, data, map[string][]string{
			"hub-2026-11-25T10-00-02.500.log.gz": {rec(1), rec(2)},
			"hub.log":                            {rec(3), rec(4)},
		})
		current, pos, err := readCurrent(dir)
		if err != nil {
			t.Fatal(err)
		}
		// Rotated after the read, with a record written in between.
		f, _ := os.OpenFile(filepath.Join(dir, logFileName), os.O_APPEND|os.O_WRONLY, 0o600)
		f.WriteString(rec(5) + "\n")
		f.Close()
		backup := filepath.Join(dir, "hub-2026-11-25T10-00-05.500.log")
		if err := os.Rename(filepath.Join(dir, logFileName), backup); err != nil {
			t.Fatal(err)
		}
		if gz {
			old, _ := os.ReadFile(backup)
			os.Remove(backup)
			writeLogFiles(t, data, map[string][]string{filepath.Base(backup) + ".gz": strings.Split(strings.TrimSpace(string(old)), "\n")})
		}
		writeLogFiles(t, data, map[string][]string{"hub.log": {rec(6)}})
		h, err := readHistoryAfter(dir, current, pos, logQuery{n: 3}, false)
		if err != nil || msgs(h) != "record 2,record 3,record 4" {
			t.Errorf("compressed %v: rotated after the read: %q (%v)", gz, msgs(h), err)
		}
		// Rotated before the read: the renamed file is read.
		h, err = readHistory(dir, logQuery{n: 4}, false)
		if err != nil || msgs(h) != "record 3,record 4,record 5,record 6" {
			t.Errorf("compressed %v: rotated before the read: %q (%v)", gz, msgs(h), err)
		}
	}
}

// When the hub rotated twice between two looks, the follower finds the
// file it read by its first bytes (compressed by now) and emits its rest,
// then the whole of the hub.log in between, then the new one.
func TestLogsFollowTwoRotationsBetweenLooks(t *testing.T) {
	data := t.TempDir()
	dir := logDir(data)
	writeLogFiles(t, data, map[string][]string{
		"hub-2026-11-25T09-00-00.000.log.gz": {`{"msg":"older"}`},
		"hub.log":                            {`{"msg":"one"}`},
	})
	_, pos, err := readCurrent(dir)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, logFileName))
	writeLogFiles(t, data, map[string][]string{
		"hub-2026-11-25T10-00-00.000.log.gz": {`{"msg":"one"}`, `{"msg":"two"}`},
		"hub-2026-11-25T10-00-01.000.log":    {`{"msg":"three"}`, `{"msg":"four"}`},
		"hub.log":                            {`{"msg":"five"}`},
	})
	var got []string
	if _, err := followOnce(dir, pos, func(l []byte) error { got = append(got, string(l)); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := `{"msg":"two"}|{"msg":"three"}|{"msg":"four"}|{"msg":"five"}`; strings.Join(got, "|") != want {
		t.Errorf("after two rotations:\n got %s\nwant %s", strings.Join(got, "|"), want)
	}
}

// A reader of the log never stands in the way of the hub's rotation, which
// renames hub.log while logs -f may have it open (on Windows, os.Open's
// sharing does not allow that).
func TestLogsFileRenamedWhileOpen(t *testing.T) {
	data := t.TempDir()
	writeLogFiles(t, data, map[string][]string{"hub.log": {`{"msg":"one"}`}})
	path := filepath.Join(logDir(data), logFileName)
	f, err := openLogForRead(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rotated := filepath.Join(logDir(data), "hub-2026-11-25T10-00-00.000.log")
	if err := os.Rename(path, rotated); err != nil {
		t.Fatalf("rename while open: %v", err)
	}
	buf := make([]byte, 64)
	if n, err := f.ReadAt(buf, 0); string(buf[:n]) != "{\"msg\":\"one\"}\n" {
		t.Errorf("read after the rename: %q (%v)", buf[:n], err)
	}
	if err := os.Remove(rotated); err != nil {
		t.Errorf("remove while open: %v", err)
	}
	if _, err := openLogForRead(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("open of a missing file: %v, want fs.ErrNotExist", err)
	}
}
