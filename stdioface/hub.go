package stdioface

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// The stdio face's side of the hub: one client.Conn at a time, replaced by
// a new one that resumes the same hub session whenever the hub goes away
// and comes back, so that a hub restart is invisible to the client. This
// file dials a connection and installs it, keeping the state a replacement
// resumes; hub_call.go, hub_supervise.go and hub_close.go use it.

const (
	// DefaultReviveAfter is how long a hub this face started may be gone
	// before it is started again.
	DefaultReviveAfter = 5 * time.Second
	// faceReviveEvery spaces further attempts to start it.
	faceReviveEvery = 30 * time.Second
	// faceMaxResends bounds how often one request that never reached the
	// hub is sent again.
	faceMaxResends = 20
	// faceNotifyTimeout bounds passing one notification to the hub.
	faceNotifyTimeout = 10 * time.Second
	// getStreamKey is the client package's name for the standalone GET
	// stream in State.LastEventIDs; every other key is a request id.
	getStreamKey = "get"
)

// errAbandoned refuses the DELETE of a connection that is replaced: the
// session it would end is the one its successor resumes.
var errAbandoned = errors.New("the connection was replaced; its session lives on")

// initParams are the client's initialize parameters, which every connection
// to the hub offers as its own.
type initParams struct {
	ProtocolVersion string                `json:"protocolVersion"`
	Capabilities    json.RawMessage       `json:"capabilities"`
	ClientInfo      client.Implementation `json:"clientInfo"`
}

func parseInitParams(raw json.RawMessage) (initParams, error) {
	var p initParams
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &p); err != nil {
			return p, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "initialize: %v", err)
		}
	}
	if len(p.Capabilities) == 0 || p.Capabilities[0] != '{' {
		// Declaring nothing is the client's choice; the connection's
		// default would declare sampling and roots it may not have.
		p.Capabilities = json.RawMessage(`{}`)
	}
	return p, nil
}

// faceHub is the face's connection to the hub.
type faceHub struct {
	f          *face
	plain      *http.Transport // for a hub over plain HTTP; shared by every connection
	kick       chan struct{}   // wakes supervise for a swap that was begun
	failed     chan struct{}   // closed when the hub is given up on
	supervised chan struct{}   // closed when supervise returns

	mu         sync.Mutex
	params     initParams
	target     hubclient.Target
	conn       *client.Conn
	tr         *hubTransport
	gen        int           // the connection's number, from 1
	swapping   bool          // conn is being replaced
	up         chan struct{} // closed when a swap ends
	state      client.State  // the latest resumable state
	stateGen   int
	fatal      error
	supervises bool
}

func (h *faceHub) init(f *face) {
	h.f = f
	h.target = f.cfg.Hub
	h.plain = &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
	}
	h.kick = make(chan struct{}, 1)
	h.failed = make(chan struct{})
	h.supervised = make(chan struct{})
	h.up = make(chan struct{})
}

// connectFirst opens the session with the client's initialize parameters and
// returns the hub's initialize result.
func (h *faceHub) connectFirst(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	p, err := parseInitParams(raw)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.params = p
	t := h.target
	h.mu.Unlock()
	conn, tr, err := h.dial(ctx, 1, t, nil)
	if err != nil && unauthorized(err) {
		// The token may have changed since the hub was found: auth
		// turned on, or the token file replaced.
		if fresh, ferr := h.f.cfg.Find(ctx); ferr == nil && fresh.Token != t.Token {
			t = fresh
			conn, tr, err = h.dial(ctx, 1, t, nil)
		}
	}
	if err != nil {
		return nil, err
	}
	h.install(conn, tr, 1, t)
	h.f.log.Info("relaying to the hub", "url", t.URL(h.f.cfg.Path), "client", p.ClientInfo.Name)
	return conn.Initialize().Raw, nil
}

