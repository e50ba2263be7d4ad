package hub

import (
	"errors"
	"testing"
)

// A reader that falls behind a fast producer must not lose its live stream:
// events it has not been sent are kept past maxStreamEvents.
func TestStreamKeepsUnsentEventsForASlowReader(t *testing.T) {
	oldMax, oldUnsent := maxStreamEvents, maxUnsentEvents
	maxStreamEvents, maxUnsentEvents = 8, 1000
	t.Cleanup(func() { maxStreamEvents, maxUnsentEvents = oldMax, oldUnsent })

	st := newStream("s1", true)
	cursor, err := st.attach(-1)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		st.append([]byte{byte(i)}, i == 99)
	}
	evs, finished, err := st.since(cursor)
	if err != nil {
		t.Fatalf("a slow reader lost its stream: %v", err)
	}
	if len(evs) != 100 || !finished || evs[0].seq != 0 || evs[99].seq != 99 {
		t.Fatalf("got %d events (finished %v); want all 100", len(evs), finished)
	}

	// Once sent, old events may go: memory stays bounded.
	st.mu.Lock()
	st.cursor = 100
	st.mu.Unlock()
	st.append([]byte("x"), false)
	st.mu.Lock()
	n := len(st.events)
	st.mu.Unlock()
	if n > maxStreamEvents {
		t.Fatalf("%d events kept after the reader caught up; want at most %d", n, maxStreamEvents)
	}

	// A reader that falls hopelessly behind loses the oldest events, and a
	// resume from before them is refused, not answered wrongly.
	maxUnsentEvents = 20
	st2 := newStream("s2", true)
	st2.attach(-1)
	for i := 0; i < 50; i++ {
		st2.append([]byte{byte(i)}, false)
	}
	if _, _, err := st2.since(0); !errors.Is(err, errPurged) {
		t.Fatalf("past maxUnsentEvents: %v, want errPurged", err)
	}
}
