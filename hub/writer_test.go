package hub

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// scriptedStore is a Store whose writes fail while down (and it does not
// answer), or, for an op poison matches, always (while it answers).
type scriptedStore struct {
	recreatingStore
	mu      sync.Mutex
	down    bool
	poison  func(StoreOp) bool
	written []StoreOp
}

func (s *scriptedStore) Write(ops []StoreOp) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return errors.New("connection refused")
	}
	for _, op := range ops {
		if s.poison != nil && s.poison(op) {
			return refusedErr{}
		}
	}
	s.written = append(s.written, ops...)
	return nil
}

// refusedErr is a write error that says it will never pass.
type refusedErr struct{}

func (refusedErr) Error() string { return "invalid byte sequence" }
func (refusedErr) Refused() bool { return true }

func (s *scriptedStore) set(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

func (s *scriptedStore) seqs() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for _, op := range s.written {
		if op.Event != nil {
			out = append(out, op.Event.Seq)
		}
	}
	return out
}

func eventOp(seq int, size int) StoreOp {
	return StoreOp{Event: &EventRecord{Session: "s", Stream: "st", Seq: seq, Data: make([]byte, size)}}
}

// While the store cannot be reached, writes wait and their events are not
// released; when it is back they are written, in order, then released.
func TestWriterHoldsWritesWhileTheStoreIsDown(t *testing.T) {
	st := &scriptedStore{down: true}
	w := newWriter(st, slog.New(slog.DiscardHandler))
	defer w.close()
	released := make(chan int, 10)
	for i := range 3 {
		w.add(eventOp(i, 10), func() { released <- i })
	}
	eventually(t, "the writer reports the store down", func() bool { return w.problem() != nil })
	select {
	case i := <-released:
		t.Fatalf("event %d was released while the store was down", i)
	default:
	}
	st.set(false)
	for want := range 3 {
		select {
		case got := <-released:
			if got != want {
				t.Fatalf("released %d, want %d", got, want)
			}
		case <-time.After(waitFor):
			t.Fatal("the events were not released once the store was back")
		}
	}
	if got := st.seqs(); len(got) != 3 || got[0] != 0 || got[2] != 2 {
		t.Errorf("written %v, want 0 1 2", got)
	}
	eventually(t, "the problem clears", func() bool { return w.problem() == nil })
}

// A write the store refuses while it answers is given up alone: the writes
// around it go through, and nothing waits behind it.
func TestWriterGivesUpAWriteThatNeverPasses(t *testing.T) {
	st := &scriptedStore{poison: func(op StoreOp) bool { return op.Event != nil && op.Event.Seq == 1 }}
	w := newWriter(st, slog.New(slog.DiscardHandler))
	defer w.close()
	done := make(chan struct{})
	for i := range 3 {
		after := func() {}
		if i == 2 {
			after = func() { close(done) }
		}
		w.add(eventOp(i, 10), after)
	}
	select {
	case <-done:
	case <-time.After(waitFor):
		t.Fatal("a poisoned write held up the ones after it")
	}
	w.add(eventOp(3, 10), nil)
	w.close()
	if got := st.seqs(); len(got) != 3 || got[0] != 0 || got[1] != 2 || got[2] != 3 {
		t.Errorf("written %v, want 0 2 3", got)
	}
	if err := w.problem(); err != nil {
		t.Errorf("problem = %v after the store took later writes", err)
	}
}

// Past the bound, the oldest writes are given up, whatever their kind, so
// a call's last writes (which release its response) do not wait for ever.
func TestWriterBoundWhileDown(t *testing.T) {
	st := &scriptedStore{down: true}
	w := newWriter(st, slog.New(slog.DiscardHandler))
	w.maxQueued = func() int64 { return 100 }
	defer w.close()
	released := make(chan string, 10)
	w.add(eventOp(0, 80), nil)
	w.add(StoreOp{DeleteCall: "st"}, func() { released <- "response" })
	w.add(eventOp(1, 80), func() { released <- "later" })
	select {
	case got := <-released:
		if got != "response" {
			t.Errorf("released %q first, want the oldest (the response)", got)
		}
	case <-time.After(waitFor):
		t.Fatal("nothing was given up past the bound")
	}
}

// sync reports a write given up as not made.
func TestWriterSyncReportsGivenUp(t *testing.T) {
	st := &scriptedStore{poison: func(op StoreOp) bool { return op.Session != nil }}
	w := newWriter(st, slog.New(slog.DiscardHandler))
	defer w.close()
	if err := w.sync(context.Background(), StoreOp{Session: &SessionRecord{ID: "s"}}); !errors.Is(err, errGivenUp) {
		t.Errorf("sync of a refused write = %v, want errGivenUp", err)
	}
}

// sync gives up when its context ends while the store is down.
func TestWriterSyncBounded(t *testing.T) {
	st := &scriptedStore{down: true}
	w := newWriter(st, slog.New(slog.DiscardHandler))
	defer w.close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- w.sync(ctx, StoreOp{Session: &SessionRecord{ID: "s"}}) }()
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("sync = %v, want context.Canceled", err)
		}
	case <-time.After(waitFor):
		t.Fatal("sync did not return when its context ended")
	}
}