// dial connects connection gen to the hub at t, resuming st when given.
func (h *faceHub) dial(ctx context.Context, gen int, t hubclient.Target, st *client.State) (*client.Conn, *hubTransport, error) {
	base := http.RoundTripper(h.plain)
	if t.TLSCert != "" {
		hc, err := t.PinnedClient()
		if err != nil {
			return nil, nil, err
		}
		base = hc.Transport
	}
	tr := &hubTransport{base: base, onDialError: func() { h.reportOutage(gen) }, watched: map[string]bool{}}
	h.mu.Lock()
	p := h.params
	h.mu.Unlock()
	// Set before Start, which is the first to call OnState.
	var conn *client.Conn
	current := func() client.State { return conn.State() }
	cfg := client.Config{
		Name: "hub", URL: t.URL(h.f.cfg.Path), Transport: client.TransportStreamableHTTP,
		HTTPClient: &http.Client{Transport: tr},
		ClientInfo: p.ClientInfo, Capabilities: p.Capabilities, ProtocolVersion: p.ProtocolVersion,
		Resume: st,
		// Ids the face mints start far above the small ones its client
		// uses, which it passes through as they are, so a
		// re-initialization never takes an id a relayed request is using.
		MintAbove: time.Now().UnixMilli() * 1000,
		OnState:   h.onState(gen, current),
		Logger:    h.f.log,
	}
	if t.Token != "" {
		cfg.Headers = map[string]string{"Authorization": "Bearer " + t.Token}
	}
	conn = client.New(cfg, faceHandler{f: h.f, gen: gen})
	ctx, cancel := context.WithTimeout(ctx, faceConnectTimeout)
	defer cancel()
	if err := conn.Start(ctx); err != nil {
		tr.abandon()
		conn.Close()
		return nil, nil, err
	}
	return conn, tr, nil
}

// install makes conn the current connection and wakes whoever waits for it.
// Its state is kept as it is now, once started: the state it reported as it
// opened the session lacks the initialize result, without which a
// replacement could not resume the session, and the next report waits for
// an event on one of its streams.
func (h *faceHub) install(conn *client.Conn, tr *hubTransport, gen int, t hubclient.Target) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if gen >= h.stateGen {
		h.state, h.stateGen = conn.State(), gen
	}
	h.conn, h.tr, h.gen, h.target = conn, tr, gen, t
	h.swapping = false
	close(h.up)
	h.up = make(chan struct{})
}

// onState is the OnState of connection gen, whose state current reads: it
// keeps the latest state of the newest connection, which a replacement
// resumes.
//
// The State a connection hands OnState is not used: the connection takes
// it and calls OnState without a lock, from each of its stream readers, so
// a snapshot taken before another reader's event can arrive after that
// reader's, and keeping it would make a replacement resume from an older
// Last-Event-ID (the client would get those events twice). Comparing event
// ids per stream cannot order them: the hub names an event
// "<stream>_<decimal seq>" (hub/stream.go), which does not sort as a
// string, and a stream key (the GET stream after the session is renewed, a
// request id the client uses again) moves to a new stream with a random
// name. Instead the state is read from the connection here, under h.mu:
// the snapshots kept are then taken in the order they are kept, each
// stream's last event id only moves forward in the connection, and so the
// last one kept is the newest (and a stream the connection has let go of
// is gone from it too). The connection holds none of its locks when it
// calls OnState or the transport, so taking them under h.mu is safe.
func (h *faceHub) onState(gen int, current func() client.State) func(client.State) {
	return func(client.State) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if gen < h.stateGen {
			return
		}
		st := current()
		prev := h.state.SessionID
		h.state, h.stateGen = st, gen
		if prev != "" && st.SessionID != "" && st.SessionID != prev {
			h.f.log.Warn("the hub no longer knew this session; a new one was started (requests in flight on the old one fail)")
		}
	}
}

// resumeState is what a replacement connection resumes: the session, its
// GET stream and the streams of the client's requests still in flight.
func (h *faceHub) resumeState() *client.State {
	h.mu.Lock()
	st := h.state
	h.mu.Unlock()
	if st.SessionID == "" {
		return nil
	}
	keep := h.f.inFlight()
	ids := make(map[string]string, len(st.LastEventIDs))
	for k, v := range st.LastEventIDs {
		// The state also names streams of requests answered long ago:
		// resuming them would replay answers nobody waits for.
		if k == getStreamKey || keep[k] {
			ids[k] = v
		}
	}
	st.LastEventIDs = ids
	return &st
}

// fatalErr is why the hub was given up on.
func (h *faceHub) fatalErr() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fatal
}
