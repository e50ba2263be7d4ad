package logfile

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"gopkg.in/natefinch/lumberjack.v2"
)

// The hub's log file: <data>/logs/hub.log, JSON lines, whatever format the
// console gets. lumberjack rotates it by size: past logMaxMB the file is
// renamed hub-<UTC time>.log, a new hub.log starts, the renamed one is
// gzipped (hub-<time>.log.gz) and only the newest logBackups are kept.
const (
	logDirName = "logs"
	logMaxMB   = 10
	logBackups = 5
)

// FileName is the name of the file the hub writes now, in Dir; the
// rotated ones are named hub-<BackupTime>.log, gzipped once lumberjack
// gets to them.
const FileName = "hub.log"

// BackupTime is the layout of the UTC time in a rotated file's name
// (lumberjack's): the reader orders the backups by it, and a reader of
// --since skips those rotated out before the window.
const BackupTime = "2006-01-02T15-04-05.000"

// Dir is where the hub under dataDir keeps its log files: the writer and
// every reader name the same directory through it.
func Dir(dataDir string) string { return filepath.Join(dataDir, logDirName) }

// Open prepares the log directory (0700) and returns the rotating writer
// of hub.log, whose files are 0600, for a caller that writes records of
// its own (Tee is the hub's). lumberjack opens the file only on the first
// write, and a record it cannot write is lost without a word, so hub.log
// is opened once here: a file that cannot be written (a full disk, a
// directory in its place, no permission) is an error now.
func Open(dataDir string) (*lumberjack.Logger, error) {
	dir := Dir(dataDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("log directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("log directory: %w", err)
	}
	path := filepath.Join(dir, FileName)
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

// Tee returns console with its records also written, as JSON at the
// console's level, to the rotating log file under dataDir, so that
// `mcphub logs` can show a hub's records whether or not anyone watched its
// console; close closes the file. level is the console's level. With
// quietConsole (a service manager runs the hub, and keeps what it prints
// in a file of its own or its journal), the console is raised to warnings
// and errors once the log file is open: the log file has every record, and
// a second full copy would grow without a bound. When the file cannot be
// set up, the hub logs to the console alone, as it was, and says why.
func Tee(console *slog.Logger, level *slog.LevelVar, dataDir string, quietConsole bool) (log *slog.Logger, close func()) {
	w, err := Open(dataDir)
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
