package main

import (
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/mcphub/mcphub/bridge"
	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/hub"
	"github.com/mcphub/mcphub/store"
)

// hubStore adapts store.Store to hub.Store; the records have the same
// fields, so each conversion is a plain type conversion.
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

// serverPersistence persists what one server needs after a restart: its
// connection state (so an HTTP session and its streams resume) and its
// catalog (so list calls answer before it reconnects). Writes are coalesced:
// the state changes with every upstream event, and the store needs only the
// latest. Lagging behind is safe: a resumed stream then replays a few events
// the hub already passed on, and progress that does not advance is dropped.
type serverPersistence struct {
	st   *store.Store
	name string
	log  *slog.Logger

	mu      sync.Mutex
	pending *client.State
	timer   *time.Timer
}

const stateFlushDelay = 50 * time.Millisecond

func (u *serverPersistence) saveState(s client.State) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.pending = &s
	if u.timer == nil {
		u.timer = time.AfterFunc(stateFlushDelay, u.flush)
	}
}

// close writes any pending state now and stops the flush timer.
func (u *serverPersistence) close() {
	u.mu.Lock()
	if u.timer != nil {
		u.timer.Stop()
	}
	u.mu.Unlock()
	u.flush()
}

func (u *serverPersistence) flush() {
	u.mu.Lock()
	s := u.pending
	u.pending, u.timer = nil, nil
	u.mu.Unlock()
	if s == nil || s.Transport == client.TransportStdio {
		return
	}
	data, _ := json.Marshal(s)
	if err := u.st.SaveUpstream(u.name, data); err != nil {
		u.log.Error("could not save the upstream state", "server", u.name, "err", err)
	}
}

// resume loads the stored connection state, nil when there is none.
func (u *serverPersistence) resume() *client.State {
	data, err := u.st.Upstream(u.name)
	if err != nil {
		return nil
	}
	var s client.State
	if json.Unmarshal(data, &s) != nil || s.SessionID == "" {
		return nil
	}
	return &s
}

// saveCatalog records the server's catalog after a change.
func (u *serverPersistence) saveCatalog(c bridge.Cache) {
	if c.Init == nil {
		return
	}
	items := map[string][]byte{"initialize": c.Init}
	for m, list := range c.Lists {
		data, _ := json.Marshal(list)
		items[m] = data
	}
	if err := u.st.SaveCatalog(u.name, items); err != nil {
		u.log.Error("could not save the catalog", "server", u.name, "err", err)
	}
}

// cache loads the stored catalog, nil when there is none.
func (u *serverPersistence) cache() *bridge.Cache {
	items, err := u.st.Catalog(u.name)
	if err != nil || items["initialize"] == nil {
		return nil
	}
	c := &bridge.Cache{Init: items["initialize"], Lists: map[string][]json.RawMessage{}}
	for m, data := range items {
		if m == "initialize" {
			continue
		}
		var list []json.RawMessage
		if json.Unmarshal(data, &list) == nil {
			c.Lists[m] = list
		}
	}
	return c
}
