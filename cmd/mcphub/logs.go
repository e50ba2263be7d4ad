package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newLogsCmd) }

type logsFlags struct {
	follow bool
	json   bool
	n      int
	since  sinceFlag
}

// sinceFlag is --since: a duration back from now, whose error says what is
// wanted rather than what time.ParseDuration did not like.
type sinceFlag time.Duration

func (s *sinceFlag) String() string {
	if *s == 0 {
		return "0" // no default shown in the help
	}
	return time.Duration(*s).String()
}

func (s *sinceFlag) Type() string { return "duration" }

func (s *sinceFlag) Set(v string) error {
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return errors.New("want a duration such as 30s, 10m or 48h (units: s, m, h; 2 days is 48h)")
	case d < 0:
		return errors.New("want a positive duration such as 30s, 10m or 48h")
	}
	*s = sinceFlag(d)
	return nil
}

const logsLong = `Show the hub's log: what mcphub serve logged, and each stdio server's
stderr lines, under the server's name. With SERVER, only the records of that
server. The hub keeps its log as JSON lines in <data-dir>/logs/hub.log, at
the level of serve --log-level, rotated past 10 MiB and keeping 5 older files
(gzipped); logs reads them all, oldest first, whether or not a hub runs.

One record per line, in UTC:
  2026-11-25T10:00:00.123Z WARN  github  npm warn exec ... stream=stderr
The server column is empty for the hub's own records. --json prints the
records as stored. A line of the file that is not JSON is printed as it is.

Examples:
  mcphub logs                    the last 50 records
  mcphub logs github -f          github's records, then new ones as they come
  mcphub logs --since 10m        every record of the last ten minutes
  mcphub logs -n 200 --json      the last 200 records as JSON lines`

func newLogsCmd(a *app) *cobra.Command {
	var f logsFlags
	cmd := &cobra.Command{
		Use:               "logs [SERVER]",
		Short:             "Show the hub's log, or one server's records (its stderr included); -f follows it",
		Long:              logsLong,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: a.completeServers(nil),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.n < 0 {
				return fmt.Errorf("-n %d: want 0 or more records", f.n)
			}
			q := logQuery{n: f.n}
			if len(args) == 1 {
				q.server = args[0]
			}
			if f.since > 0 {
				q.since = time.Now().Add(-time.Duration(f.since))
				if !cmd.Flags().Changed("lines") {
					q.n = -1
				}
			}
			return runLogs(cmd.Context(), a, f, q)
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&f.follow, "follow", "f", false, "keep printing new records as the hub writes them, until interrupted")
	fl.BoolVar(&f.json, "json", false, "print the records as the JSON lines the log file holds")
	fl.IntVarP(&f.n, "lines", "n", 50, "print the last N records (with --since and no -n: every record since)")
	fl.Var(&f.since, "since", "only records of the last DURATION (e.g. 30s, 10m, 2h)")
	return cmd
}

