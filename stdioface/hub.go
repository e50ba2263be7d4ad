package stdioface

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
// and comes back, so that a hub restart is invisible to the client.

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

// connAfter returns the current connection once it is newer than after and
// not being replaced.
func (h *faceHub) connAfter(ctx context.Context, after int) (*client.Conn, *hubTransport, int, error) {
	for {
		h.mu.Lock()
		if h.fatal != nil {
			err := h.fatal
			h.mu.Unlock()
			return nil, nil, 0, err
		}
		if !h.swapping && h.conn != nil && h.gen > after {
			c, tr, g := h.conn, h.tr, h.gen
			h.mu.Unlock()
			return c, tr, g, nil
		}
		up := h.up
		h.mu.Unlock()
		select {
		case <-up:
		case <-ctx.Done():
			return nil, nil, 0, ctx.Err()
		}
	}
}

// call relays one request of the client's under its own id. A request that
// never reached the hub (nothing accepted the connection) is sent again on
// the next connection. One that reached it and lost its connection is
// finished by the connection that resumes the session, when that one resumes
// its stream; otherwise its fate is unknown and the client is told so.
func (h *faceHub) call(ctx context.Context, m *jsonrpc.Message) (json.RawMessage, error) {
	key := string(m.ID)
	after, resends := 0, 0
	var lost error // set once the request reached the hub and its connection was lost
	for {
		conn, tr, gen, err := h.connAfter(ctx, after)
		if err != nil {
			return nil, err
		}
		var res json.RawMessage
		sent := true
		if lost != nil {
			if !resumes(conn, m.ID) {
				return nil, fmt.Errorf("the hub restarted while this request was in flight and its answer was lost (%v); send it again", lost)
			}
			res, err = conn.Await(ctx, m.ID)
		} else {
			tr.watch(key)
			res, err = conn.CallWithID(ctx, m.ID, m.Method, m.Params)
			sent = tr.unwatch(key)
		}
		if err == nil || isRPCError(err) || ctx.Err() != nil {
			return res, err
		}
		if h.tokenReplaced(ctx, gen, err) {
			// Refused before the hub read it: it goes again, with the
			// token in force now.
			if resends++; resends > faceMaxResends {
				return nil, err
			}
			after = gen
			continue
		}
		if !sent {
			if resends++; resends > faceMaxResends {
				return nil, err
			}
			h.reportOutage(gen)
			after = gen
			continue
		}
		if definite(err) {
			return nil, err
		}
		h.f.log.Debug("a request lost its connection to the hub", "rpc_id", key, "err", err)
		h.reportOutage(gen)
		lost, after = err, gen
	}
}

// unauthorized reports whether err is the hub's 401.
func unauthorized(err error) bool {
	var he *client.HTTPError
	return errors.As(err, &he) && he.Status == http.StatusUnauthorized
}

// tokenReplaced handles the hub's 401 to connection gen: when the registry
// now gives another token than the connection sends (auth turned on, or the
// token file replaced, which the hub applies at once), the connection is
// replaced by one that sends it, resuming the session, and tokenReplaced
// reports true: the request may go again on the next connection. A 401 to
// the token in force is the hub's answer, and any other error is left to
// the caller.
func (h *faceHub) tokenReplaced(ctx context.Context, gen int, err error) bool {
	if !unauthorized(err) {
		return false
	}
	fresh, ferr := h.f.cfg.Find(ctx)
	h.mu.Lock()
	sent, current := h.target.Token, gen == h.gen
	h.mu.Unlock()
	if !current {
		return true // replaced already; the next connection is newer
	}
	if ferr != nil || fresh.Token == sent {
		return false
	}
	h.f.log.Info("the hub's token changed; reconnecting with the registry's token in force now")
	h.reportOutage(gen)
	return true
}

// resumes reports whether conn resumed the stream of request id.
func resumes(conn *client.Conn, id json.RawMessage) bool {
	for _, r := range conn.Resumed() {
		if string(r) == string(id) {
			return true
		}
	}
	return false
}

func isRPCError(err error) bool {
	var rpcErr *jsonrpc.Error
	return errors.As(err, &rpcErr)
}

// definite reports whether err is the hub's final word on a request rather
// than a lost connection: a refusal by HTTP status, an answer too large, or
// a session the hub no longer knows.
func definite(err error) bool {
	var he *client.HTTPError
	if errors.As(err, &he) {
		return he.Status >= 400 && he.Status < 500
	}
	return errors.Is(err, client.ErrMessageTooLarge) || errors.Is(err, client.ErrSessionExpired)
}

