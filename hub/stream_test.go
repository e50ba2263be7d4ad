package hub

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// testBuffers accounts memory against small budgets: one stream may hold
// one bytes, all streams together all.
func testBuffers(one, all int64) *buffers {
	return &buffers{limits: func() (int64, int64) { return one, all }}
}

// cost is what n events of size bytes hold in memory.
func cost(n, size int) int64 { return int64(n * (size + eventOverhead)) }

// A reader that falls a little behind a fast producer keeps its live
// stream: unsent events stay past maxStreamEvents while within the budget,
// and once sent the old ones go.
func TestStreamKeepsUnsentEventsWithinBudget(t *testing.T) {
	setVar(t, &maxStreamEvents, 8)
	buf := testBuffers(cost(200, 1), cost(1000, 1))
	st := newStream("s1", true, buf)
	cursor, err := st.attach(-1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		st.append([]byte{byte(i)}, i == 99)
	}
	evs, finished, err := st.since(cursor)
	if err != nil {
		t.Fatalf("a slow reader lost its stream: %v", err)
	}
	if len(evs) != 100 || !finished || evs[0].seq != 0 || evs[99].seq != 99 {
		t.Fatalf("got %d events (finished %v); want all 100", len(evs), finished)
	}
	st.mu.Lock()
	st.cursor = 100
	st.mu.Unlock()
	st.append([]byte("x"), false)
	st.mu.Lock()
	n, held := len(st.events), st.held
	st.mu.Unlock()
	if n > maxStreamEvents || held != buf.used.Load() {
		t.Fatalf("%d events kept after the reader caught up (want at most %d); held %d, counted %d", n, maxStreamEvents, held, buf.used.Load())
	}
}

// A reader that falls further behind than its stream's budget is cut off
// (errLagged), memory never exceeds the budget, and the stream stays
// resumable from where memory still has events; from before them a resume
// is refused, not answered wrongly.
func TestStreamLaggingReaderIsCutOff(t *testing.T) {
	const size = 1000
	buf := testBuffers(cost(10, size), 1<<30)
	st := newStream("s2", false, buf)
	aborted := 0
	if _, err := st.attach(-1); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	st.abort = func(time.Time) { aborted++ }
	st.mu.Unlock()
	for range 50 {
		st.append(make([]byte, size), false)
		if got := buf.used.Load(); got > cost(10, size) {
			t.Fatalf("the stream holds %d bytes, over its budget of %d", got, cost(10, size))
		}
	}
	if _, _, err := st.since(0); !errors.Is(err, errLagged) {
		t.Fatalf("a reader behind its budget: %v, want errLagged", err)
	}
	if aborted != 1 {
		t.Errorf("the reader's handler was unblocked %d times, want once", aborted)
	}
	st.detach()
	if _, err := st.attach(-1); !errors.Is(err, errPurged) {
		t.Errorf("a resume from before the kept events: %v, want errPurged", err)
	}
	cursor, err := st.attach(44)
	if err != nil {
		t.Fatalf("a resume within the kept events: %v", err)
	}
	if evs, _, err := st.since(cursor); err != nil || len(evs) != 5 || evs[0].seq != 45 {
		t.Fatalf("resumed after event 44: %d events from %v, err %v; want 45..49", len(evs), evs, err)
	}
}

// All streams together stay within the hub's budget: a stream appending
// while the hub is over it drops its own oldest events.
func TestStreamHubBudget(t *testing.T) {
	const size = 1000
	buf := testBuffers(1<<30, cost(30, size))
	var streams []*stream
	for i := range 5 {
		st := newStream(string(rune('a'+i)), false, buf)
		streams = append(streams, st)
		for range 20 {
			st.append(make([]byte, size), false)
		}
	}
	if got := buf.used.Load(); got > cost(30, size)+cost(1, size) {
		t.Fatalf("five streams hold %d bytes, over the hub's budget of %d", got, cost(30, size))
	}
	for _, st := range streams {
		st.release()
	}
	if got := buf.used.Load(); got != 0 {
		t.Fatalf("%d bytes still counted once every stream was released", got)
	}
}

