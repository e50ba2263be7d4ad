package main

import (
	"fmt"
	"io"
	"runtime"
	"text/tabwriter"
	"time"
)

type callRow struct {
	shape, target string
	r             result
}

// report is everything one run measured.
type report struct {
	duration                          time.Duration
	rounds                            int
	calls                             []callRow
	notifyOn, notifyOff, notifyDirect float64
	startup                           time.Duration
	rssIdleKB, rssLoadKB              int
	rssMeasured                       bool // false where this OS's RSS is not read
	checks                            []check
}

// check is one line of the targets table: a target, or a figure shown
// beside them for information.
type check struct {
	what     string
	value    float64
	measured bool    // false when this run could not measure the value
	atMost   bool    // the value must be at most limit (else at least)
	limit    float64 // the target; unused for information
	info     bool    // shown for information, not a target
}

// want says what the target is.
func (c check) want() string {
	switch {
	case c.info:
		return ""
	case c.atMost:
		return fmt.Sprintf("<= %.2f", c.limit)
	}
	return fmt.Sprintf(">= %.2f", c.limit)
}

// status says whether the target was met; only "MISSED" fails a run.
func (c check) status() string {
	switch {
	case c.info:
		return "information"
	case !c.measured:
		return "not measured"
	case c.atMost && c.value <= c.limit, !c.atMost && c.value >= c.limit:
		return "ok"
	}
	return "MISSED"
}

func (r *report) row(shape, target string) result {
	if c := r.find(shape, target); c != nil {
		return c.r
	}
	return result{}
}

func (r *report) find(shape, target string) *callRow {
	for i := range r.calls {
		if c := &r.calls[i]; c.shape == shape && c.target == target {
			return c
		}
	}
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d.Microseconds())/1000) }

// printCalls prints the tools/call table.
func (r *report) printCalls(w io.Writer) {
	fmt.Fprintf(w, "mcphub-bench: %d CPUs, %s, %d rounds of %s per load phase\n\n", runtime.NumCPU(), runtime.Version(), r.rounds, r.duration)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tools/call\ttarget\tcalls/s\tp50\tp99\terrors\tthroughput vs direct\tp50 vs direct\t")
	for _, c := range r.calls {
		d := r.row(c.shape, "direct (HTTP)")
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%s\t%s\t%d\t%.2fx\t%.2fx\t\n", c.shape, c.target, c.r.throughput(), ms(c.r.p50), ms(c.r.p99), c.r.errors,
			c.r.throughput()/d.throughput(), float64(c.r.p50)/float64(d.p50))
	}
	tw.Flush()
	for _, c := range r.calls {
		if c.r.firstErr != nil {
			fmt.Fprintf(w, "%s, %s: %d errors; the first: %v\n", c.shape, c.target, c.r.errors, c.r.firstErr)
		}
	}
}

// print prints every table and checks the targets.
func (r *report) print(w io.Writer) {
	r.printCalls(w)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "progress notifications\tper second\tvs store off\t")
	fmt.Fprintf(tw, "direct (HTTP)\t%.0f\t\t\n", r.notifyDirect)
	fmt.Fprintf(tw, "hub, store off\t%.0f\t1.00x\t\n", r.notifyOff)
	fmt.Fprintf(tw, "hub, store on\t%.0f\t%.2fx\t\n", r.notifyOn, r.notifyOn/r.notifyOff)
	tw.Flush()
	fmt.Fprintln(w)
	if r.rssMeasured {
		fmt.Fprintf(w, "hub with 10 stdio upstreams: ready in %s, RSS idle %.1f MB, RSS under load %.1f MB\n\n",
			r.startup.Round(time.Millisecond), float64(r.rssIdleKB)/1024, float64(r.rssLoadKB)/1024)
	} else {
		fmt.Fprintf(w, "hub with 10 stdio upstreams: ready in %s, RSS not measured on %s\n\n",
			r.startup.Round(time.Millisecond), runtime.GOOS)
	}

	one, many := "1 caller", "4 sessions x 8 callers"
	direct1 := r.row(one, "direct (HTTP)").p50
	hubAdded := r.row(one, "hub -> HTTP").p50 - direct1
	proxyAdded := r.row(one, "HTTP proxy -> HTTP").p50 - direct1
	directN := r.row(many, "direct (HTTP)").throughput()
	r.checks = []check{
		// What the hub adds to a single call's p50, against what the
		// minimal HTTP proxy adds in the same run. The ratio means nothing
		// when the proxy added no time at all.
		{what: "single-caller p50 added, hub -> HTTP / HTTP proxy", value: ratio(hubAdded, proxyAdded), measured: proxyAdded > 0, atMost: true, limit: 1.25},
		{what: "32-caller throughput, hub -> HTTP / direct", value: r.row(many, "hub -> HTTP").throughput() / directN, measured: directN > 0, limit: 0.85},
		{what: "32-caller throughput, hub -> stdio / direct HTTP", value: r.row(many, "hub -> stdio").throughput() / directN, measured: directN > 0, limit: 1.00},
		{what: "RSS idle with 10 stdio upstreams (MB)", value: float64(r.rssIdleKB) / 1024, measured: r.rssMeasured, atMost: true, limit: 25},
		{what: "notifications, store on / store off", value: r.notifyOn / r.notifyOff, measured: r.notifyOff > 0, info: true},
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "target\tmeasured\twant\t")
	for _, c := range r.checks {
		v := "-"
		if c.measured {
			v = fmt.Sprintf("%.2f", c.value)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.what, v, c.want(), c.status())
	}
	tw.Flush()

	fmt.Fprintln(w, "\nsingle-caller p50 added in front of the upstream:")
	for _, f := range []struct{ target, what string }{
		{"TCP relay -> HTTP", "a byte relay (one more process and TCP hop, no parsing)"},
		{"HTTP proxy -> HTTP", "a net/http proxy (that hop, net/http server and client, no MCP)"},
		{"hub -> HTTP", "mcphub"},
	} {
		p := r.row(one, f.target).p50
		fmt.Fprintf(w, "  %-66s %s (%.2fx direct)\n", f.what, ms(p-direct1), ratio(p, direct1))
	}
	first := r.checks[0]
	if first.measured {
		fmt.Fprintf(w, "  %-66s %.2f (target %s)\n", "mcphub's added p50 / the HTTP proxy's added p50", first.value, first.want())
	} else {
		fmt.Fprintf(w, "  %-66s not measured (the HTTP proxy added nothing)\n", "mcphub's added p50 / the HTTP proxy's added p50")
	}
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// targetsMet reports whether no target was missed. A target this run
// could not measure neither meets nor misses.
func (r *report) targetsMet() bool {
	for _, c := range r.checks {
		if c.status() == "MISSED" {
			return false
		}
	}
	return true
}
