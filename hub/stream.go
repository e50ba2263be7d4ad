package hub

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcphub/mcphub/internal/sse"
	"github.com/mcphub/mcphub/registry"
)

// maxStreamEvents bounds the events a stream keeps in memory once its
// reader has had them (or while no reader is attached): they are kept for a
// resume, and the store keeps them beyond that when there is one. Besides,
// every stream's memory is bounded in bytes (see buffers).
var maxStreamEvents = 1024

// eventOverhead is what an event costs in memory besides its data.
const eventOverhead = 64

// buffers accounts the memory the hub's streams and session queues hold for
// their readers, against two budgets: [hub] stream_buffer_bytes for each
// stream (and each session's queue) and buffer_bytes for all together.
// Whatever is over budget is dropped from memory oldest first; the store
// still has what it stored, and a reader that had not had a dropped event
// is disconnected (see stream.lagged) to resume from the store.
type buffers struct {
	used atomic.Int64
	// limits returns the budgets in force: per stream, and in all.
	limits func() (one, all int64)
}

func (b *buffers) add(n int64) {
	if b != nil {
		b.used.Add(n)
	}
}

// budget returns the budgets in force, read once for a trim: per stream,
// and for all streams together.
func (b *buffers) budget() budget {
	if b == nil {
		return budget{one: registry.DefaultStreamBufferBytes, all: math.MaxInt64}
	}
	one, all := b.limits()
	return budget{b: b, one: one, all: all}
}

// budget is the budgets of one trim.
type budget struct {
	b        *buffers
	one, all int64
}

// over reports whether a stream (or queue) holding held bytes must drop
// some.
func (bg budget) over(held int64) bool {
	return held > bg.one || (bg.b != nil && bg.b.used.Load() > bg.all)
}

// errLagged ends the serving of a stream whose reader fell so far behind that
// events it had not had were dropped from memory.
var errLagged = errors.New("the reader fell too far behind; resume with Last-Event-ID")

// Errors of stream resumption; the HTTP edge maps them to statuses.
var (
	errBadEventID    = errors.New("malformed Last-Event-ID")
	errUnknownStream = errors.New("Last-Event-ID names no stream of this session")
	errPurged        = errors.New("the events after Last-Event-ID are no longer kept")
	errStreamBusy    = errors.New("that stream is already being served")
)

// event is one SSE event of a stream. data is nil for a priming event.
type event struct {
	seq  int
	data []byte
}

// stream is one logical SSE stream of a session: the reply stream of one
// POST, or a standalone GET stream. It outlives the HTTP response serving
// it: events keep arriving while the client is away, and a GET with the
// Last-Event-ID of one of its events resumes it.
//
// Exactly one HTTP handler serves an attached stream; writers only append
// and wake it, so the ResponseWriter has a single owner. With a store, an
// event goes on the wire only once it is committed (persist calls back), and
// events older than those kept in memory are read back from the store.
type stream struct {
	id        string
	post      bool
	requestID []byte // the client's id of a POST stream's request

	persist func(ev event, final bool, committed func())
	load    func(after int) ([]event, error)

	buf *buffers

	mu        sync.Mutex
	events    []event // retained events, oldest first
	held      int64   // their memory, as buffers counts it
	next      int     // seq of the next event
	committed int     // highest seq that may go on the wire
	cursor    int     // seq of the next event the attached handler sends
	attached  bool
	lagged    bool               // the attached reader lost events from memory
	abort     func(at time.Time) // unblocks the attached handler's write by at
	aborted   bool               // abort ran: the handler must not push its deadline again
	released  bool               // the stream is done with (its session ended, or pruned)
	finished  bool               // a POST stream whose response has been appended
	wake      chan struct{}
}

func newStream(id string, post bool, buf *buffers) *stream {
	return &stream{id: id, post: post, buf: buf, wake: make(chan struct{}, 1), committed: -1}
}

