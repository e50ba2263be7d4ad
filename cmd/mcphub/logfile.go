package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gopkg.in/natefinch/lumberjack.v2"
)

// The hub's log file: <data>/logs/hub.log, JSON lines, whatever format the
// console gets. lumberjack rotates it by size: past logMaxMB the file is
// renamed hub-<UTC time>.log, a new hub.log starts, the renamed one is
// gzipped (hub-<time>.log.gz) and only the newest logBackups are kept.
const (
	logDirName    = "logs"
	logFileName   = "hub.log"
	logMaxMB      = 10
	logBackups    = 5
	logBackupTime = "2006-01-02T15-04-05.000" // lumberjack's, in UTC
)

// logDir is where the hub keeps its log files.
func logDir(dataDir string) string { return filepath.Join(dataDir, logDirName) }

// openLogFile prepares the log directory (0700) and returns the rotating
// writer of hub.log, whose files are 0600. lumberjack opens the file only
// on the first write, and a record it cannot write is lost without a word,
// so hub.log is opened once here: a file that cannot be written (a full
// disk, a directory in its place, no permission) is an error now.
func openLogFile(dataDir string) (*lumberjack.Logger, error) {
	dir := logDir(dataDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("log directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("log directory: %w", err)
	}
	path := filepath.Join(dir, logFileName)
	probe, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	if err := probe.Close(); err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	// lumberjack appends to an existing file with its mode, and gives a
	// rotated file the mode of the one it replaces.
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	return &lumberjack.Logger{Filename: path, MaxSize: logMaxMB, MaxBackups: logBackups, Compress: true}, nil
}

// withLogFile returns console with its records also written, as JSON at
// the console's level, to the rotating log file under dataDir; close closes
// the file. level is the console's level. With quietConsole (a service
// manager runs the hub, and keeps what it prints in a file of its own or
// its journal), the console is raised to warnings and errors once the log
// file is open: the log file has every record, and a second full copy
// would grow without a bound. When the file cannot be set up, the hub logs
// to the console alone, as it was, and says why.
func withLogFile(console *slog.Logger, level *slog.LevelVar, dataDir string, quietConsole bool) (log *slog.Logger, close func()) {
	w, err := openLogFile(dataDir)
	if err != nil {
		console.Warn("not writing the log file; mcphub logs will not show this run", "err", err)
		return console, func() {}
	}
	file := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level.Level()})
	if quietConsole {
		level.Set(max(level.Level(), slog.LevelWarn))
	}
	return slog.New(slog.NewMultiHandler(console.Handler(), file)), func() { w.Close() }
}

// logFile is one file of the log, current or rotated.
type logFile struct {
	path    string
	rotated time.Time // when a backup was rotated out; zero for hub.log
}

// logFiles lists the log's files oldest first: the backups by the time in
// their names, then hub.log. A backup being compressed exists as both
// .log and .log.gz until the .log is removed; the .log, complete, is the
// one listed. Only regular files count. It fails with errNoLogs when there
// is no log at all.
func logFiles(dir string) ([]logFile, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoLogs
	}
	if err != nil {
		return nil, fmt.Errorf("log directory: %w", err)
	}
	prefix := strings.TrimSuffix(logFileName, ".log") + "-"
	backups := map[string]logFile{}
	current := false
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		name := e.Name()
		if name == logFileName {
			current = true
			continue
		}
		stamp, gz := strings.CutSuffix(name, ".log.gz")
		if !gz {
			var ok bool
			if stamp, ok = strings.CutSuffix(name, ".log"); !ok {
				continue
			}
		}
		stamp, ok := strings.CutPrefix(stamp, prefix)
		if !ok {
			continue
		}
		t, err := time.Parse(logBackupTime, stamp)
		if err != nil {
			continue
		}
		if prev, seen := backups[stamp]; seen && !strings.HasSuffix(prev.path, ".gz") {
			continue
		}
		backups[stamp] = logFile{path: filepath.Join(dir, name), rotated: t}
	}
	files := make([]logFile, 0, len(backups)+1)
	for _, f := range backups {
		files = append(files, f)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].rotated.Before(files[j].rotated) })
	if current {
		files = append(files, logFile{path: filepath.Join(dir, logFileName)})
	}
	if len(files) == 0 {
		return nil, errNoLogs
	}
	return files, nil
}

// errNoLogs is what reading a log that was never written meets.
var errNoLogs = errors.New("no log files")

// readLogFile returns a log file's content, decompressed. A backup whose
// .log was compressed and removed since it was listed is read from its
// .log.gz; a file removed altogether (past the kept count) reads as empty.
func readLogFile(path string) ([]byte, error) {
	f, err := openLogForRead(path)
	if errors.Is(err, fs.ErrNotExist) && strings.HasSuffix(path, ".log") && filepath.Base(path) != logFileName {
		path += ".gz"
		f, err = openLogForRead(path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("log file %s: %w", path, err)
		}
		r = zr
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("log file %s: %w", path, err)
	}
	return data, nil
}

// logPos is how far a reader got in hub.log: the file it read, known by
// its identity and its first bytes (a file created after the old one was
// removed may get its inode number; never its first record, which starts
// with a time to the nanosecond), and the offset after the last whole line.
type logPos struct {
	file os.FileInfo
	head []byte
	off  int64
}

// logHeadLen is how many of a file's first bytes tell it from another.
const logHeadLen = 64

// same reports whether hub.log, open as f with info st, is still the file
// pos was read from.
func (pos logPos) same(f *os.File, st os.FileInfo) bool {
	if pos.file == nil || !os.SameFile(pos.file, st) {
		return false
	}
	head := make([]byte, len(pos.head))
	n, _ := f.ReadAt(head, 0)
	return bytes.Equal(head[:n], pos.head)
}

