package sse

import (
	"errors"
	"strings"
	"testing"
)

// Events stay intact after their reader's buffer goes to another reader,
// and a released reader reads no more.
func TestReleaseKeepsEventsAndStopsReading(t *testing.T) {
	r := NewReader(strings.NewReader("id: 1\ndata: first\n\ndata: second\n\n"), 0)
	ev, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	r.Release()
	r.Release()
	if _, err := r.Next(); !errors.Is(err, errReleased) {
		t.Fatalf("Next after Release: %v", err)
	}
	// Another reader, likely on the same buffer, overwrites its bytes.
	other := NewReader(strings.NewReader("data: "+strings.Repeat("x", readBufSize)+"\n\n"), 0)
	if _, err := other.Next(); err != nil {
		t.Fatal(err)
	}
	other.Release()
	if ev.Data != "first" || ev.ID != "1" {
		t.Fatalf("the released reader's event changed: %+v", ev)
	}
}
