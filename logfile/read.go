package logfile

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// logFile is one file of the log, current or rotated.
type logFile struct {
	path    string
	rotated time.Time // when a backup was rotated out; zero for hub.log
}

// logFiles lists the log's files oldest first: the backups by the time in
// their names, then hub.log. A backup being compressed exists as both
// .log and .log.gz until the .log is removed; the .log, complete, is the
// one listed. Only regular files count. It fails with ErrNoLogs when there
// is no log at all.
func logFiles(dir string) ([]logFile, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoLogs
	}
	if err != nil {
		return nil, fmt.Errorf("log directory: %w", err)
	}
	prefix := strings.TrimSuffix(FileName, ".log") + "-"
	backups := map[string]logFile{}
	current := false
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		name := e.Name()
		if name == FileName {
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
		t, err := time.Parse(BackupTime, stamp)
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
		files = append(files, logFile{path: filepath.Join(dir, FileName)})
	}
	if len(files) == 0 {
		return nil, ErrNoLogs
	}
	return files, nil
}

// ErrNoLogs is what reading a log that was never written meets: the
// caller tells it from a log it cannot read, and says how to get one.
var ErrNoLogs = errors.New("no log files")

// readLogFile returns a log file's content, decompressed. A backup whose
// .log was compressed and removed since it was listed is read from its
// .log.gz; a file removed altogether (past the kept count) reads as empty.
func readLogFile(path string) ([]byte, error) {
	f, err := openLogForRead(path)
	if errors.Is(err, fs.ErrNotExist) && strings.HasSuffix(path, ".log") && filepath.Base(path) != FileName {
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

// Pos is how far a reader got in hub.log, for Follow to go on from there
// (History.Pos): the file it read, known by its identity and its first
// bytes (a file created after the old one was removed may get its inode
// number; never its first record, which starts with a time to the
// nanosecond), and the offset after the last whole line. The zero Pos
// follows hub.log from its start.
type Pos struct {
	file os.FileInfo
	head []byte
	off  int64
}

// logHeadLen is how many of a file's first bytes tell it from another.
const logHeadLen = 64

// same reports whether hub.log, open as f with info st, is still the file
// pos was read from.
func (pos Pos) same(f *os.File, st os.FileInfo) bool {
	if pos.file == nil || !os.SameFile(pos.file, st) {
		return false
	}
	head := make([]byte, len(pos.head))
	n, _ := f.ReadAt(head, 0)
	return bytes.Equal(head[:n], pos.head)
}

// fileHead returns data's first bytes, for Pos.head.
func fileHead(data []byte) []byte { return bytes.Clone(data[:min(len(data), logHeadLen)]) }

// readCurrent reads hub.log, and returns the position after its last whole
// line: a last line without its newline may still be being written, and a
// follower reads it again from there. A missing hub.log (between a
// rotation's rename and the new file), or something else than a file in
// its place, reads as empty at no position.
func readCurrent(dir string) ([]byte, Pos, error) {
	f, err := openLogForRead(filepath.Join(dir, FileName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Pos{}, nil
	}
	if err != nil {
		return nil, Pos{}, fmt.Errorf("log file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, Pos{}, fmt.Errorf("log file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, Pos{}, nil
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, Pos{}, fmt.Errorf("log file: %w", err)
	}
	return data, Pos{file: st, head: fileHead(data), off: int64(bytes.LastIndexByte(data, '\n') + 1)}, nil
}

// readFrom reports whether the backup at path, which holds data, is the
// file pos was read from: known by its first bytes, or when pos has none
// (the file was empty), as the same file, renamed and not compressed yet.
func (pos Pos) readFrom(path string, data []byte) bool {
	if len(pos.head) > 0 {
		return bytes.HasPrefix(data, pos.head)
	}
	if pos.file == nil || strings.HasSuffix(path, ".gz") {
		return false
	}
	st, err := os.Stat(path)
	return err == nil && os.SameFile(pos.file, st)
}
