package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// bench is one run's processes, and the endpoints they serve.
type bench struct {
	mcphub, self, work string

	procs   []*proc
	closers []func() error // client sessions, closed before the processes stop

	direct       string            // the reference upstream, called directly
	floors       map[string]string // floor mode → its endpoint
	addrA, addrB string            // hub A (store on) and hub B (store off)
}

// stop closes the client sessions, last opened first, then stops every
// process the run started.
func (b *bench) stop() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
	for _, p := range b.procs {
		p.stop()
	}
}

// startTargets starts what the call and notification phases measure: the
// upstream, the floors in front of it, and hubs A and B.
func (b *bench) startTargets() error {
	// The reference upstream over HTTP, in its own process.
	upAddr, err := freePort()
	if err != nil {
		return err
	}
	up, err := start("upstream", io.Discard, b.self, "upstream", "-http", upAddr)
	if err != nil {
		return err
	}
	b.procs = append(b.procs, up)
	b.direct = "http://" + upAddr + "/mcp"
	if err := waitHTTP(b.direct, 10*time.Second); err != nil {
		return err
	}

	// Two floors in front of the upstream: a byte relay (the least any
	// proxy costs) and an HTTP proxy that serves each request with
	// net/http's server and forwards it through a kept-alive pool of
	// upstream connections, and does nothing else.
	b.floors = map[string]string{}
	for _, mode := range []string{"relay", "http-proxy"} {
		addr, err := freePort()
		if err != nil {
			return err
		}
		p, err := start(mode, io.Discard, b.self, mode, "-listen", addr, "-to", upAddr)
		if err != nil {
			return err
		}
		b.procs = append(b.procs, p)
		if err := waitHTTP("http://"+addr+"/mcp", 10*time.Second); err != nil {
			return err
		}
		b.floors[mode] = "http://" + addr + "/mcp"
	}

	// Hub A (store on) and hub B (store off), each with the upstream over
	// HTTP (unprefixed) and over stdio (prefix s).
	reg := fmt.Sprintf("[servers.http]\nurl = %q\ntransport = \"streamable-http\"\nprefix = \"\"\n\n[servers.stdio]\ncommand = %q\nargs = [\"upstream\"]\nprefix = \"s\"\n", b.direct, b.self)
	hubA, addrA, _, err := startHub(b.mcphub, filepath.Join(b.work, "a"), reg, 2)
	if err != nil {
		return err
	}
	b.procs = append(b.procs, hubA)
	b.addrA = addrA
	hubB, addrB, _, err := startHub(b.mcphub, filepath.Join(b.work, "b"), reg, 2, "--no-store")
	if err != nil {
		return err
	}
	b.procs = append(b.procs, hubB)
	b.addrB = addrB
	return nil
}

// measureCalls runs the tools/call load phases against every target, in
// each shape, and records them in rep.
func (b *bench) measureCalls(rep *report, d time.Duration, rounds int) error {
	fmt.Fprintf(os.Stderr, "measuring calls (%d rounds of %s per phase)...\n", rounds, d)
	targets := []struct{ name, url, tool string }{
		{"direct (HTTP)", b.direct, "echo"},
		{"TCP relay -> HTTP", b.floors["relay"], "echo"},
		{"HTTP proxy -> HTTP", b.floors["http-proxy"], "echo"},
		{"hub -> HTTP", "http://" + b.addrA + "/mcp", "echo"},
		{"hub -> stdio", "http://" + b.addrA + "/mcp", "s__echo"},
		{"hub -> HTTP, store off", "http://" + b.addrB + "/mcp", "echo"},
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
	return nil
}

// measureNotifications measures how fast progress notifications arrive
// through hub A, through hub B and directly. The sessions stay open until
// the run ends.
func (b *bench) measureNotifications(rep *report, rounds, notifications int) error {
	fmt.Fprintln(os.Stderr, "measuring notifications...")
	var nts []*notifier
	for _, url := range []string{"http://" + b.addrA + "/mcp", "http://" + b.addrB + "/mcp", b.direct} {
		nt, err := newNotifier(url, "progress", notifications)
		if err != nil {
			return fmt.Errorf("notifications, %s: %w", url, err)
		}
		b.closers = append(b.closers, nt.cs.Close)
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
	return nil
}

// measureStartup starts hub C with 10 stdio upstreams and records how soon
// it is ready and its memory, idle and under load.
func (b *bench) measureStartup(rep *report, d time.Duration) error {
	fmt.Fprintln(os.Stderr, "measuring startup and memory with 10 stdio upstreams...")
	var ten strings.Builder
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&ten, "[servers.s%d]\ncommand = %q\nargs = [\"upstream\"]\n\n", i, b.self)
	}
	hubC, addrC, ready, err := startHub(b.mcphub, filepath.Join(b.work, "c"), ten.String(), 10)
	if err != nil {
		return err
	}
	b.procs = append(b.procs, hubC)
	rep.startup = ready
	time.Sleep(time.Second) // let the idle hub settle before reading its memory
	rep.rssIdleKB, rep.rssMeasured = hubC.rssKB()
	stopSampling := sampleRSS(hubC, &rep.rssLoadKB)
	if _, err := callLoad("http://"+addrC+"/mcp", "s0__echo", 4, 8, d); err != nil {
		stopSampling()
		return fmt.Errorf("load on 10 upstreams: %w", err)
	}
	stopSampling()
	return nil
}
