package client

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// processGone reports whether pid has exited: no such process, or a zombie
// nobody has reaped yet (in a container, PID 1 may never reap the orphans it
// inherits).
func processGone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	data := string(b)
	i := strings.LastIndexByte(data, ')')
	return i >= 0 && i+2 < len(data) && data[i+2] == 'Z'
}

func TestParseProcStat(t *testing.T) {
	line := "4242 (a) b) (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615"
	st, err := parseProcStat(line)
	if err != nil || st.pgrp != 4242 || st.start != 987654 {
		t.Fatalf("parseProcStat = %+v, %v; want group 4242, start 987654", st, err)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 1 2", "1 (x) S 1 x 3 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5", "1 (x) S 1 2 3 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 -5"} {
		if st, err := parseProcStat(bad); err == nil {
			t.Errorf("parseProcStat(%q) = %+v, want an error", bad, st)
		}
	}
}

// The command name, whatever it holds, never changes what is read from the
// fields after it.
func FuzzParseProcStat(f *testing.F) {
	f.Add("a) b) (c", "S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000")
	f.Add("x", "S")
	f.Add("", "S 1 x 3 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5")
	f.Fuzz(func(t *testing.T, name, rest string) {
		if strings.Contains(rest, ")") {
			return
		}
		got, gotErr := parseProcStat("7 (" + name + ") " + rest)
		want, wantErr := parseProcStat("7 (x) " + rest)
		if got != want || (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("name %q changed the parse of %q: %+v, %v; with name x: %+v, %v", name, rest, got, gotErr, want, wantErr)
		}
	})
}
