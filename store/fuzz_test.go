package store

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzSweep writes events of a few sessions and streams as plan says, then
// sweeps with the fuzzed retention and compares every stream's kept events
// with a model of the rules: drop from the oldest end by age (stopping at
// the first newer event), then per session, then across sessions.
//
// Each byte of plan is one event: bits 0-1 its session, bit 2 its stream,
// bits 3-6 its size, bit 7 a clock that jumped ahead when it was stored.
func FuzzSweep(f *testing.F) {
	f.Add([]byte{0x00, 0x04, 0x19, 0x2d, 0x42, 0x7f}, uint8(3), uint16(40), uint16(60), uint8(2))
	f.Add([]byte{0x80, 0x01, 0x02, 0x03, 0x08, 0x10}, uint8(0), uint16(0), uint16(0), uint8(4))
	f.Add([]byte(strings.Repeat("\x7d\x3a\x11", 10)), uint8(5), uint16(0), uint16(100), uint8(0))
	f.Fuzz(func(t *testing.T, plan []byte, sessEvents uint8, sessBytes, totalBytes uint16, ageCut uint8) {
		if len(plan) > 64 {
			plan = plan[:64]
		}
		type ev struct {
			session, stream string
			seq, size       int
			stored          time.Time
		}
		s := openT(t, t.TempDir())
		for i := range 3 {
			id := fmt.Sprint("s", i)
			write(t, s, Op{Session: session(id, t0)},
				Op{Stream: &Stream{ID: id + "/a", Session: id}},
				Op{Stream: &Stream{ID: id + "/b", Session: id, Post: true}})
		}
		var all []ev
		next := map[string]int{}
		for i, b := range plan {
			e := ev{session: fmt.Sprint("s", int(b&3)%3), size: int(b>>3) & 15, stored: t0.Add(time.Duration(i) * time.Minute)}
			e.stream = e.session + "/" + string("ab"[b>>2&1])
			if b&0x80 != 0 {
				e.stored = e.stored.Add(100 * time.Minute)
			}
			e.seq = next[e.stream]
			next[e.stream]++
			write(t, s, event(e.session, e.stream, e.seq, strings.Repeat("x", e.size)))
			setStored(t, s, e.stream, e.seq, e.stored)
			all = append(all, e)
		}
		keep := Retention{SessionEvents: int(sessEvents), SessionBytes: int64(sessBytes), TotalBytes: int64(totalBytes)}
		if ageCut > 0 {
			keep.Before = t0.Add(time.Duration(ageCut) * time.Minute)
		}
		if _, err := s.Sweep(t0.Add(-time.Hour), keep); err != nil {
			t.Fatal(err)
		}

		// The model.
		kept := all
		if !keep.Before.IsZero() {
			for len(kept) > 0 && kept[0].stored.Before(keep.Before) {
				kept = kept[1:]
			}
		}
		dropOldest := func(in []ev, of func(ev) bool, over func(n, b int) bool) []ev {
			n, b := 0, 0
			for _, e := range in {
				if of(e) {
					n, b = n+1, b+e.size
				}
			}
			var out []ev
			for _, e := range in {
				if of(e) && over(n, b) {
					n, b = n-1, b-e.size
					continue
				}
				out = append(out, e)
			}
			return out
		}
		if sessEvents > 0 || sessBytes > 0 {
			for i := range 3 {
				id := fmt.Sprint("s", i)
				kept = dropOldest(kept, func(e ev) bool { return e.session == id }, func(n, b int) bool {
					return (sessEvents > 0 && n > int(sessEvents)) || (sessBytes > 0 && b > int(sessBytes))
				})
			}
		}
		if totalBytes > 0 {
			kept = dropOldest(kept, func(ev) bool { return true }, func(_, b int) bool { return b > int(totalBytes) })
		}

		for i := range 3 {
			id := fmt.Sprint("s", i)
			streams := streamsByID(t, s, id)
			for _, st := range []string{id + "/a", id + "/b"} {
				var want []int
				for _, e := range kept {
					if e.stream == st {
						want = append(want, e.seq)
					}
				}
				if got := seqs(eventsAfter(t, s, st, -1)); !slices.Equal(got, want) {
					t.Errorf("%s kept %v, want %v", st, got, want)
				}
				if got := streams[st].NextSeq; got != next[st] {
					t.Errorf("%s NextSeq = %d, want %d", st, got, next[st])
				}
			}
		}
	})
}

// FuzzRedactURL: whatever the URL, its password never survives masking.
func FuzzRedactURL(f *testing.F) {
	for _, s := range []string{"postgres://u:pw@h/db", "postgresql://h/db?password=pw", "postgres://u:p%40w@h:1/d?sslmode=disable",
		"::", "host=h password=pw", "postgres://u:pw@[::1]:5432/db?password=pw2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if _, err := url.Parse(raw); err != nil {
			return
		}
		got := RedactURL(raw)
		g, err := url.Parse(got)
		if err != nil {
			t.Fatalf("RedactURL(%q) = %q, which does not parse: %v", raw, got, err)
		}
		if pw, ok := g.User.Password(); ok && pw != "xxxxx" {
			t.Errorf("RedactURL(%q) = %q keeps the password %q", raw, got, pw)
		}
		for _, k := range secretParams {
			if g.Query().Has(k) && g.Query().Get(k) != "xxxxx" {
				t.Errorf("RedactURL(%q) = %q keeps the %s parameter", raw, got, k)
			}
		}
	})
}
