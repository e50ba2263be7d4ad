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
	checks                            []check
}

type check struct {
	what   string
	value  float64
	target string
	ok     bool
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
	fmt.Fprintf(w, "hub with 10 stdio upstreams: ready in %s, RSS idle %.1f MB, RSS under load %.1f MB\n\n",
		r.startup.Round(time.Millisecond), float64(r.rssIdleKB)/1024, float64(r.rssLoadKB)/1024)

	one, many := "1 caller", "4 sessions x 8 callers"
	r.checks = []check{
		{"single-caller p50, hub -> HTTP / direct", ratio(r.row(one, "hub -> HTTP").p50, r.row(one, "direct (HTTP)").p50), "<= 1.30", false},
		{"32-caller throughput, hub -> HTTP / direct", r.row(many, "hub -> HTTP").throughput() / r.row(many, "direct (HTTP)").throughput(), ">= 0.80", false},
		{"32-caller throughput, hub -> stdio / direct HTTP", r.row(many, "hub -> stdio").throughput() / r.row(many, "direct (HTTP)").throughput(), ">= 1.00", false},
		{"notifications, store on / store off", r.notifyOn / r.notifyOff, ">= 0.80", false},
		{"RSS idle with 10 upstreams (MB)", float64(r.rssIdleKB) / 1024, "<= 25", false},
	}
	limits := []struct {
		max bool
		v   float64
	}{{true, 1.30}, {false, 0.80}, {false, 1.00}, {false, 0.80}, {true, 25}}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "target\tmeasured\twant\t")
	for i := range r.checks {
		c := &r.checks[i]
		c.ok = (limits[i].max && c.value <= limits[i].v) || (!limits[i].max && c.value >= limits[i].v)
		mark := "ok"
		if !c.ok {
			mark = "MISSED"
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%s\t%s\n", c.what, c.value, c.target, mark)
	}
	tw.Flush()
	d := r.row(one, "direct (HTTP)").p50
	fmt.Fprintln(w, "\nsingle-caller p50 added in front of the upstream:")
	for _, f := range []struct{ target, what string }{
		{"TCP relay -> HTTP", "a byte relay (one more process and TCP hop, no parsing)"},
		{"HTTP proxy -> HTTP", "a bare HTTP/1.1 proxy (that hop plus net/http parsing, no MCP)"},
		{"hub -> HTTP", "mcphub"},
	} {
		p := r.row(one, f.target).p50
		fmt.Fprintf(w, "  %-66s %s (%.2fx direct)\n", f.what, ms(p-d), ratio(p, d))
	}
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

func (r *report) targetsMet() bool {
	for _, c := range r.checks {
		if !c.ok {
			return false
		}
	}
	return true
}
