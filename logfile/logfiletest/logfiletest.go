// Package logfiletest writes hub log files for tests: the records the
// hub's file handler writes, and the files of a log directory, rotated
// and gzipped ones included. The logfile room's own tests and the tests
// of `mcphub logs` in cmd/mcphub share it.
//
// It imports the standard library only, not even logfile: logfile's own
// (internal) tests import it, so the caller passes the log directory
// (logfile.Dir of a data directory).
package logfiletest

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// WriteFiles writes the files of a log into dir, creating it: name to
// lines, gzipped when the name ends in .gz, as lumberjack leaves its
// compressed backups.
func WriteFiles(t testing.TB, dir string, files map[string][]string) {
	t.Helper()
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

// Record is a JSON line as the hub's file handler writes it, at t: time,
// level and msg, then server when it is not "", then the attributes kv
// (key, value, key, value...).
func Record(t time.Time, level, server, msg string, kv ...any) string {
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
