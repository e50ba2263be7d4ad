package logfile_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/mcphub/mcphub/logfile"
)

// The hub writes its records through Tee, to its console and to the log
// file; a reader, whether or not the hub still runs, reads them back with
// a Query.
func Example() {
	dataDir, err := os.MkdirTemp("", "mcphub-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dataDir)

	level := new(slog.LevelVar)
	console := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: level}))
	log, closeLog := logfile.Tee(console, level, dataDir, false)
	log.Info("listening", "addr", "127.0.0.1:8765")
	log.With("server", "github").Warn("npm warn exec", "stream", "stderr")
	closeLog()

	h, err := logfile.ReadHistory(logfile.Dir(dataDir), logfile.Query{Server: "github", N: 50}, false)
	if err != nil {
		panic(err)
	}
	for _, line := range h.Lines {
		rec, _ := logfile.ParseRecord(line)
		fmt.Println(rec.Level, rec.Server, rec.Msg, rec.Attrs)
	}
	// Output:
	// WARN github npm warn exec [{stream stderr}]
}

// A reader prints the records read so far, then follows the log from
// where it stopped; the context ends the following (here at once, after
// one look).
func ExampleFollow() {
	dataDir, err := os.MkdirTemp("", "mcphub-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dataDir)
	w, err := logfile.Open(dataDir)
	if err != nil {
		panic(err)
	}
	defer w.Close()
	log := slog.New(slog.NewJSONHandler(w, nil))
	log.Info("read before following")

	dir := logfile.Dir(dataDir)
	h, err := logfile.ReadHistory(dir, logfile.Query{N: -1}, true)
	if err != nil {
		panic(err)
	}
	log.Info("appended since")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = logfile.Follow(ctx, dir, h.Pos, func(line []byte) error {
		rec, _ := logfile.ParseRecord(line)
		fmt.Println("new:", rec.Msg)
		return nil
	})
	fmt.Println(len(h.Lines), "read before,", err)
	// Output:
	// new: appended since
	// 1 read before, <nil>
}

// Format puts a record on one line for a terminal, in UTC, with a server
// column as wide as the reader's longest server name.
func ExampleRecord_Format() {
	line := `{"time":"2026-11-25T11:00:00.5+01:00","level":"WARN","msg":"npm warn exec","server":"github","stream":"stderr","req":{"id":7}}`
	rec, ok := logfile.ParseRecord([]byte(line))
	fmt.Println(ok)
	fmt.Println(rec.Format(6))
	_, ok = logfile.ParseRecord([]byte("panic: runtime error"))
	fmt.Println(ok)
	// Output:
	// true
	// 2026-11-25T10:00:00.500Z WARN  github  npm warn exec stream=stderr req.id=7
	// false
}