// runLogs prints the records q selects and, with -f, follows the log.
func runLogs(ctx context.Context, a *app, f logsFlags, q logQuery) error {
	dir := logDir(a.dataDir)
	if _, err := logFiles(dir); errors.Is(err, errNoLogs) {
		return fmt.Errorf("no logs yet in %s: start the hub with mcphub serve", dir)
	} else if err != nil {
		return err
	}
	h, err := readHistory(dir, q, f.follow)
	if err != nil {
		return err
	}
	p := &logPrinter{w: a.stdout, json: f.json}
	for _, l := range h.lines {
		if f.json {
			break // raw lines: no column to size
		}
		if rec, ok := parseLogRecord(l); ok {
			p.width = max(p.width, utf8.RuneCountInString(rec.server))
		}
	}
	for _, l := range h.lines {
		if err := p.print(l); err != nil {
			return err
		}
	}
	if q.server != "" && len(h.lines) == 0 {
		seen := h.seen
		if !h.complete {
			if seen, err = serversInLog(h.files); err != nil {
				return err
			}
		}
		if !seen[q.server] {
			msg := unknownServerMessage(q.server, seen)
			if !f.follow {
				return errors.New(msg)
			}
			fmt.Fprintf(a.stderr, "%s; following the log for new ones\n", msg)
		}
	}
	if !f.follow {
		return nil
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return followLog(ctx, dir, h.pos, followEvery, func(line []byte) error {
		if !q.keeps(line, time.Now()) {
			return nil
		}
		return p.print(line)
	})
}

// unknownServerMessage says that server has no records, and which servers
// have some.
func unknownServerMessage(server string, seen map[string]bool) string {
	msg := fmt.Sprintf("no log records for server %q", server)
	if len(seen) == 0 {
		return msg + "; no server has any yet"
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return msg + "; servers with records: " + strings.Join(names, ", ")
}

// logQuery selects records: those of one server (none when server is ""),
// written at since or later (zero: any time), the last n of them (-1: all).
type logQuery struct {
	server string
	since  time.Time
	n      int
}

// keeps reports whether q selects line, read at time at.
func (q logQuery) keeps(line []byte, at time.Time) bool {
	if q.all() {
		return true
	}
	rec, ok := parseLogRecord(line)
	return q.match(rec, ok, at)
}

// all reports whether q selects every line (but for its count).
func (q logQuery) all() bool { return q.server == "" && q.since.IsZero() }

// match reports whether q selects a record (ok false: a line that is not
// JSON). A line that is not a record has no server and no time: a server
// filter drops it, and a time filter judges it by at, the time of the
// record before it.
func (q logQuery) match(rec *logRecord, ok bool, at time.Time) bool {
	if ok && !rec.time.IsZero() {
		at = rec.time
	}
	if q.server != "" && (!ok || rec.server != q.server) {
		return false
	}
	return q.since.IsZero() || !at.Before(q.since)
}

// logHistory is what the log held when logs started.
type logHistory struct {
	lines    [][]byte        // the selected lines, oldest first
	seen     map[string]bool // servers with records in the files read
	complete bool            // every file was read
	files    []logFile       // the log's files when the backups were listed
	pos      logPos          // where following hub.log goes on
}

// readHistory reads the log newest file first, until q.n lines are
// selected or the files left were rotated out before q.since. hub.log is
// read first, and always, for the position to follow it from; when
// following, a last line still being written is left to the follower. The
// backups are listed after it: a rotation just before the read leaves the
// renamed file in the list, and one just after puts the file read among
// the backups, where it is known by its first bytes and skipped (the
// follower emits what it gained before the rename).
func readHistory(dir string, q logQuery, follow bool) (logHistory, error) {
	current, pos, err := readCurrent(dir)
	if err != nil {
		return logHistory{}, err
	}
	return readHistoryAfter(dir, current, pos, q, follow)
}

// readHistoryAfter is readHistory once hub.log was read: current is what
// it held, at pos.
func readHistoryAfter(dir string, current []byte, pos logPos, q logQuery, follow bool) (logHistory, error) {
	h := logHistory{seen: map[string]bool{}, complete: true, pos: pos}
	if follow {
		current = current[:pos.off]
	}
	var err error
	h.files, err = logFiles(dir)
	if err != nil && !errors.Is(err, errNoLogs) {
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
			rec, ok := parseLogRecord(line)
			if ok && rec.server != "" {
				h.seen[rec.server] = true
			}
			if ok && !rec.time.IsZero() {
				at = rec.time
			}
			if q.match(rec, ok, at) {
				sel = append(sel, line)
			}
			return nil
		})
		if q.n >= 0 && count+len(sel) > q.n {
			sel = sel[len(sel)-(q.n-count):]
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
		if (q.n >= 0 && count >= q.n) || (!q.since.IsZero() && f.rotated.Before(q.since)) {
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
		h.lines = append(h.lines, chunks[i]...)
	}
	return h, nil
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
			if rec, ok := parseLogRecord(line); ok && rec.server != "" {
				seen[rec.server] = true
			}
			return nil
		})
	}
	return seen, nil
}