// notify passes one notification of the client's to the hub. One that
// could not reach the hub is sent again on the next connection.
func (h *faceHub) notify(m *jsonrpc.Message) {
	after := 0
	for range 3 {
		conn, _, gen, err := h.connAfter(h.f.ctx, after)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(h.f.ctx, faceNotifyTimeout)
		err = conn.Notify(ctx, m.Method, m.Params)
		cancel()
		if err == nil || h.f.ctx.Err() != nil {
			return
		}
		if h.tokenReplaced(h.f.ctx, gen, err) {
			after = gen
			continue
		}
		if refused(err) {
			h.f.log.Debug("the hub refused a notification", "method", m.Method, "err", err)
			return
		}
		// Any other failure (a connection reset while the hub restarts,
		// a hub that does not answer) may have lost it on the way: it goes
		// again on the next connection.
		h.f.log.Debug("could not pass a notification to the hub; sending it again on the next connection", "method", m.Method, "err", err)
		h.reportOutage(gen)
		after = gen
	}
}

// refused reports whether err is the hub's answer to a notification, which
// sending it again would not change: an HTTP status (a session the hub no
// longer knows is one), or a message too large.
func refused(err error) bool {
	var he *client.HTTPError
	return errors.As(err, &he) || errors.Is(err, client.ErrSessionExpired) || errors.Is(err, client.ErrMessageTooLarge)
}

// reportOutage says that connection gen cannot reach the hub. The first
// report for the current connection begins its replacement; callers then
// wait in connAfter.
func (h *faceHub) reportOutage(gen int) {
	h.mu.Lock()
	begin := gen == h.gen && !h.swapping && h.fatal == nil && h.f.ctx.Err() == nil
	if begin {
		h.swapping = true
	}
	h.mu.Unlock()
	if begin {
		select {
		case h.kick <- struct{}{}:
		default:
		}
	}
}

// startSupervising starts supervise. close waits for it from now on: the
// flag is set before the goroutine exists, so a shutdown right after the
// handshake cannot miss it.
func (h *faceHub) startSupervising() {
	h.mu.Lock()
	h.supervises = true
	h.mu.Unlock()
	go h.supervise()
}

// supervise replaces the connection whenever it ends or is reported unable
// to reach the hub, until the face shuts down or gives up.
func (h *faceHub) supervise() {
	defer close(h.supervised)
	for {
		h.mu.Lock()
		conn, gen, swapping := h.conn, h.gen, h.swapping
		h.mu.Unlock()
		if !swapping {
			select {
			case <-conn.Done():
				h.f.log.Warn("the connection to the hub ended; reconnecting", "err", conn.Err())
				h.reportOutage(gen)
			case <-h.kick:
			case <-h.f.ctx.Done():
				return
			}
			continue
		}
		if err := h.swap(conn); err != nil {
			h.mu.Lock()
			h.fatal = err
			close(h.up)
			h.mu.Unlock()
			if h.f.ctx.Err() == nil {
				close(h.failed) // run returns the error, which is printed
			}
			return
		}
	}
}

// swap closes the old connection without ending its session, waits for the
// hub to answer again and connects anew, resuming the session.
func (h *faceHub) swap(old *client.Conn) error {
	h.mu.Lock()
	oldTr := h.tr
	h.mu.Unlock()
	oldTr.abandon()
	old.Close()
	h.plain.CloseIdleConnections()
	h.f.log.Info("the hub cannot be reached; waiting for it")
	deadline := time.Now().Add(h.f.cfg.GiveUp)
	delay := newRetryDelay(100*time.Millisecond, 2*time.Second)
	for {
		t, err := h.reachHub(deadline)
		if err != nil {
			return err
		}
		h.mu.Lock()
		gen := h.gen + 1
		h.mu.Unlock()
		conn, tr, err := h.dial(h.f.ctx, gen, t, h.resumeState())
		if err == nil {
			h.install(conn, tr, gen, t)
			h.f.log.Info("reconnected to the hub", "resumed_requests", len(conn.Resumed()))
			return nil
		}
		if h.f.ctx.Err() != nil {
			return h.f.ctx.Err()
		}
		h.f.log.Warn("could not reconnect to the hub", "err", err)
		if time.Now().After(deadline) {
			return fmt.Errorf("could not reconnect to the hub within %s: %w", h.f.cfg.GiveUp, err)
		}
		if !sleepFor(h.f.ctx, delay.next()) {
			return h.f.ctx.Err()
		}
	}
}

