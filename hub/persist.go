package hub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcphub/mcphub/registry"
)

// Store is where the hub keeps what must survive a restart: sessions, their
// streams and every event, and where in-flight requests went. cmd/mcphub
// plugs the SQLite store in; without one the hub keeps everything in memory.
type Store interface {
	// Write applies a batch of writes in one transaction, in order. An
	// error that will never pass however often the batch is tried (the
	// data itself is refused) has a method Refused() bool returning true.
	Write(ops []StoreOp) error
	Sessions() ([]SessionRecord, error)
	Streams(session string) ([]StreamRecord, error)
	// EventsAfter returns a stream's stored events with seq > after, in
	// order: all of them, or a first page (at least one event); the
	// stream asks again after the last for more.
	EventsAfter(stream string, after int) ([]EventRecord, error)
	Calls() ([]CallRecord, error)
	// Sweep deletes sessions idle since before idleBefore and trims the
	// stored events to keep, oldest first; it returns the deleted session
	// ids.
	Sweep(idleBefore time.Time, keep Retention) ([]string, error)
	// Check reports whether the store still writes to the file it opened.
	// When that file was deleted or replaced, the store creates it anew
	// and reports recreated, so the hub saves what it holds again.
	Check() (recreated bool, err error)
	// Counts reports a session's stored events and their bytes.
	Counts(session string) (events int, bytes int64, err error)
}

// Retention bounds the stored events: by age, per session, and in all. A
// zero field sets no bound; the hub always passes the registry's positive
// settings.
type Retention struct {
	Before        time.Time // events stored before it go
	SessionEvents int       // per session, newest kept
	SessionBytes  int64     // per session, newest kept
	TotalBytes    int64     // all sessions together, newest kept
}

// SessionRecord is a stored downstream session.
type SessionRecord struct {
	ID, Endpoint, Version    string
	ClientInfo, Capabilities []byte
	LogLevel                 string
	Subscriptions            []string // nil leaves stored subscriptions alone
	Created, LastSeen        time.Time
	// TakenFrom names the replica of a team hub this one took the session
	// over from (the store sets it; the hub only reads it).
	TakenFrom string
	// Principal is the ID of the caller that opened the session.
	Principal string
}

// StreamRecord is a stored SSE stream.
type StreamRecord struct {
	ID, Session    string
	Post, Finished bool
	RequestID      string
	NextSeq        int
}

// EventRecord is a stored SSE event; Data is nil for a priming event.
type EventRecord struct {
	Session, Stream string
	Seq             int
	Data            []byte
}

// CallRecord says where a POST stream's request went upstream.
type CallRecord struct {
	Stream, Server, UpstreamID, HubToken, ProgressToken string
}

// StoreOp is one write; exactly one field is set.
type StoreOp struct {
	Session       *SessionRecord
	DeleteSession string
	Stream        *StreamRecord
	Event         *EventRecord
	Call          *CallRecord
	DeleteCall    string
}

