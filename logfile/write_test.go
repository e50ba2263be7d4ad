package logfile

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The hub's file gets JSON lines at the console's level, whatever the
// console's format; the console's output stays as it was.
func TestTeeWritesJSONBesideTheConsole(t *testing.T) {
	data := t.TempDir()
	var console bytes.Buffer
	lv := new(slog.LevelVar)
	log, closeLog := Tee(slog.New(slog.NewTextHandler(&console, &slog.HandlerOptions{Level: lv})), lv, data, false)
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
	rec, ok := ParseRecord([]byte(lines[0]))
	if !ok || rec.Server != "github" || rec.Level != "WARN" || rec.Msg != "npm warn exec" {
		t.Errorf("hub.log's first line: %s", lines[0])
	}
	if rec, ok := ParseRecord([]byte(lines[1])); !ok || rec.Format(0) == "" || !strings.Contains(rec.Format(0), "req.id=7") {
		t.Errorf("hub.log's second line: %s", lines[1])
	}
	if runtime.GOOS != "windows" {
		for path, want := range map[string]os.FileMode{Dir(data): 0o700, filepath.Join(Dir(data), FileName): 0o600} {
			if st, err := os.Stat(path); err != nil || st.Mode().Perm() != want {
				t.Errorf("%s: mode %v (%v), want %v", path, st.Mode().Perm(), err, want)
			}
		}
	}
}

// Under a service manager the console, which the manager keeps in a file
// or journal, gets warnings and errors only, once the log file has every
// record; a log file that cannot be written leaves the console as it was.
func TestTeeQuietConsoleUnderManager(t *testing.T) {
	data := t.TempDir()
	var console bytes.Buffer
	lv := new(slog.LevelVar)
	log, closeLog := Tee(slog.New(slog.NewTextHandler(&console, &slog.HandlerOptions{Level: lv})), lv, data, true)
	log.Info("connected", "server", "github")
	log.With("server", "flaky").WithGroup("g").Warn("server exited", "code", 1)
	closeLog()
	if strings.Contains(console.String(), "connected") || !strings.Contains(console.String(), `level=WARN msg="server exited" server=flaky g.code=1`) {
		t.Errorf("console:\n%s", console.String())
	}
	file, err := os.ReadFile(filepath.Join(Dir(data), FileName))
	if err != nil || !strings.Contains(string(file), `"msg":"connected"`) || !strings.Contains(string(file), `"msg":"server exited"`) {
		t.Errorf("hub.log (%v):\n%s", err, file)
	}

	// hub.log cannot be opened: said at once, and the console keeps every
	// record.
	data = t.TempDir()
	if err := os.MkdirAll(filepath.Join(Dir(data), FileName), 0o700); err != nil {
		t.Fatal(err)
	}
	console.Reset()
	lv = new(slog.LevelVar)
	log, closeLog = Tee(slog.New(slog.NewTextHandler(&console, &slog.HandlerOptions{Level: lv})), lv, data, true)
	log.Info("connected")
	closeLog()
	if !strings.Contains(console.String(), "not writing the log file") || !strings.Contains(console.String(), "msg=connected") {
		t.Errorf("console with hub.log a directory:\n%s", console.String())
	}
}
