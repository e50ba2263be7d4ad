package logfile

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

// writeLogFiles writes the files of a log under dataDir/logs: name to
// lines, gzipped when the name ends in .gz.
func writeLogFiles(t *testing.T, dataDir string, files map[string][]string) {
	t.Helper()
	dir := Dir(dataDir)
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