// A session's queue for a GET stream not yet open is bounded in bytes too,
// and closing the session frees everything it held.
func TestSessionQueueBudgetAndClose(t *testing.T) {
	const size = 1000
	buf := testBuffers(cost(10, size), 1<<30)
	s := newSession(t.Context(), "", "2025-11-25", nil, nil)
	s.buf = buf
	st, err := s.openStream(true)
	if err != nil {
		t.Fatal(err)
	}
	st.append(make([]byte, size), false)
	for range 100 {
		s.deliver(make([]byte, size))
	}
	s.mu.Lock()
	queued := len(s.queue)
	s.mu.Unlock()
	if queued > 10 || buf.used.Load() > cost(11, size) {
		t.Fatalf("%d messages queued, %d bytes counted; want the queue within its budget", queued, buf.used.Load())
	}
	s.close()
	if got := buf.used.Load(); got != 0 {
		t.Fatalf("%d bytes still counted after the session closed", got)
	}
}

// blockingWriter is a ResponseWriter whose writes block, as on a connection
// nobody reads, until its write deadline passes (an unset one never does).
type blockingWriter struct {
	header  http.Header
	writing chan struct{} // receives when a write starts blocking
	unblock chan struct{} // closed by a deadline in the past
	once    sync.Once
}

func newBlockingWriter() *blockingWriter {
	return &blockingWriter{header: http.Header{}, writing: make(chan struct{}, 1), unblock: make(chan struct{})}
}

func (w *blockingWriter) Header() http.Header { return w.header }
func (w *blockingWriter) WriteHeader(int)     {}
func (w *blockingWriter) Write(p []byte) (int, error) {
	select {
	case w.writing <- struct{}{}:
	default:
	}
	<-w.unblock
	return 0, os.ErrDeadlineExceeded
}
func (w *blockingWriter) Flush() error { return nil }
func (w *blockingWriter) SetWriteDeadline(d time.Time) error {
	if !d.IsZero() && d.Before(time.Now().Add(endGrace+time.Millisecond)) {
		// The deadlines a stream sets are a heartbeat and more ahead,
		// unless it unblocks its handler: at once, or within endGrace.
		time.AfterFunc(time.Until(d), func() { w.once.Do(func() { close(w.unblock) }) })
	}
	return nil
}

// A handler blocked writing to a reader that never reads is unblocked as
// soon as that reader falls behind its budget, and within endGrace of the
// stream's release (its session ended; an idle handler ends its response
// cleanly meanwhile), rather than at its write deadline.
func TestStreamBlockedWriterUnblocked(t *testing.T) {
	for _, how := range []string{"lagged", "released"} {
		t.Run(how, func(t *testing.T) {
			st := newStream("s", false, testBuffers(cost(4, 100), 1<<30))
			cursor, err := st.attach(-1)
			if err != nil {
				t.Fatal(err)
			}
			st.append(make([]byte, 100), false)
			w := newBlockingWriter()
			done := make(chan error, 1)
			never := make(chan struct{})
			go func() {
				_, err := st.serve(w, cursor, time.Hour, never, never, nil)
				done <- err
			}()
			<-w.writing
			if how == "lagged" {
				for range 10 {
					st.append(make([]byte, 100), false)
				}
			} else {
				st.release()
			}
			select {
			case err := <-done:
				if err == nil {
					t.Errorf("serve ended without an error")
				}
			case <-time.After(waitFor):
				t.Fatal("the blocked handler was not unblocked")
			}
		})
	}
}

// A stream released with its session holds no memory afterwards: a call
// answered after the session ended is appended to it, and nothing of it
// stays counted. It cannot be attached again either.
func TestStreamReleasedHoldsNothing(t *testing.T) {
	buf := testBuffers(1<<20, 1<<30)
	s := newSession(t.Context(), "", "2025-11-25", nil, nil)
	s.buf = buf
	st, err := s.openStream(true)
	if err != nil {
		t.Fatal(err)
	}
	st.append(make([]byte, 100), false)
	s.close()
	st.append(make([]byte, 1000), true)
	if got := buf.used.Load(); got != 0 {
		t.Errorf("%d bytes counted after a released stream got its answer; want 0", got)
	}
	if _, err := st.attach(-1); !errors.Is(err, errUnknownStream) {
		t.Errorf("attaching a released stream: %v, want errUnknownStream", err)
	}
}