// append adds an event and, once it is committed, wakes the handler serving
// the stream.
func (st *stream) append(data []byte, final bool) {
	st.mu.Lock()
	ev := event{seq: st.next, data: data}
	if !st.released {
		// A released stream holds nothing: a call answered after its
		// session ended is still stored, but kept in no memory.
		st.events = append(st.events, ev)
		st.hold(int64(len(data) + eventOverhead))
	}
	st.next++
	if final {
		st.finished = true
	}
	persist := st.persist
	if persist == nil {
		st.committed = ev.seq
	}
	st.trimLocked()
	st.mu.Unlock()
	if persist != nil {
		persist(ev, final, func() { st.commit(ev.seq) })
		return
	}
	st.signal()
}

func (st *stream) hold(n int64) {
	st.held += n
	st.buf.add(n)
}

// trimLocked drops the oldest events from memory while the stream is over
// its budgets or keeps more than maxStreamEvents its reader has had. An
// event not yet committed stays (it is neither stored nor sent yet). When
// the attached reader had not had a dropped event, it is marked lagged and
// its handler unblocked. st.mu is held.
func (st *stream) trimLocked() {
	bg := st.buf.budget()
	drop := 0
	for ; drop < len(st.events); drop++ {
		ev := st.events[drop]
		if ev.seq > st.committed {
			break
		}
		unread := st.attached && ev.seq >= st.cursor
		if !bg.over(st.held) && (len(st.events)-drop <= maxStreamEvents || unread) {
			break
		}
		if unread && !st.lagged {
			st.lagged = true
			st.unblockLocked()
		}
		st.hold(-int64(len(ev.data) + eventOverhead))
	}
	if drop > 0 {
		st.events = append(st.events[:0:0], st.events[drop:]...)
	}
}

// unblockLocked makes the attached handler's write fail at once, so it sees
// why it must stop. It runs under st.mu, which the handler takes to detach:
// the response it touches is still the handler's. st.mu is held.
func (st *stream) unblockLocked() { st.unblockByLocked(time.Now()) }

// endGrace is how long a handler whose stream ended (its session ended)
// has to finish its response: an idle handler, woken, ends it cleanly (the
// last chunk goes out, and a proxy in front sees a whole response); one
// blocked writing to a client that stopped reading fails by then.
const endGrace = time.Second

// unblockByLocked is unblockLocked with the attached handler's writes
// failing from at. st.mu is held.
func (st *stream) unblockByLocked(at time.Time) {
	if st.abort != nil {
		st.aborted = true
		st.abort(at)
	}
}

// dropCommittedLocked frees the memory of the events the store holds (all
// committed ones): a resume reads them back from there. st.mu is held.
func (st *stream) dropCommittedLocked() {
	keep := st.events[:0:0]
	for _, ev := range st.events {
		if ev.seq > st.committed {
			keep = append(keep, ev)
		} else {
			st.hold(-int64(len(ev.data) + eventOverhead))
		}
	}
	st.events = keep
}

// release is the end of the stream: its session ended or it was pruned. Its
// memory is freed, it holds none from now on, it cannot be attached again,
// and the attached handler, if any, is unblocked.
func (st *stream) release() {
	st.mu.Lock()
	st.released = true
	st.aborted = true // a handler attached a moment ago, not yet serving, stops too
	st.hold(-st.held)
	st.events = nil
	st.unblockByLocked(time.Now().Add(endGrace))
	st.mu.Unlock()
	st.signal()
}

// delivered frees the memory of a stream wholly written to its client when
// the store holds its events for a replay; without a store memory is what
// replays it, within the budgets.
func (st *stream) delivered() {
	if st.load != nil {
		st.mu.Lock()
		st.dropCommittedLocked()
		st.mu.Unlock()
	}
}

// finish ends a POST stream without a response (its request was cancelled).
func (st *stream) finish() {
	st.mu.Lock()
	st.finished = true
	st.mu.Unlock()
	st.signal()
}

func (st *stream) commit(seq int) {
	st.mu.Lock()
	if seq > st.committed {
		st.committed = seq
	}
	st.mu.Unlock()
	st.signal()
}

