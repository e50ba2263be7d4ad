package logfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"
)

// followEvery is how often Follow looks at hub.log.
const followEvery = 250 * time.Millisecond

// Follow emits each line appended to hub.log in dir after pos, without its
// line ending, looking four times a second (followEvery), until ctx ends
// or emit fails; it looks once at least. It opens the file on each look rather than holding it,
// and opens it so that it may be renamed while open (openLogForRead), so
// that it never stands in the way of a rotation. When hub.log is another
// file than last time, the hub rotated it: the rest of the old one, now a
// backup, is emitted first, then any backup rotated out after it, then the
// new hub.log from its start.
func Follow(ctx context.Context, dir string, pos Pos, emit func(line []byte) error) error {
	tick := time.NewTicker(followEvery)
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
func followOnce(dir string, pos Pos, emit func(line []byte) error) (Pos, error) {
	f, err := openLogForRead(filepath.Join(dir, FileName))
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
		pos = Pos{}
	}
	if st.Size() < pos.off {
		pos = Pos{} // truncated in place
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
func emitRotatedRest(dir string, pos Pos, emit func(line []byte) error) error {
	files, err := logFiles(dir)
	if err != nil && !errors.Is(err, ErrNoLogs) {
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