// With a store, a stream frees what is stored once its handler lets go (and
// once delivered): a resume reads it back from the store.
func TestStreamDetachedFreesStoredEvents(t *testing.T) {
	buf := testBuffers(1<<20, 1<<30)
	st := newStream("s", true, buf)
	var stored []event
	st.load = storeOf(&stored, 0)
	if _, err := st.attach(-1); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		data := []byte{byte('a' + i)}
		stored = append(stored, event{seq: i, data: data})
		st.append(data, false)
	}
	st.detach()
	if got := buf.used.Load(); got != 0 {
		t.Errorf("%d bytes held by a detached stream whose events are stored; want 0", got)
	}
	cursor, err := st.attach(1)
	if err != nil {
		t.Fatal(err)
	}
	evs, _, err := st.since(cursor)
	if err != nil || len(evs) != 3 || evs[0].seq != 2 || string(evs[2].data) != "e" {
		t.Fatalf("resumed after event 1: %v, %v; want events 2..4 from the store", evs, err)
	}
}

// A resume from far back reads the store a page at a time: since returns
// one page, then the next from where the reader got to, and the stream is
// finished only with its last event.
func TestStreamResumeReadsStorePages(t *testing.T) {
	st := newStream("s", true, testBuffers(1<<20, 1<<30))
	var stored []event
	st.load = storeOf(&stored, 2)
	for i := range 5 {
		data := []byte{byte('a' + i)}
		stored = append(stored, event{seq: i, data: data})
		st.append(data, i == 4)
	}
	st.detach() // memory lets go of what is stored
	var got []int
	for cursor := 0; ; {
		evs, finished, err := st.since(cursor)
		if err != nil || len(evs) == 0 || len(evs) > 2 {
			t.Fatalf("since(%d) = %v, %v; want a page of one or two events", cursor, evs, err)
		}
		for _, ev := range evs {
			got = append(got, ev.seq)
		}
		cursor = evs[len(evs)-1].seq + 1
		if finished {
			break
		}
	}
	if !slices.Equal(got, []int{0, 1, 2, 3, 4}) {
		t.Fatalf("read %v page by page; want 0..4", got)
	}
}

// Served over HTTP, a resume from far back sends page after page without
// waiting for a heartbeat between them, and ends with the last event.
func TestStreamServesStorePagesWithoutWaiting(t *testing.T) {
	st := newStream("s", true, testBuffers(1<<20, 1<<30))
	var stored []event
	st.load = storeOf(&stored, 2)
	for i := range 9 {
		data := []byte(`{"n":` + strconv.Itoa(i) + `}`)
		stored = append(stored, event{seq: i, data: data})
		st.append(data, i == 8)
	}
	st.detach()
	cursor, err := st.attach(-1)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	done := make(chan bool, 1)
	never := make(chan struct{})
	go func() {
		delivered, _ := st.serve(rec, cursor, time.Hour, never, never, nil)
		done <- delivered
	}()
	select {
	case delivered := <-done:
		if !delivered || strings.Count(rec.Body.String(), "data: {") != 9 {
			t.Fatalf("delivered %v, body:\n%s\nwant all 9 events", delivered, rec.Body.String())
		}
	case <-time.After(waitFor):
		t.Fatalf("the stream stalled between store pages; sent so far:\n%s", rec.Body.String())
	}
}

// A hole in what the store returns (a batch it failed to write) is never
// sent as if the stream were whole: the events before it go out, and a
// resume past it is refused.
func TestStreamStoreHoleIsRefused(t *testing.T) {
	st := newStream("s", true, testBuffers(1<<20, 1<<30))
	stored := []event{{seq: 0, data: []byte("a")}, {seq: 1, data: []byte("b")}, {seq: 3, data: []byte("d")}}
	st.load = storeOf(&stored, 0)
	for _, d := range []string{"a", "b", "c", "d"} {
		st.append([]byte(d), false)
	}
	st.detach()
	evs, _, err := st.since(0)
	if err != nil || len(evs) != 2 || evs[1].seq != 1 {
		t.Fatalf("since(0) = %v, %v; want events 0 and 1, up to the hole", evs, err)
	}
	if _, _, err := st.since(2); !errors.Is(err, errPurged) {
		t.Fatalf("since(2), at the hole: %v, want errPurged", err)
	}
}

// storeOf reads back *stored as the store would: the events after a seq, in
// pages of page events (0: all of them).
func storeOf(stored *[]event, page int) func(after int) ([]event, error) {
	return func(after int) ([]event, error) {
		var out []event
		for _, ev := range *stored {
			if ev.seq > after && (page == 0 || len(out) < page) {
				out = append(out, ev)
			}
		}
		return out, nil
	}
}