// fileHead returns data's first bytes, for logPos.head.
func fileHead(data []byte) []byte { return bytes.Clone(data[:min(len(data), logHeadLen)]) }

// readCurrent reads hub.log, and returns the position after its last whole
// line: a last line without its newline may still be being written, and a
// follower reads it again from there. A missing hub.log (between a
// rotation's rename and the new file), or something else than a file in
// its place, reads as empty at no position.
func readCurrent(dir string) ([]byte, logPos, error) {
	f, err := openLogForRead(filepath.Join(dir, logFileName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, logPos{}, nil
	}
	if err != nil {
		return nil, logPos{}, fmt.Errorf("log file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, logPos{}, fmt.Errorf("log file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, logPos{}, nil
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, logPos{}, fmt.Errorf("log file: %w", err)
	}
	return data, logPos{file: st, head: fileHead(data), off: int64(bytes.LastIndexByte(data, '\n') + 1)}, nil
}

// followEvery is how often follow looks at hub.log.
const followEvery = 250 * time.Millisecond

// followLog emits each line appended to hub.log after pos, every `every`,
// until ctx ends. It opens the file on each look rather than holding it,
// and opens it so that it may be renamed while open (openLogForRead), so
// that it never stands in the way of a rotation. When hub.log is another
// file than last time, the hub rotated it: the rest of the old one, now a
// backup, is emitted first, then any backup rotated out after it, then the
// new hub.log from its start.
func followLog(ctx context.Context, dir string, pos logPos, every time.Duration, emit func(line []byte) error) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		next, err := followOnce(dir, pos, emit)
		if err != nil {
			return err
		}
		pos = next
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// followOnce emits what hub.log gained since pos and returns the new
// position.
func followOnce(dir string, pos logPos, emit func(line []byte) error) (logPos, error) {
	f, err := openLogForRead(filepath.Join(dir, logFileName))
	if errors.Is(err, fs.ErrNotExist) {
		return pos, nil // between a rotation's rename and the new file, or no hub yet
	}
	if err != nil {
		return pos, fmt.Errorf("log file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return pos, fmt.Errorf("log file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return pos, nil
	}
	if pos.file != nil && !pos.same(f, st) {
		if err := emitRotatedRest(dir, pos, emit); err != nil {
			return pos, err
		}
		pos = logPos{}
	}
	if st.Size() < pos.off {
		pos = logPos{} // truncated in place
	}
	pos.file = st
	if st.Size() == pos.off {
		return pos, nil
	}
	data := make([]byte, st.Size()-pos.off)
	n, err := f.ReadAt(data, pos.off)
	if err != nil && !errors.Is(err, io.EOF) {
		return pos, fmt.Errorf("log file: %w", err)
	}
	data = data[:n]
	// data is the file from pos.off on: it may extend the file's head.
	if h := int64(len(pos.head)); h < logHeadLen && pos.off <= h {
		if end := min(int64(n), logHeadLen-pos.off); h-pos.off < end {
			pos.head = append(pos.head, data[h-pos.off:end]...)
		}
	}
	whole := bytes.LastIndexByte(data, '\n') + 1
	if err := emitLines(data[:whole], emit); err != nil {
		return pos, err
	}
	pos.off += int64(whole)
	return pos, nil
}

// emitRotatedRest emits what the hub.log pos was read from, now a backup,
// holds past pos.off (a last line without its newline included), then each
// backup rotated out after it, whole: when the hub rotated more than once
// since the last look, those were hub.log in between. The old file is the
// backup pos.readFrom; when none is, the newest backup is taken for it.
func emitRotatedRest(dir string, pos logPos, emit func(line []byte) error) error {
	files, err := logFiles(dir)
	if err != nil && !errors.Is(err, errNoLogs) {
		return err
	}
	var backups []logFile
	for _, f := range files {
		if !f.rotated.IsZero() {
			backups = append(backups, f)
		}
	}
	if len(backups) == 0 {
		return nil
	}
	// Newest first: the old file is most often the newest backup.
	contents := make([][]byte, len(backups))
	from := -1
	for i := len(backups) - 1; i >= 0 && from < 0; i-- {
		data, err := readLogFile(backups[i].path)
		if err != nil {
			return err
		}
		contents[i] = data
		if pos.readFrom(backups[i].path, data) {
			from = i
		}
	}
	if from < 0 {
		from = len(backups) - 1
	}
	for i := from; i < len(backups); i++ {
		data := contents[i]
		if i == from {
			if int64(len(data)) <= pos.off {
				continue
			}
			data = data[pos.off:]
		}
		if err := emitLines(data, emit); err != nil {
			return err
		}
	}
	return nil
}

// readFrom reports whether the backup at path, which holds data, is the
// file pos was read from: known by its first bytes, or when pos has none
// (the file was empty), as the same file, renamed and not compressed yet.
func (pos logPos) readFrom(path string, data []byte) bool {
	if len(pos.head) > 0 {
		return bytes.HasPrefix(data, pos.head)
	}
	if pos.file == nil || strings.HasSuffix(path, ".gz") {
		return false
	}
	st, err := os.Stat(path)
	return err == nil && os.SameFile(pos.file, st)
}

// emitLines calls emit for each line of data that is not empty, without
// its line ending.
func emitLines(data []byte, emit func(line []byte) error) error {
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte{'\n'})
		data = rest
		if line = bytes.TrimSuffix(line, []byte{'\r'}); len(line) == 0 {
			continue
		}
		if err := emit(line); err != nil {
			return err
		}
	}
	return nil
}
