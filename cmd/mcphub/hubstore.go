package main

import (
	"time"

	"github.com/mcphub/mcphub/hub"
	"github.com/mcphub/mcphub/store"
)

// hubStore adapts store.Store to hub.Store; the records have the same
// fields, so each conversion is a plain type conversion. Check and Counts
// are store.Store's own, promoted.
type hubStore struct{ *store.Store }

func (s hubStore) Write(ops []hub.StoreOp) error {
	out := make([]store.Op, len(ops))
	for i, o := range ops {
		op := store.Op{DeleteSession: o.DeleteSession, DeleteCall: o.DeleteCall}
		if o.Session != nil {
			v := store.Session(*o.Session)
			op.Session = &v
		}
		if o.Stream != nil {
			v := store.Stream(*o.Stream)
			op.Stream = &v
		}
		if o.Event != nil {
			v := store.Event(*o.Event)
			op.Event = &v
		}
		if o.Call != nil {
			v := store.Call(*o.Call)
			op.Call = &v
		}
		out[i] = op
	}
	return s.Store.Write(out)
}

func (s hubStore) Sessions() ([]hub.SessionRecord, error) {
	recs, err := s.Store.Sessions()
	out := make([]hub.SessionRecord, len(recs))
	for i, r := range recs {
		out[i] = hub.SessionRecord(r)
	}
	return out, err
}

func (s hubStore) Streams(session string) ([]hub.StreamRecord, error) {
	recs, err := s.Store.Streams(session)
	out := make([]hub.StreamRecord, len(recs))
	for i, r := range recs {
		out[i] = hub.StreamRecord(r)
	}
	return out, err
}

func (s hubStore) EventsAfter(stream string, after int) ([]hub.EventRecord, error) {
	recs, err := s.Store.EventsAfter(stream, after)
	out := make([]hub.EventRecord, len(recs))
	for i, r := range recs {
		out[i] = hub.EventRecord(r)
	}
	return out, err
}

func (s hubStore) Calls() ([]hub.CallRecord, error) {
	recs, err := s.Store.Calls()
	out := make([]hub.CallRecord, len(recs))
	for i, r := range recs {
		out[i] = hub.CallRecord(r)
	}
	return out, err
}

func (s hubStore) Sweep(idleBefore time.Time, keep hub.Retention) ([]string, error) {
	return s.Store.Sweep(idleBefore, store.Retention(keep))
}