// disconnect cuts the handler serving the stream, if one does; the stream
// stays, so its client resumes it with Last-Event-ID (sending what the hub
// now asks of every request, such as a new token).
func (st *stream) disconnect() {
	st.mu.Lock()
	if st.attached {
		// A handler that attached but has not set its abort yet sees
		// this as soon as it does.
		st.aborted = true
	}
	st.unblockLocked()
	st.mu.Unlock()
	st.signal()
}

func (st *stream) signal() {
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// resumable reports whether the client was sent an event of the stream, so
// that it holds an id to resume from.
func (st *stream) resumable() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.cursor > 0
}

// isAttached reports whether a handler serves the stream now.
func (st *stream) isAttached() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.attached
}

// attach claims the stream for one handler, starting after seq from (-1 for
// the beginning). It fails when another handler serves it, when from is not
// an event of the stream, or when the events after from are gone.
func (st *stream) attach(from int) (cursor int, err error) {
	st.mu.Lock()
	if st.released {
		st.mu.Unlock()
		return 0, errUnknownStream
	}
	if st.attached {
		st.mu.Unlock()
		return 0, errStreamBusy
	}
	if from >= st.next {
		st.mu.Unlock()
		return 0, errBadEventID
	}
	st.attached = true
	st.lagged, st.aborted = false, false
	st.cursor = from + 1
	st.mu.Unlock()
	if _, _, err := st.since(from + 1); err != nil {
		st.detach()
		return 0, err
	}
	return from + 1, nil
}

// detach lets go of the stream's handler. With a store, what it holds is
// stored: memory keeps only what is not committed yet, and a resume reads
// the rest back, so idle streams do not hold the hub's memory.
func (st *stream) detach() {
	st.mu.Lock()
	st.attached = false
	st.abort = nil
	if st.load != nil {
		st.dropCommittedLocked()
	}
	st.mu.Unlock()
}

// since returns the committed events from seq cursor on, reading back from
// the store what memory no longer holds, and whether the stream is finished
// with nothing left to send after them.
func (st *stream) since(cursor int) ([]event, bool, error) {
	st.mu.Lock()
	if st.lagged {
		st.mu.Unlock()
		return nil, false, errLagged
	}
	if st.released {
		st.mu.Unlock()
		return nil, false, errSessionEnded
	}
	oldest := st.next
	if len(st.events) > 0 {
		oldest = st.events[0].seq
	}
	committed, next, finished, load := st.committed, st.next, st.finished, st.load
	var out []event
	for _, ev := range st.events {
		if ev.seq >= cursor && ev.seq <= committed {
			out = append(out, ev)
		}
	}
	st.mu.Unlock()
	if cursor < oldest && cursor <= committed {
		if load == nil {
			return nil, false, errPurged
		}
		stored, err := load(cursor - 1)
		if err != nil {
			return nil, false, err
		}
		if len(stored) == 0 || stored[0].seq != cursor {
			return nil, false, errPurged
		}
		var older []event
		for _, ev := range stored {
			if ev.seq != cursor+len(older) {
				// A hole (a batch the store failed to write): what
				// is before it goes out, and a resume past it is
				// refused rather than answered with a gap.
				break
			}
			if ev.seq < oldest && ev.seq <= committed {
				older = append(older, ev)
			}
		}
		if last := older[len(older)-1].seq; last+1 < oldest && last < committed {
			// A page of what the store holds: memory's events follow
			// the pages after it, asked for once this one is sent.
			return older, false, nil
		}
		out = append(older, out...)
	}
	return out, finished && committed == next-1, nil
}

// primingRetryMs is the reconnect delay the priming event suggests: a client
// whose stream drops comes back quickly, and a hub restart takes about that.
const primingRetryMs = 1000

// eventID names an event: the stream's id and the event's sequence number.
func eventID(stream string, seq int) string { return stream + "_" + strconv.Itoa(seq) }

