package store

import (
	"fmt"
	"strings"
	"testing"
)

// TestEventsAfterPages: EventsAfter returns a page of at most
// EventsPageBytes of data, never empty while events remain, and the next
// page follows from the last event returned.
func TestEventsAfterPages(t *testing.T) {
	old := EventsPageBytes
	EventsPageBytes = 25
	t.Cleanup(func() { EventsPageBytes = old })
	s := openT(t, t.TempDir())
	write(t, s, Op{Session: session("s1", t0)}, Op{Stream: &Stream{ID: "a", Session: "s1"}})
	var ops []Op
	for i := range 7 {
		ops = append(ops, event("s1", "a", i, strings.Repeat("x", 10)))
	}
	ops = append(ops, event("s1", "a", 7, strings.Repeat("y", 100)))
	write(t, s, ops...)
	var pages [][]int
	for after := -1; ; {
		evs := eventsAfter(t, s, "a", after)
		if len(evs) == 0 {
			break
		}
		pages = append(pages, seqs(evs))
		after = evs[len(evs)-1].Seq
	}
	if got, want := fmt.Sprint(pages), "[[0 1 2] [3 4 5] [6 7]]"; got != want {
		t.Errorf("pages = %s, want %s (25 bytes a page; an event past it ends its page)", got, want)
	}
}