// writer batches the hub's writes: whatever arrives while a transaction is
// being written goes into the next one, so persistence costs one commit per
// burst rather than one per event. Each write may carry a callback that runs
// once the write is durable; streams use it to release events to the wire.
//
// When the store fails, what was to be written waits in memory and is
// written again, with backoff, until the store takes it: events reach the
// wire only once stored, so a client that resumes never meets a gap. A
// write the store refuses for good (an error that says so: Refused) is
// given up alone, the writes around it going through. What waits is
// bounded (maxQueued event bytes): past it the oldest events are given up,
// each going on the wire unstored, and a resume that needs one from the
// store finds the hole and is refused (stream.since) rather than answered
// short; the callbacks of their streams' later writes run at once (they
// release a call's response), the writes themselves still wait.
type writer struct {
	store Store
	log   interface {
		Error(string, ...any)
		Warn(string, ...any)
	}
	// maxQueued bounds the event bytes held while the store fails.
	maxQueued func() int64

	mu        sync.Mutex
	items     []writeItem
	queued    int64 // event bytes in items
	failing   error // the last Write's error, nil once one succeeds
	wake      chan struct{}
	quit      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// writeItem is one queued write and what runs once it is durable (nil
// error) or given up (why).
type writeItem struct {
	op    StoreOp
	after func(error)
}

// refusedWrite is what an error of Store.Write says of itself when the
// store will never take the write, however often it is tried: the data
// itself is refused (a value the database cannot hold, a constraint).
type refusedWrite interface{ Refused() bool }

// isRefused reports whether err says the write will never pass.
func isRefused(err error) bool {
	var r refusedWrite
	return errors.As(err, &r) && r.Refused()
}

// errGivenUp is what a given-up write's callback learns.
var errGivenUp = errors.New("the write was given up")

// Backoff of the writes the store refused.
const (
	writeRetryMin = 100 * time.Millisecond
	writeRetryMax = 5 * time.Second
)

func newWriter(s Store, log interface {
	Error(string, ...any)
	Warn(string, ...any)
}) *writer {
	w := &writer{store: s, log: log, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// add queues a write; after, if set, runs once it is committed, or given
// up.
func (w *writer) add(op StoreOp, after func()) {
	var cb func(error)
	if after != nil {
		cb = func(error) { after() }
	}
	w.enqueue(op, cb)
}

func (w *writer) enqueue(op StoreOp, after func(error)) {
	w.mu.Lock()
	w.items = append(w.items, writeItem{op, after})
	if op.Event != nil {
		w.queued += int64(len(op.Event.Data))
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// syncWait bounds how long sync waits for its write.
const syncWait = 10 * time.Second

// sync queues a write and waits until it is committed. It returns why not
// when the write was given up, ctx ended, or syncWait passed; then the
// write may still be made later.
func (w *writer) sync(ctx context.Context, op StoreOp) error {
	done := make(chan error, 1)
	w.enqueue(op, func(err error) { done <- err })
	t := time.NewTimer(syncWait)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-w.done:
		return errors.New("the hub is stopping")
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		if err := w.problem(); err != nil {
			return err
		}
		return fmt.Errorf("the store took no write within %s", syncWait)
	}
}

// problem is why the store takes no writes now; nil while it does.
func (w *writer) problem() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failing
}

func (w *writer) run() {
	defer close(w.done)
	for {
		select {
		case <-w.wake:
		case <-w.quit:
			w.flush(true)
			return
		}
		for delay := writeRetryMin; !w.flush(false); delay = min(2*delay, writeRetryMax) {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-w.quit:
				t.Stop()
				w.flush(true)
				return
			}
		}
	}
}

// flush writes what is queued. A batch the store could not take is queued
// again, ahead of what came meanwhile, and flush reports false; final (the
// hub is stopping) gives it up instead.
func (w *writer) flush(final bool) bool {
	w.mu.Lock()
	items, queued := w.items, w.queued
	w.items, w.queued = nil, 0
	w.mu.Unlock()
	if len(items) == 0 {
		return true
	}
	ops := make([]StoreOp, len(items))
	for i, it := range items {
		ops[i] = it.op
	}
	err := w.store.Write(ops)
	switch {
	case err == nil:
		w.finish(items, nil)
		return true
	case final:
		w.log.Error("could not persist session state before stopping", "ops", len(ops), "err", err)
		w.finish(items, errGivenUp)
		return true
	case isRefused(err):
		// Something in the batch will never pass: each write is tried
		// on its own, and only what is refused is given up.
		return w.writeEach(items)
	}
	w.requeue(items, queued, err)
	return false
}

// finish runs the callbacks of items with err, and records the store as
// working when err is nil.
func (w *writer) finish(items []writeItem, err error) {
	if err == nil {
		w.mu.Lock()
		recovered := w.failing != nil
		w.failing = nil
		w.mu.Unlock()
		if recovered {
			w.log.Warn("the store takes writes again; what waited is written", "ops", len(items))
		}
	}
	for _, it := range items {
		if it.after != nil {
			it.after(err)
		}
	}
}

// writeEach writes items one by one, giving up (and logging) each the store
// refuses for good. When a write fails otherwise, it and the rest are
// queued again and writeEach reports false.
func (w *writer) writeEach(items []writeItem) bool {
	refusedN := 0
	var last error
	for i, it := range items {
		err := w.store.Write([]StoreOp{it.op})
		switch {
		case err == nil:
			w.finish(items[i:i+1], nil)
		case isRefused(err):
			refusedN, last = refusedN+1, err
			w.finish(items[i:i+1], errGivenUp)
		default:
			var queued int64
			for _, rest := range items[i:] {
				if ev := rest.op.Event; ev != nil {
					queued += int64(len(ev.Data))
				}
			}
			w.requeue(items[i:], queued, err)
			if refusedN > 0 {
				w.log.Error("the store refused writes it will never take; they were given up", "writes", refusedN, "err", last)
			}
			return false
		}
	}
	if refusedN > 0 {
		w.log.Error("the store refused writes it will never take; they were given up", "writes", refusedN, "err", last)
	}
	return true
}

// requeue puts items (holding queued event bytes) back ahead of what came
// meanwhile, after the store failed with err; past maxQueued the oldest
// events are given up (see writer).
func (w *writer) requeue(items []writeItem, queued int64, err error) {
	w.mu.Lock()
	if w.failing == nil {
		w.log.Error("the store cannot take writes; events wait in memory until it does", "ops", len(items), "err", err)
	}
	w.failing = err
	w.items, w.queued = append(items, w.items...), queued+w.queued
	var dropped, released []writeItem
	if w.maxQueued != nil && w.queued > w.maxQueued() {
		limit := w.maxQueued()
		gapped := map[string]bool{} // streams that lost an event
		kept := w.items[:0]
		for _, it := range w.items {
			if ev := it.op.Event; ev != nil && w.queued > limit {
				w.queued -= int64(len(ev.Data))
				gapped[ev.Stream] = true
				dropped = append(dropped, it)
				continue
			}
			// A later write of a stream that lost an event (its end,
			// its call's record) still waits, but its callback, which
			// releases the call's response, runs now.
			if st := it.op.Stream; it.after != nil && ((st != nil && gapped[st.ID]) || gapped[it.op.DeleteCall]) {
				released = append(released, it)
				it.after = nil
			}
			kept = append(kept, it)
		}
		w.items = kept
	}
	w.mu.Unlock()
	if len(dropped) > 0 {
		w.log.Error("events waited for the store past [hub] buffer_bytes: the oldest went to their clients unstored; a resume across them is refused",
			"events", len(dropped))
	}
	for _, it := range append(dropped, released...) {
		if it.after != nil {
			it.after(errGivenUp)
		}
	}
}

// close writes what is queued and stops. It is idempotent.
func (w *writer) close() {
	w.closeOnce.Do(func() { close(w.quit) })
	<-w.done
}

// maxSessionEvents bounds the stored events of a session.
var maxSessionEvents = 10000

// persister is the hub's part that keeps sessions, streams, events and calls
// in the Store through one batching writer. A nil *persister (no store)
// keeps nothing and every method is a no-op, so callers need no checks.
type persister struct {
	store Store
	w     *writer

	// written counts the event bytes stored since the last sweep; past
	// sweepAfterBytes the sweeper is woken (kick) so that a burst cannot
	// grow the store far past its retention before the next minute's
	// sweep.
	written atomic.Int64
	kick    chan struct{}
}

// sweepAfterBytes is how many event bytes may be stored between sweeps.
var sweepAfterBytes int64 = 16 << 20

// newPersister starts the writer of st; nil when st is nil.
func newPersister(st Store, log interface {
	Error(string, ...any)
	Warn(string, ...any)
}) *persister {
	if st == nil {
		return nil
	}
	return &persister{store: st, w: newWriter(st, log), kick: make(chan struct{}, 1)}
}

// problem is why the store takes no writes now; nil while it does, or
// without a store.
func (p *persister) problem() error {
	if p == nil {
		return nil
	}
	return p.w.problem()
}

// close writes what is queued and stops the writer.
func (p *persister) close() {
	if p != nil {
		p.w.close()
	}
}

// bindStream makes a stream persistent: its events are written before they
// go on the wire, and read back for a resume older than memory holds.
func (p *persister) bindStream(s *session, st *stream) {
	if p == nil {
		return
	}
	sid := s.id
	st.persist = func(ev event, final bool, committed func()) {
		p.wrote(len(ev.data))
		if !final {
			p.w.add(StoreOp{Event: &EventRecord{Session: sid, Stream: st.id, Seq: ev.seq, Data: ev.data}}, committed)
			return
		}
		p.w.add(StoreOp{Event: &EventRecord{Session: sid, Stream: st.id, Seq: ev.seq, Data: ev.data}}, nil)
		p.w.add(StoreOp{Stream: &StreamRecord{ID: st.id, Session: sid, Post: st.post, RequestID: string(st.requestID), Finished: true}}, nil)
		p.w.add(StoreOp{DeleteCall: st.id}, committed)
	}
	st.load = func(after int) ([]event, error) {
		recs, err := p.store.EventsAfter(st.id, after)
		if err != nil {
			return nil, err
		}
		out := make([]event, len(recs))
		for i, r := range recs {
			out[i] = event{seq: r.Seq, data: r.Data}
		}
		return out, nil
	}
}

// wrote counts n event bytes stored and wakes the sweeper once enough have
// been since the last sweep.
func (p *persister) wrote(n int) {
	if p.written.Add(int64(n)) > sweepAfterBytes {
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
}

// kicked receives when enough has been written for a sweep;
// nil (never ready) without a store.
func (p *persister) kicked() <-chan struct{} {
	if p == nil {
		return nil
	}
	return p.kick
}

// saveStream records a new stream.
func (p *persister) saveStream(s *session, st *stream) {
	if p != nil {
		p.w.add(StoreOp{Stream: &StreamRecord{ID: st.id, Session: s.id, Post: st.post, RequestID: string(st.requestID)}}, nil)
	}
}

// saveSession records a session's settings; wait makes it durable before
// returning (initialize, so a restart right after still knows the session).
//
// With wait (a new session), it returns why the store did not take the
// session within syncWait or before ctx ended.
func (p *persister) saveSession(ctx context.Context, s *session, wait bool) error {
	if p == nil {
		return nil
	}
	s.mu.Lock()
	rec := &SessionRecord{ID: s.id, Endpoint: s.endpoint, Version: s.version, ClientInfo: s.clientInfo, Capabilities: s.caps.raw,
		LogLevel: s.logLevel, Principal: s.principal, Created: s.created, LastSeen: time.Unix(0, s.lastSeen.Load()), Subscriptions: []string{}}
	for uri := range s.subs {
		rec.Subscriptions = append(rec.Subscriptions, uri)
	}
	s.mu.Unlock()
	if wait {
		return p.w.sync(ctx, StoreOp{Session: rec})
	}
	p.w.add(StoreOp{Session: rec}, nil)
	return nil
}

// deleteSession forgets an ended session.
func (p *persister) deleteSession(id string) {
	if p != nil {
		p.w.add(StoreOp{DeleteSession: id}, nil)
	}
}

// saveCall records where a POST stream's request went upstream.
func (p *persister) saveCall(st *stream, f forwardInfo) {
	if p != nil && st != nil {
		p.w.add(StoreOp{Call: &CallRecord{Stream: st.id, Server: f.server, UpstreamID: string(f.upstreamID), HubToken: f.hubToken, ProgressToken: string(f.progressToken)}}, nil)
	}
}

// sweep deletes what idled out before cutoff and trims the stored events
// to the hub's retention settings.
func (p *persister) sweep(cutoff time.Time, h registry.Hub) error {
	if p == nil {
		return nil
	}
	p.written.Store(0)
	_, err := p.store.Sweep(cutoff, Retention{Before: time.Now().Add(-h.EventRetention),
		SessionEvents: maxSessionEvents, SessionBytes: h.EventRetentionBytes, TotalBytes: h.StoreMaxBytes})
	return err
}

// check asks the store whether its file is still there; when it had to
// create the file anew, the live sessions and their streams are saved again
// (the events they had stored are lost with the old file) and true is
// returned.
func (p *persister) check(live []*session) (bool, error) {
	if p == nil {
		return false, nil
	}
	recreated, err := p.store.Check()
	if err != nil || !recreated {
		return false, err
	}
	for _, s := range live {
		p.saveSession(context.Background(), s, false)
		s.mu.Lock()
		streams := make([]*stream, 0, len(s.streams))
		for _, st := range s.streams {
			streams = append(streams, st)
		}
		s.mu.Unlock()
		for _, st := range streams {
			p.saveStream(s, st)
		}
	}
	return true, nil
}

// counts reports a session's stored events and their bytes.
func (p *persister) counts(id string) (int, int64) {
	if p == nil {
		return 0, 0
	}
	n, b, _ := p.store.Counts(id)
	return n, b
}
