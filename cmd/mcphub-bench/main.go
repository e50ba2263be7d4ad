// Command mcphub-bench measures what mcphub costs: tool calls and
// notifications through the hub against the same reference server called
// directly, all in one run on one machine, reported as ratios.
//
//	go run ./cmd/mcphub-bench                  # builds mcphub, runs everything
//	go run ./cmd/mcphub-bench -duration 5s     # longer load phases
//	go run ./cmd/mcphub-bench -rounds 4        # more rounds, pooled
//	go run ./cmd/mcphub-bench -mcphub ./mcphub # use a built binary
//	go run ./cmd/mcphub-bench -team            # SQLite vs PostgreSQL vs 3 replicas (team.go)
//
// It starts the reference upstream (the official Go SDK server with an echo
// tool and a progress tool, this binary's "upstream" mode) over HTTP and
// over stdio, hubs in front of it, and two floors in front of it: a byte
// relay (this binary's "relay" mode: what any proxy pays for its extra hop)
// and a minimal net/http proxy ("http-proxy" mode: that hop plus net/http's
// server, and its client with a pool of kept-alive upstream connections,
// and no MCP work at all). It drives them all with the official Go SDK
// client. The hub's single-caller latency is judged against what the HTTP
// proxy adds over calling the upstream directly.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// only limits the call phases to those matching it; see -only. keep keeps
// the work directory with debug logs; see -keep.
var (
	only string
	keep bool
)

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "relay" || os.Args[1] == "http-proxy") {
		fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
		listen := fs.String("listen", "", "address to accept on")
		to := fs.String("to", "", "address to forward to")
		fs.Parse(os.Args[2:])
		ln, err := net.Listen("tcp", *listen)
		if err == nil {
			err = serveFloor(os.Args[1], ln, *to)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "balance" {
		fs := flag.NewFlagSet("balance", flag.ExitOnError)
		listen := fs.String("listen", "", "address to accept on")
		to := fs.String("to", "", "comma-separated addresses of the replicas")
		fs.Parse(os.Args[2:])
		ln, err := net.Listen("tcp", *listen)
		if err == nil {
			err = serveBalancer(ln, strings.Split(*to, ","))
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "upstream" {
		fs := flag.NewFlagSet("upstream", flag.ExitOnError)
		addr := fs.String("http", "", "serve Streamable HTTP at this address instead of stdio")
		fs.Parse(os.Args[2:])
		if err := runUpstream(*addr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	duration := flag.Duration("duration", 3*time.Second, "length of each load phase")
	rounds := flag.Int("rounds", 2, "how many times each load phase runs, in alternating order; the rounds are pooled")
	mcphub := flag.String("mcphub", "", "mcphub binary to measure (default: build ./cmd/mcphub)")
	notifications := flag.Int("notifications", 5000, "progress notifications per notification round")
	flag.StringVar(&only, "only", "", "run only the call phases whose \"shape/target\" contains this (for profiling)")
	flag.BoolVar(&keep, "keep", false, "keep the work directory, with the hubs' debug logs")
	team := flag.Bool("team", false, "instead: one hub on SQLite vs one on PostgreSQL vs three replicas behind a balancer, and PostgreSQL round trips per call (needs MCPHUB_TEST_POSTGRES or scripts/postgres start)")
	teamCalls := flag.Int("team-calls", 500, "with -team: calls per round-trip count")
	flag.Parse()
	if *team {
		if err := runTeam(*mcphub, *duration, *rounds, *teamCalls); err != nil {
			fmt.Fprintln(os.Stderr, "mcphub-bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*mcphub, *duration, *rounds, *notifications); err != nil {
		fmt.Fprintln(os.Stderr, "mcphub-bench:", err)
		os.Exit(1)
	}
}

// newBench makes a work directory (removed by cleanup, unless -keep) and a
// bench whose mcphub is the one given, or one built into the directory.
func newBench(prefix, mcphub string) (*bench, func(), error) {
	work, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { os.RemoveAll(work) }
	if keep {
		fmt.Fprintln(os.Stderr, "keeping", work)
		cleanup = func() {}
	}
	if mcphub == "" {
		if mcphub, err = buildMcphub(work); err != nil {
			cleanup()
			return nil, nil, err
		}
	}
	self, err := os.Executable()
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return &bench{mcphub: mcphub, self: self, work: work}, cleanup, nil
}

// run measures everything once and prints the report. It fails when a
// target was missed.
func run(mcphub string, d time.Duration, rounds, notifications int) error {
	b, cleanup, err := newBench("mcphub-bench-", mcphub)
	if err != nil {
		return err
	}
	defer cleanup()
	defer b.stop()
	if err := b.startTargets(); err != nil {
		return err
	}

	rep := &report{duration: d, rounds: rounds}
	if err := b.measureCalls(rep, d, rounds); err != nil {
		return err
	}
	if only != "" {
		rep.printCalls(os.Stdout)
		return nil
	}
	if err := b.measureNotifications(rep, rounds, notifications); err != nil {
		return err
	}
	if err := b.measureStartup(rep, d); err != nil {
		return err
	}

	rep.print(os.Stdout)
	if !rep.targetsMet() {
		return errors.New("some targets were missed (see the table)")
	}
	return nil
}