// parseEventID splits an event id made by eventID.
func parseEventID(id string) (stream string, seq int, err error) {
	i := strings.LastIndexByte(id, '_')
	if i <= 0 {
		return "", 0, errBadEventID
	}
	seq, err = strconv.Atoi(id[i+1:])
	if err != nil || seq < 0 {
		return "", 0, errBadEventID
	}
	return id[:i], seq, nil
}

// sseHeaders starts an SSE response. X-Accel-Buffering stops proxies from
// holding events back.
func sseHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
}

// serve writes the stream's events from cursor on to w until the stream is
// finished, the client goes away (done), or the session ends (ended). Idle
// periods get a comment heartbeat so clients with read timeouts keep a
// healthy stream. pull, when set, moves queued session messages into the
// stream before each wait (standalone GET streams).
//
// Every write has a deadline a heartbeat plus writeTimeout ahead of it at
// most: a client that stops reading loses its connection within that time
// rather than holding the handler, and the stream waits, detached, for a
// resumption.
func (st *stream) serve(w http.ResponseWriter, cursor int, heartbeat time.Duration, done, ended <-chan struct{}, pull func(*stream)) (bool, error) {
	defer st.detach()
	rc := http.NewResponseController(w)
	st.mu.Lock()
	st.abort = func(at time.Time) { rc.SetWriteDeadline(at) }
	st.mu.Unlock()
	sw := sse.NewWriter(flushWriter{w, rc})
	ticker := time.NewTicker(heartbeat)
	defer ticker.Stop()
	// The deadline is pushed only once half of it has passed, so a write
	// always has at least half of heartbeat+writeTimeout to finish.
	window := heartbeat + writeTimeout
	var extended time.Time
	// extend reports false once the handler was unblocked (abort): its
	// deadline must not be pushed past that again.
	// The check and the push happen under st.mu, as abort does, so an
	// abort cannot fall between them and be undone.
	extend := func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.aborted {
			return false
		}
		if now := time.Now(); now.Sub(extended) >= window/2 {
			rc.SetWriteDeadline(now.Add(window))
			extended = now
		}
		return true
	}
	extend()
	for {
		if pull != nil {
			pull(st)
		}
		evs, finished, err := st.since(cursor)
		if err != nil {
			return false, err
		}
		for _, ev := range evs {
			if !extend() {
				return false, st.abortCause()
			}
			e := sse.Event{ID: eventID(st.id, ev.seq), HasID: true, HasData: true, Data: string(ev.data)}
			if ev.data == nil && ev.seq == 0 {
				e.Retry, e.HasRetry = primingRetryMs, true
			}
			if err := sw.WriteEvent(e); err != nil {
				return false, fmt.Errorf("write event: %w", err)
			}
			// Per event: the client holds this id now, and the trim
			// must not count what it was sent as unread.
			cursor = ev.seq + 1
			st.mu.Lock()
			st.cursor = cursor
			st.mu.Unlock()
		}
		if finished {
			return true, nil
		}
		if len(evs) > 0 {
			// There may be more already (the next page of what the
			// store holds): look again before waiting.
			ticker.Reset(heartbeat)
			continue
		}
		select {
		case <-st.wake:
			if !extend() {
				return false, st.abortCause()
			}
		case <-ticker.C:
			if !extend() {
				return false, st.abortCause()
			}
			if err := sw.WriteComment("ping"); err != nil {
				return false, fmt.Errorf("write heartbeat: %w", err)
			}
		case <-done:
			return false, nil
		case <-ended:
			return false, nil
		}
	}
}

// abortCause is why the handler was unblocked.
func (st *stream) abortCause() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.lagged {
		return errLagged
	}
	return errSessionEnded
}

// flushWriter writes to a response and flushes it through its
// ResponseController, whose Flush reports a client that has gone (an
// http.Flusher's cannot), so the stream stops at the failed event.
type flushWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
}

func (w flushWriter) Flush() error { return w.rc.Flush() }