// logPrinter prints lines of the log, as records on one human line each
// or, with json, as they are. width is the server column's, the longest
// server name printed so far.
type logPrinter struct {
	w     io.Writer
	json  bool
	width int
}

func (p *logPrinter) print(line []byte) error {
	out := line
	if !p.json {
		if rec, ok := parseLogRecord(line); ok {
			p.width = max(p.width, utf8.RuneCountInString(rec.server))
			out = []byte(rec.format(p.width))
		}
	}
	_, err := fmt.Fprintf(p.w, "%s\n", out)
	return err
}

// logRecord is one JSON line of the log: slog's time, level and message,
// the server it is about, and its other attributes in order, groups
// flattened to group.key.
type logRecord struct {
	time     time.Time
	timeText string // a time that does not parse, as written
	level    string
	msg      string
	server   string
	attrs    []logAttr
}

type logAttr struct{ key, value string }

// parseLogRecord reads one line as a JSON object; ok is false for anything
// else.
func parseLogRecord(line []byte) (rec *logRecord, ok bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return nil, false
	}
	rec = &logRecord{}
	if err := rec.readObject(line, ""); err != nil {
		return nil, false
	}
	return rec, true
}

// readObject reads the JSON object data, whose keys are named under
// prefix; the record's own fields are the top level's.
func (r *logRecord) readObject(data []byte, prefix string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		if prefix == "" && !seen[key] && raw[0] == '"' {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return err
			}
			if r.setField(key, s) {
				seen[key] = true
				continue
			}
		}
		if raw[0] == '{' {
			if err := r.readObject(raw, prefix+key+"."); err != nil {
				return err
			}
			continue
		}
		r.attrs = append(r.attrs, logAttr{key: prefix + key, value: renderJSONValue(raw)})
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON object")
	}
	return nil
}

// setField sets one of the record's own fields, reporting whether key is
// one.
func (r *logRecord) setField(key, s string) bool {
	switch key {
	case "time":
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			r.time = t
		} else {
			r.timeText = s
		}
	case "level":
		r.level = s
	case "msg":
		r.msg = s
	case "server":
		r.server = s
	default:
		return false
	}
	return true
}

// renderJSONValue is a JSON value as an attribute's text: a string
// unquoted, null as <nil>, anything else as compact JSON.
func renderJSONValue(raw json.RawMessage) string {
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	case 'n':
		return "<nil>"
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		return b.String()
	}
	return string(raw)
}

// format renders the record on one line: its time in UTC to the
// millisecond, its level, the server column (width wide, absent when no
// record printed has a server), its message and its attributes as
// key=value, quoted where needed.
func (r *logRecord) format(width int) string {
	var b strings.Builder
	switch {
	case !r.time.IsZero():
		b.WriteString(r.time.UTC().Format("2006-01-02T15:04:05.000Z07:00") + " ")
	case r.timeText != "":
		b.WriteString(escapeControls(r.timeText) + " ")
	}
	fmt.Fprintf(&b, "%-5s ", escapeControls(r.level))
	if width > 0 {
		fmt.Fprintf(&b, "%-*s  ", width, escapeControls(r.server))
	}
	b.WriteString(escapeControls(r.msg))
	for _, a := range r.attrs {
		b.WriteString(" " + quoteLogValue(a.key) + "=" + quoteLogValue(a.value))
	}
	return b.String()
}

// escapeControls writes the control characters of s, but tabs, as Go
// escapes (\n, \x1b), so that a record stays on one line and a server's
// terminal sequences are shown, not obeyed.
func escapeControls(s string) string {
	if !strings.ContainsFunc(s, isEscaped) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isEscaped(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isEscaped(r rune) bool { return unicode.IsControl(r) && r != '\t' }

// quoteLogValue quotes s, as slog's text handler does, when it is empty or
// holds a space, '=', '"' or a character that does not print.
func quoteLogValue(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || r == '=' || r == '"' || !unicode.IsPrint(r)
	}) {
		return s
	}
	return strconv.Quote(s)
}
