package logfile

import (
	"bytes"
	"errors"
	"time"
)

// Query selects records: those of one server (every record when Server is
// ""), written at Since or later (zero: any time), the last N of them (-1:
// all). ReadHistory applies it to what the log holds, and Keeps to each
// line Follow emits.
type Query struct {
	Server string
	Since  time.Time
	N      int
}

// Keeps reports whether q selects line, read at time at: a line that is
// not a record has no time of its own, and is judged by at.
func (q Query) Keeps(line []byte, at time.Time) bool {
	if q.all() {
		return true
	}
	rec, ok := ParseRecord(line)
	return q.match(rec, ok, at)
}

// all reports whether q selects every line (but for its count).
func (q Query) all() bool { return q.Server == "" && q.Since.IsZero() }

// match reports whether q selects a record (ok false: a line that is not
// JSON). A line that is not a record has no server and no time: a server
// filter drops it, and a time filter judges it by at, the time of the
// record before it.
func (q Query) match(rec *Record, ok bool, at time.Time) bool {
	if ok && !rec.Time.IsZero() {
		at = rec.Time
	}
	if q.Server != "" && (!ok || rec.Server != q.Server) {
		return false
	}
	return q.Since.IsZero() || !at.Before(q.Since)
}

// History is what the log held when a reader started: the lines a Query
// selected, and where Follow goes on from.
type History struct {
	Lines [][]byte // the selected lines, oldest first, without line endings
	Pos   Pos      // where following hub.log goes on

	seen     map[string]bool // servers with records in the files read
	complete bool            // every file was read
	files    []logFile       // the log's files when the backups were listed
}

// ReadHistory reads the log in dir newest file first, until q.N lines are
// selected or the files left were rotated out before q.Since. With
// follow, a last line of hub.log still being written is left to Follow,
// from History.Pos. It fails with ErrNoLogs when the log has no file.
func ReadHistory(dir string, q Query, follow bool) (History, error) {
	if _, err := logFiles(dir); err != nil {
		return History{}, err
	}
	return readHistory(dir, q, follow)
}

// readHistory reads the log as ReadHistory does. hub.log is read first,
// and always, for the position to follow it from. The backups are listed
// after it: a rotation just before the read leaves the renamed file in the
// list, and one just after puts the file read among the backups, where it
// is known by its first bytes and skipped (the follower emits what it
// gained before the rename).
func readHistory(dir string, q Query, follow bool) (History, error) {
	current, pos, err := readCurrent(dir)
	if err != nil {
		return History{}, err
	}
	return readHistoryAfter(dir, current, pos, q, follow)
}

// readHistoryAfter is readHistory once hub.log was read: current is what
// it held, at pos.
func readHistoryAfter(dir string, current []byte, pos Pos, q Query, follow bool) (History, error) {
	h := History{seen: map[string]bool{}, complete: true, Pos: pos}
	if follow {
		current = current[:pos.off]
	}
	var err error
	h.files, err = logFiles(dir)
	if err != nil && !errors.Is(err, ErrNoLogs) {
		return h, err
	}
	var backups []logFile
	for _, f := range h.files {
		if !f.rotated.IsZero() {
			backups = append(backups, f)
		}
	}
	var chunks [][][]byte // newest file first
	count := 0
	take := func(data []byte) {
		var sel [][]byte
		var at time.Time
		emitLines(data, func(line []byte) error {
			if q.all() {
				sel = append(sel, line)
				return nil
			}
			rec, ok := ParseRecord(line)
			if ok && rec.Server != "" {
				h.seen[rec.Server] = true
			}
			if ok && !rec.Time.IsZero() {
				at = rec.Time
			}
			if q.match(rec, ok, at) {
				sel = append(sel, line)
			}
			return nil
		})
		if q.N >= 0 && count+len(sel) > q.N {
			sel = sel[len(sel)-(q.N-count):]
		}
		count += len(sel)
		for j := range sel {
			sel[j] = bytes.Clone(sel[j])
		}
		chunks = append(chunks, sel)
	}
	take(current)
	for i := len(backups) - 1; i >= 0; i-- {
		f := backups[i]
		if (q.N >= 0 && count >= q.N) || (!q.Since.IsZero() && f.rotated.Before(q.Since)) {
			h.complete = false
			break
		}
		data, err := readLogFile(f.path)
		if err != nil {
			return h, err
		}
		if i == len(backups)-1 && pos.readFrom(f.path, data) {
			continue // the hub.log read above, rotated out since
		}
		take(data)
	}
	for i := len(chunks) - 1; i >= 0; i-- {
		h.Lines = append(h.Lines, chunks[i]...)
	}
	return h, nil
}

// Servers lists the servers with records in the log, for a reader to
// name them when a server it was asked for has none (a misspelt name):
// those seen while reading the history when every file was read, else
// from every file the log had then.
func (h History) Servers() (map[string]bool, error) {
	if h.complete {
		return h.seen, nil
	}
	return serversInLog(h.files)
}

// serversInLog lists the servers with records in any of files.
func serversInLog(files []logFile) (map[string]bool, error) {
	seen := map[string]bool{}
	for _, f := range files {
		data, err := readLogFile(f.path)
		if err != nil {
			return nil, err
		}
		emitLines(data, func(line []byte) error {
			if rec, ok := ParseRecord(line); ok && rec.Server != "" {
				seen[rec.Server] = true
			}
			return nil
		})
	}
	return seen, nil
}
