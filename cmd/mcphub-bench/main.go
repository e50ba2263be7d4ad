// Command mcphub-bench measures what mcphub costs: tool calls and
// notifications through the hub against the same reference server called
// directly, all in one run on one machine, reported as ratios.
//
//	go run ./cmd/mcphub-bench                  # builds mcphub, runs everything
//	go run ./cmd/mcphub-bench -duration 5s     # longer load phases
//	go run ./cmd/mcphub-bench -rounds 4        # more rounds, pooled
//	go run ./cmd/mcphub-bench -mcphub ./mcphub # use a built binary
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
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
	flag.Parse()
	if err := run(*mcphub, *duration, *rounds, *notifications); err != nil {
		fmt.Fprintln(os.Stderr, "mcphub-bench:", err)
		os.Exit(1)
	}
}

// proc is a process the bench started and must stop.
type proc struct {
	cmd  *exec.Cmd
	name string
}

func start(name string, stderr io.Writer, bin string, args ...string) (*proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return &proc{cmd: cmd, name: name}, nil
}

// rssKB reads the process's resident set size; ok is false where it is not
// measured.
func (p *proc) rssKB() (kb int, ok bool) { return rssKB(p.cmd.Process.Pid) }

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// waitReady polls a hub's /readyz until every server is connected.
func waitReady(addr string, want int, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	for time.Since(start) < limit {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			var st struct {
				Servers []struct{ State string } `json:"servers"`
			}
			json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			n := 0
			for _, s := range st.Servers {
				if s.State == "connected" {
					n++
				}
			}
			if n >= want {
				return time.Since(start), nil
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return 0, fmt.Errorf("%s: not all %d servers connected within %s", addr, want, limit)
}

// waitHTTP polls until something answers at url.
func waitHTTP(url string, limit time.Duration) error {
	start := time.Now()
	for time.Since(start) < limit {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("nothing answers at %s", url)
}

// hub starts mcphub serve on a registry and waits until it is ready.
func startHub(mcphub, dir, registry string, servers int, extra ...string) (*proc, string, time.Duration, error) {
	addr, err := freePort()
	if err != nil {
		return nil, "", 0, err
	}
	os.MkdirAll(dir, 0o700)
	cfg := filepath.Join(dir, "hub.toml")
	text := fmt.Sprintf("[hub]\nlisten = %q\nmax_sessions_per_server = 100\n\n%s", addr, registry)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		return nil, "", 0, err
	}
	logf, _ := os.Create(filepath.Join(dir, "hub.log"))
	level := "warn"
	if keep {
		level = "debug"
	}
	args := append([]string{"serve", "--config", cfg, "--data-dir", filepath.Join(dir, "data"), "--log-level", level}, extra...)
	p, err := start("mcphub", logf, mcphub, args...)
	if err != nil {
		return nil, "", 0, err
	}
	ready, err := waitReady(addr, servers, 30*time.Second)
	if err != nil {
		p.stop()
		return nil, "", 0, err
	}
	return p, addr, ready, nil
}

func buildMcphub(dir string) (string, error) {
	out := filepath.Join(dir, "mcphub")
	if runtime.GOOS == "windows" {
		out += ".exe"
	}
	cmd := exec.Command("go", "build", "-o", out, "./cmd/mcphub")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build mcphub (run from the repository root, or pass -mcphub): %w", err)
	}
	return out, nil
}

func run(mcphub string, d time.Duration, rounds, notifications int) error {
	work, err := os.MkdirTemp("", "mcphub-bench-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Fprintln(os.Stderr, "keeping", work)
	} else {
		defer os.RemoveAll(work)
	}
	if mcphub == "" {
		if mcphub, err = buildMcphub(work); err != nil {
			return err
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var procs []*proc
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()

	// The reference upstream over HTTP, in its own process.
	upAddr, err := freePort()
	if err != nil {
		return err
	}
	up, err := start("upstream", io.Discard, self, "upstream", "-http", upAddr)
	if err != nil {
		return err
	}
	procs = append(procs, up)
	direct := "http://" + upAddr + "/mcp"
	if err := waitHTTP(direct, 10*time.Second); err != nil {
		return err
	}

	// Two floors in front of the upstream: a byte relay (the least any
	// proxy costs) and an HTTP proxy that serves each request with
	// net/http's server and forwards it through a kept-alive pool of
	// upstream connections, and does nothing else.
	floors := map[string]string{}
	for _, mode := range []string{"relay", "http-proxy"} {
		addr, err := freePort()
		if err != nil {
			return err
		}
		p, err := start(mode, io.Discard, self, mode, "-listen", addr, "-to", upAddr)
		if err != nil {
			return err
		}
		procs = append(procs, p)
		if err := waitHTTP("http://"+addr+"/mcp", 10*time.Second); err != nil {
			return err
		}
		floors[mode] = "http://" + addr + "/mcp"
	}

	// Hub A (store on) and hub B (store off), each with the upstream over
	// HTTP (unprefixed) and over stdio (prefix s).
	reg := fmt.Sprintf("[servers.http]\nurl = %q\ntransport = \"streamable-http\"\nprefix = \"\"\n\n[servers.stdio]\ncommand = %q\nargs = [\"upstream\"]\nprefix = \"s\"\n", direct, self)
	hubA, addrA, _, err := startHub(mcphub, filepath.Join(work, "a"), reg, 2)
	if err != nil {
		return err
	}
	procs = append(procs, hubA)
	hubB, addrB, _, err := startHub(mcphub, filepath.Join(work, "b"), reg, 2, "--no-store")
	if err != nil {
		return err
	}
	procs = append(procs, hubB)

	rep := &report{duration: d, rounds: rounds}
	fmt.Fprintf(os.Stderr, "measuring calls (%d rounds of %s per phase)...\n", rounds, d)
	targets := []struct{ name, url, tool string }{
		{"direct (HTTP)", direct, "echo"},
		{"TCP relay -> HTTP", floors["relay"], "echo"},
		{"HTTP proxy -> HTTP", floors["http-proxy"], "echo"},
		{"hub -> HTTP", "http://" + addrA + "/mcp", "echo"},
		{"hub -> stdio", "http://" + addrA + "/mcp", "s__echo"},
		{"hub -> HTTP, store off", "http://" + addrB + "/mcp", "echo"},
	}
	for _, shape := range []struct {
		name              string
		sessions, callers int
	}{{"1 caller", 1, 1}, {"4 sessions x 8 callers", 4, 8}} {
		for _, t := range targets {
			if only == "" || strings.Contains(shape.name+"/"+t.name, only) {
				rep.calls = append(rep.calls, callRow{shape: shape.name, target: t.name})
			}
		}
		// Rounds alternate the order of the targets, so none is always
		// measured first or last (the machine's state drifts).
		for round := range rounds {
			for i := range targets {
				t := targets[i]
				if round%2 == 1 {
					t = targets[len(targets)-1-i]
				}
				row := rep.find(shape.name, t.name)
				if row == nil {
					continue
				}
				r, err := callLoad(t.url, t.tool, shape.sessions, shape.callers, d)
				if err != nil {
					return fmt.Errorf("%s, %s: %w", t.name, shape.name, err)
				}
				row.r = row.r.add(r)
			}
		}
	}

	if only != "" {
		rep.printCalls(os.Stdout)
		return nil
	}
	fmt.Fprintln(os.Stderr, "measuring notifications...")
	var nts []*notifier
	for _, url := range []string{"http://" + addrA + "/mcp", "http://" + addrB + "/mcp", direct} {
		nt, err := newNotifier(url, "progress", notifications)
		if err != nil {
			return fmt.Errorf("notifications, %s: %w", url, err)
		}
		defer nt.cs.Close()
		nts = append(nts, nt)
	}
	// Rounds alternate store on and off; each keeps its best.
	for r := range max(3, rounds) {
		for i := range nts {
			nt := nts[i]
			if r%2 == 1 {
				nt = nts[len(nts)-1-i]
			}
			if err := nt.round(r); err != nil {
				return fmt.Errorf("notifications: %w", err)
			}
		}
	}
	on, off, directN := nts[0].best, nts[1].best, nts[2].best
	rep.notifyOn, rep.notifyOff, rep.notifyDirect = on, off, directN

	fmt.Fprintln(os.Stderr, "measuring startup and memory with 10 stdio upstreams...")
	var ten strings.Builder
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&ten, "[servers.s%d]\ncommand = %q\nargs = [\"upstream\"]\n\n", i, self)
	}
	hubC, addrC, ready, err := startHub(mcphub, filepath.Join(work, "c"), ten.String(), 10)
	if err != nil {
		return err
	}
	procs = append(procs, hubC)
	rep.startup = ready
	time.Sleep(time.Second) // let the idle hub settle before reading its memory
	rep.rssIdleKB, rep.rssMeasured = hubC.rssKB()
	stopSampling := sampleRSS(hubC, &rep.rssLoadKB)
	if _, err := callLoad("http://"+addrC+"/mcp", "s0__echo", 4, 8, d); err != nil {
		stopSampling()
		return fmt.Errorf("load on 10 upstreams: %w", err)
	}
	stopSampling()

	rep.print(os.Stdout)
	if !rep.targetsMet() {
		return errors.New("some targets were missed (see the table)")
	}
	return nil
}

// sampleRSS records the highest RSS of p until stopped.
func sampleRSS(p *proc, max *int) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if kb, _ := p.rssKB(); kb > *max {
				*max = kb
			}
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