// reachHub waits until a hub answers, with jittered backoff from 100 ms to
// 2 s. A hub this face started is started again once it has been gone for
// reviveAfter.
func (h *faceHub) reachHub(deadline time.Time) (hubclient.Target, error) {
	delay := newRetryDelay(100*time.Millisecond, 2*time.Second)
	down := time.Now()
	var revived time.Time
	var lastErr string
	for {
		t, err := h.f.cfg.Find(h.f.ctx)
		if err == nil {
			return t, nil
		}
		if h.f.ctx.Err() != nil {
			return hubclient.Target{}, h.f.ctx.Err()
		}
		var wrong *wrongAnswerError
		if msg := err.Error(); errors.As(err, &wrong) && msg != lastErr {
			h.f.log.Warn("the hub does not answer as it should", "err", err)
			lastErr = msg
		} else if !errors.Is(err, hubclient.ErrNoHub) {
			h.f.log.Debug("the hub does not answer yet", "err", err)
		}
		if h.f.cfg.Revive != nil && time.Since(down) >= h.f.cfg.ReviveAfter && time.Since(revived) >= faceReviveEvery {
			revived = time.Now()
			h.f.log.Info("the hub this face started is gone; starting it again")
			if err := h.f.cfg.Revive(h.f.ctx); err != nil {
				h.f.log.Warn("could not start the hub again", "err", err)
			}
			continue
		}
		if time.Now().After(deadline) {
			return hubclient.Target{}, fmt.Errorf("no hub has answered for %s: %w", h.f.cfg.GiveUp, err)
		}
		if !sleepFor(h.f.ctx, delay.next()) {
			return hubclient.Target{}, h.f.ctx.Err()
		}
	}
}

// close ends the hub session at shutdown: the current connection is closed,
// which deletes the session. A connection being replaced was closed already,
// without deleting it: then the session it had is deleted once the hub
// answers, unless the hub was given up on.
func (h *faceHub) close() {
	h.mu.Lock()
	supervises := h.supervises
	h.mu.Unlock()
	if supervises {
		<-h.supervised
	}
	h.mu.Lock()
	conn, swapping, st := h.conn, h.swapping, h.state
	h.mu.Unlock()
	gaveUp := false
	select {
	case <-h.failed:
		gaveUp = true
	default:
	}
	switch {
	case conn != nil && !swapping:
		conn.Close()
	case conn != nil && st.SessionID != "" && !gaveUp:
		h.deleteSession(st)
	}
	h.plain.CloseIdleConnections()
}

// deleteSession ends the hub session of st with a DELETE, waiting for the
// hub to answer for as long as calls in flight may take at stdin's end
// (the drain time). A hub that no longer knows the session, or does not
// let sessions be deleted, has nothing left to end; one that refuses the
// DELETE otherwise is not asked again.
func (h *faceHub) deleteSession(st client.State) {
	ctx, cancel := context.WithTimeout(context.Background(), h.f.cfg.Drain)
	defer cancel()
	delay := newRetryDelay(100*time.Millisecond, 2*time.Second)
	for {
		t, err := h.f.cfg.Find(ctx)
		if err == nil {
			err = h.sendDelete(ctx, t, st)
			if err == nil {
				h.f.log.Debug("ended the hub session the connection being replaced had")
				return
			}
			var he *client.HTTPError
			if errors.As(err, &he) {
				h.f.log.Warn("could not end the hub session", "err", err)
				return
			}
		}
		if !sleepFor(ctx, delay.next()) {
			h.f.log.Warn("the hub did not answer in time to end the session; it ends when the hub expires it", "waited", h.f.cfg.Drain)
			return
		}
	}
}

// sendDelete sends the DELETE that ends session st to the hub at t.
func (h *faceHub) sendDelete(ctx context.Context, t hubclient.Target, st client.State) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, t.URL(h.f.cfg.Path), nil)
	if err != nil {
		return fmt.Errorf("the DELETE of the hub session: %w", err)
	}
	req.Header.Set("Mcp-Session-Id", st.SessionID)
	if st.ProtocolVersion != "" {
		req.Header.Set("MCP-Protocol-Version", st.ProtocolVersion)
	}
	resp, err := t.Do(req)
	if err != nil {
		return fmt.Errorf("the DELETE of the hub session: %w", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode <= 299,
		resp.StatusCode == http.StatusNotFound, resp.StatusCode == http.StatusMethodNotAllowed:
		return nil
	}
	return &client.HTTPError{Method: http.MethodDelete, URL: t.URL(h.f.cfg.Path), Status: resp.StatusCode}
}

func sleepFor(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
