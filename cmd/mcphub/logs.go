package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/logfile"
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
			q := logfile.Query{N: f.n}
			if len(args) == 1 {
				q.Server = args[0]
			}
			if f.since > 0 {
				q.Since = time.Now().Add(-time.Duration(f.since))
				if !cmd.Flags().Changed("lines") {
					q.N = -1
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
func runLogs(ctx context.Context, a *app, f logsFlags, q logfile.Query) error {
	dir := logfile.Dir(a.dataDir)
	h, err := logfile.ReadHistory(dir, q, f.follow)
	if errors.Is(err, logfile.ErrNoLogs) {
		return fmt.Errorf("no logs yet in %s: start the hub with mcphub serve", dir)
	} else if err != nil {
		return err
	}
	p := &logPrinter{w: a.stdout, json: f.json}
	for _, l := range h.Lines {
		if f.json {
			break // raw lines: no column to size
		}
		if rec, ok := logfile.ParseRecord(l); ok {
			p.width = max(p.width, utf8.RuneCountInString(rec.Server))
		}
	}
	for _, l := range h.Lines {
		if err := p.print(l); err != nil {
			return err
		}
	}
	if q.Server != "" && len(h.Lines) == 0 {
		seen, err := h.Servers()
		if err != nil {
			return err
		}
		if !seen[q.Server] {
			msg := unknownServerMessage(q.Server, seen)
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
	return logfile.Follow(ctx, dir, h.Pos, func(line []byte) error {
		if !q.Keeps(line, time.Now()) {
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
		if rec, ok := logfile.ParseRecord(line); ok {
			p.width = max(p.width, utf8.RuneCountInString(rec.Server))
			out = []byte(rec.Format(p.width))
		}
	}
	_, err := fmt.Fprintf(p.w, "%s\n", out)
	return err
}
