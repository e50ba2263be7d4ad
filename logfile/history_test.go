package logfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/logfile/logfiletest"
)

// The backups are listed after hub.log is read: a rotation just before the
// read leaves the renamed file in the list, one just after puts the file
// read among the backups, where it is not read twice.
func TestHistoryAcrossRotation(t *testing.T) {
	rec := func(i int) string {
		return logfiletest.Record(time.Date(2026, 11, 25, 10, 0, i, 0, time.UTC), "INFO", "", fmt.Sprintf("record %d", i))
	}
	msgs := func(h History) string {
		var got []string
		for _, l := range h.Lines {
			rec, _ := ParseRecord(l)
			got = append(got, rec.Msg)
		}
		return strings.Join(got, ",")
	}
	for _, gz := range []bool{false, true} {
		data := t.TempDir()
		dir := Dir(data)
		logfiletest.WriteFiles(t, dir, map[string][]string{
			"hub-2026-11-25T10-00-02.500.log.gz": {rec(1), rec(2)},
			"hub.log":                            {rec(3), rec(4)},
		})
		current, pos, err := readCurrent(dir)
		if err != nil {
			t.Fatal(err)
		}
		// Rotated after the read, with a record written in between.
		f, _ := os.OpenFile(filepath.Join(dir, FileName), os.O_APPEND|os.O_WRONLY, 0o600)
		f.WriteString(rec(5) + "\n")
		f.Close()
		backup := filepath.Join(dir, "hub-2026-11-25T10-00-05.500.log")
		if err := os.Rename(filepath.Join(dir, FileName), backup); err != nil {
			t.Fatal(err)
		}
		if gz {
			old, _ := os.ReadFile(backup)
			os.Remove(backup)
			logfiletest.WriteFiles(t, dir, map[string][]string{filepath.Base(backup) + ".gz": strings.Split(strings.TrimSpace(string(old)), "\n")})
		}
		logfiletest.WriteFiles(t, dir, map[string][]string{"hub.log": {rec(6)}})
		h, err := readHistoryAfter(dir, current, pos, Query{N: 3}, false)
		if err != nil || msgs(h) != "record 2,record 3,record 4" {
			t.Errorf("compressed %v: rotated after the read: %q (%v)", gz, msgs(h), err)
		}
		// Rotated before the read: the renamed file is read.
		h, err = readHistory(dir, Query{N: 4}, false)
		if err != nil || msgs(h) != "record 3,record 4,record 5,record 6" {
			t.Errorf("compressed %v: rotated before the read: %q (%v)", gz, msgs(h), err)
		}
	}
}
