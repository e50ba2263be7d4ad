package hub

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// Cluster is what one replica of a team hub asks of the others through
// their shared store (cmd plugs in the PostgreSQL store's). Every session
// is held by one replica at a time: a request for a session another live
// replica holds is forwarded to it; a session whose replica stopped is
// claimed and served here. nil for a hub of its own.
type Cluster interface {
	// Locate reports where a stored session lives.
	Locate(ctx context.Context, session string) (SessionPlace, error)
	// Claim takes a session over, as Locate found it, from a replica that
	// stopped (fencing it: its other sessions come along) or from this
	// replica's earlier run. It returns the ids of the sessions taken,
	// none when the session moved since.
	Claim(ctx context.Context, p SessionPlace) ([]string, error)
	// Gone returns a channel closed once the replica name, in generation
	// gen, stops beating or is replaced; it is forgotten when ctx ends.
	Gone(ctx context.Context, replica string, gen int64) <-chan struct{}
	// Session loads a session this replica owns from the store.
	Session(id string) (SessionRecord, error)
	// Secret authenticates requests one replica forwards to another.
	Secret() string
	// Name is this replica's name; Address finds another's base URL, and
	// whether it beats.
	Name() string
	Address(ctx context.Context, replica string) (address string, gen int64, alive bool, err error)
	// Status lists the replicas.
	Status(ctx context.Context) *api.ClusterStatus
	// Deadline is how long a replica may be silent before it is taken
	// for dead.
	Deadline() time.Duration
	// Problem says why the store has not taken this replica's heartbeat
	// lately, without asking it; nil while it has.
	Problem() error
	// Current reports whether this replica still holds its sessions: it
	// beat lately, or beats now. A replica that learns it was taken for
	// dead lets go of them (Hub.LetGo) before Current returns.
	Current(ctx context.Context) bool
}

// SessionPlace is where a stored session lives (Cluster.Locate).
type SessionPlace struct {
	ID    string
	Found bool
	// Owner and OwnerGen name the replica (and its generation) holding
	// it; Address is that replica's base URL.
	Owner    string
	OwnerGen int64
	Address  string
	// Mine: this replica holds it. Alive: its owner beats.
	Mine, Alive bool
}

// ForwardedHeader marks a request one replica sends another (forwarded, or
// its own connection to a replicas = "one" server's replica); its value is
// the cluster's secret. A forwarded request is never forwarded again.
const ForwardedHeader = "Mcphub-Forwarded"

// RelayHeader marks, besides ForwardedHeader, the requests of a replica's
// own connection to the replica running a replicas = "one" server (and not
// a client's request another replica forwarded).
const RelayHeader = "Mcphub-Relay"

// Relayer is an Upstream that reaches its server through another replica
// of the team hub (a replicas = "one" server this replica does not run).
// A request another replica sends for that server is refused rather than
// relayed on: two replicas that each took the other for the server's
// runner, for a heartbeat, would pass it back and forth.
type Relayer interface {
	Relays() bool
}

// relayLoop answers 503, and reports true, for a request another
// replica's relay connection (RelayHeader) sent to a server this replica
// only relays; a client's request another replica forwarded goes on.
func (e *edge) relayLoop(w http.ResponseWriter, r *http.Request, endpoint string) bool {
	if e.cluster == nil || !serverEndpoint(endpoint) || r.Header.Get(RelayHeader) == "" || !e.fromReplica(r) {
		return false
	}
	entry := e.servers.get(endpoint)
	if entry == nil {
		return false
	}
	if rl, ok := entry.up.(Relayer); !ok || !rl.Relays() {
		return false
	}
	retryLater(w, "Service Unavailable: this replica does not run that server now; the replica that does will be found again shortly")
	return true
}

// fromReplica reports whether r was forwarded by another replica.
func (e *edge) fromReplica(r *http.Request) bool {
	v := r.Header.Get(ForwardedHeader)
	return v != "" && e.cluster != nil && subtle.ConstantTimeCompare([]byte(v), []byte(e.cluster.Secret())) == 1
}

// fromCluster serves a request for a session this replica does not hold in
// memory: it forwards it to the live replica that holds it (answering the
// client itself, nil), or claims a session whose replica stopped and
// returns it, restored here, to be served. Unknown sessions are answered
// 404; body is the POST's body, already read.
func (e *edge) fromCluster(w http.ResponseWriter, r *http.Request, id, endpoint string, body []byte) *session {
	ctx := r.Context()
	forwarded := e.fromReplica(r)
	for range 3 {
		p, err := e.cluster.Locate(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return nil // the client went away
			}
			e.log.Warn("could not locate a session in the store", "session", id, "err", err)
			retryLater(w, "Service Unavailable: the hub's store cannot be reached to find this session; retry shortly")
			return nil
		}
		switch {
		case !p.Found:
			sessionNotFound(w)
			return nil
		case p.Mine:
			return e.sessions.takeOne(e.cluster, []string{id}, id, endpoint, callerOf(ctx), w)
		case p.Alive && !forwarded:
			if e.forward(w, r, p, body) {
				return nil
			}
			// Its replica did not answer: once it is taken for dead, the
			// session is claimed and served here.
			if p, err = e.awaitGone(ctx, p); err != nil || !p.Found {
				retryLater(w, "Service Unavailable: the replica holding this session does not answer; retry shortly")
				return nil
			}
			if p.Mine {
				return e.sessions.takeOne(e.cluster, []string{id}, id, endpoint, callerOf(ctx), w)
			}
			if p.Alive {
				continue // another live replica has it now: forward there
			}
		case p.Alive:
			// Forwarded here, yet held there: the owner moved between
			// the two looks. The client retries.
			retryLater(w, "Service Unavailable: this session is moving between replicas; retry shortly")
			return nil
		}
		if ids, err := e.cluster.Claim(ctx, p); err != nil {
			e.log.Warn("could not claim a session from a stopped replica", "session", id, "replica", p.Owner, "err", err)
			retryLater(w, "Service Unavailable: the hub's store cannot be reached to take over this session; retry shortly")
			return nil
		} else if slices.Contains(ids, id) {
			e.log.Warn("took over the sessions of a replica that stopped", "replica", p.Owner, "sessions", len(ids), "asked_for", id)
			return e.sessions.takeOne(e.cluster, ids, id, endpoint, callerOf(ctx), w)
		}
	}
	retryLater(w, "Service Unavailable: this session is moving between replicas; retry shortly")
	return nil
}

// awaitGone waits, when the replica holding a session (as was found) did
// not answer a forwarded request, until the cluster takes it for dead (its
// heartbeat older than the deadline, or its generation replaced: the
// replicas tell each other at once, through the store, when one stops or
// is fenced) and reports where the session is then. It waits twice the
// deadline at most.
func (e *edge) awaitGone(parent context.Context, was SessionPlace) (SessionPlace, error) {
	ctx, cancel := context.WithTimeout(parent, 2*e.cluster.Deadline())
	defer cancel()
	select {
	case <-e.cluster.Gone(ctx, was.Owner, was.OwnerGen):
	case <-ctx.Done():
	}
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return was, ctx.Err()
	}
	lctx, lcancel := context.WithTimeout(parent, e.cluster.Deadline())
	defer lcancel()
	return e.cluster.Locate(lctx, was.ID)
}

// forward proxies r to the replica at p.Address, streaming its answer
// back (an SSE stream too, event by event). It reports false, having
// written nothing, when that replica could not be reached.
func (e *edge) forward(w http.ResponseWriter, r *http.Request, p SessionPlace, body []byte) bool {
	target, err := url.Parse(p.Address)
	if err != nil {
		e.log.Warn("a replica's address does not parse", "replica", p.Owner, "err", err)
		return false
	}
	if body != nil {
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	}
	// A replica that stops beating while its answer is awaited (frozen:
	// its kernel still takes the connection) or streamed is let go of: the
	// request is then served here, or, once the answer has begun, the
	// connection is cut (ReverseProxy aborts the handler) and the client
	// resumes its stream.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if p.OwnerGen != 0 {
		go func() {
			select {
			case <-e.cluster.Gone(ctx, p.Owner, p.OwnerGen):
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	clientGone := r.Context()
	r = r.WithContext(ctx)
	unreached := false
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
			pr.Out.Header.Set(ForwardedHeader, e.cluster.Secret())
		},
		Transport:     e.forwarder,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			unreached = true
			if clientGone.Err() != nil {
				return // the client went away: nothing to answer
			}
			e.log.Warn("a replica did not answer a forwarded request", "replica", p.Owner, "address", p.Address, "err", err)
		},
	}
	proxy.ServeHTTP(headerFlusher{w}, r)
	if unreached && body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	return !unreached
}

// headerFlusher sends a forwarded answer's headers as soon as they come, so
// the client (or a balancer in front) has the response even before its
// first event.
type headerFlusher struct{ http.ResponseWriter }

func (f headerFlusher) WriteHeader(code int) {
	f.ResponseWriter.WriteHeader(code)
	http.NewResponseController(f.ResponseWriter).Flush()
}

func (f headerFlusher) Unwrap() http.ResponseWriter { return f.ResponseWriter }

// takeOne restores the sessions ids, just taken over (or found this
// replica's in the store), and returns the one asked for when it belongs
// to endpoint and to the caller; otherwise it answers 404.
func (set *sessionSet) takeOne(c Cluster, ids []string, id, endpoint string, caller Caller, w http.ResponseWriter) *session {
	set.takeOver(c, ids)
	s := set.get(id)
	if s == nil || s.endpoint != endpoint || !s.heldBy(caller) {
		sessionNotFound(w)
		return nil
	}
	s.touch()
	return s
}

// takeOver restores sessions this replica took over from another, those
// not in memory already, as one batch: their streams replay from the
// store; a request that was in flight on the other replica is finished over
// that replica's upstream session when its server can resume the stream
// (Options.Takeover; one connection per server for the whole batch), and
// answered with an error otherwise; their subscriptions are made again on
// this replica's upstreams. Batches run one at a time, so a request for a
// session the reaper is restoring waits for it.
func (set *sessionSet) takeOver(c Cluster, ids []string) {
	set.takeMu.Lock()
	defer set.takeMu.Unlock()
	if set.store == nil {
		return
	}
	calls, err := set.store.store.Calls()
	if err != nil {
		set.log.Warn("could not load the calls of sessions taken over", "err", err)
		return
	}
	byStream := callsByStream(calls)
	tks := map[string]*takeover{}
	var restored []*session
	resumed, lost := 0, 0
	for _, id := range ids {
		if set.get(id) != nil {
			continue
		}
		rec, err := c.Session(id)
		if err != nil {
			set.log.Warn("could not restore a session taken over from another replica", "session", id, "err", err)
			continue
		}
		tk := tks[rec.TakenFrom]
		if tk == nil {
			tk = &takeover{set: set, from: rec.TakenFrom, ups: map[string]*takeoverUpstream{}}
			tks[rec.TakenFrom] = tk
		}
		s, a, l, err := set.restoreSession(set.store.store, rec, byStream, adoptFunc{tk.adopt, lostWithReplica})
		if err != nil {
			set.log.Warn("could not restore a session taken over from another replica", "session", id, "err", err)
			continue
		}
		set.mu.Lock()
		set.byID[id] = s
		set.mu.Unlock()
		restored = append(restored, s)
		resumed, lost = resumed+a, lost+l
	}
	for _, tk := range tks {
		tk.start()
	}
	if len(restored) == 0 {
		return
	}
	set.router.resubscribe(restored, set.group)
	set.fanout.applyLevels()
	set.log.Info("restored sessions taken over from another replica", "sessions", len(restored),
		"calls_resumed", resumed, "calls_lost", lost)
}

// takeover finishes the calls of one taken-over session over the upstream
// sessions of the replica it was taken from: one Upstream per server,
// started once every call is adopted and closed once they are answered.
type takeover struct {
	set  *sessionSet
	from string
	ups  map[string]*takeoverUpstream
}

// takeoverUpstream is one server's upstream of a takeover and the calls
// still waiting on it.
type takeoverUpstream struct {
	up      Upstream
	pending sync.WaitGroup
}

// adopt hands one call to the upstream of its server.
func (tk *takeover) adopt(s *session, st *stream, c CallRecord) bool {
	newUp := tk.set.takeoverUp
	if newUp == nil || tk.from == "" {
		return false
	}
	tu := tk.ups[c.Server]
	if tu == nil {
		e := tk.set.servers.get(c.Server)
		if e == nil {
			return false
		}
		up := newUp(e.spec, tk.set.servers.registry().Hub, tk.from)
		if up == nil {
			return false
		}
		tu = &takeoverUpstream{up: up}
		tk.ups[c.Server] = tu
	}
	tu.pending.Add(1)
	if !tk.set.adoptOn(tu.up, s, st, c, lostWithReplica, tu.pending.Done) {
		tu.pending.Done()
		return false
	}
	return true
}

// start connects each upstream that adopted a call and closes it once its
// calls are answered; one that adopted none is closed at once.
func (tk *takeover) start() {
	for _, tu := range tk.ups {
		tu.up.Start(tk.set.ctx)
		started := tk.set.group.Go(func() {
			tu.pending.Wait()
			tu.up.Close()
		})
		if !started {
			tu.up.Close()
		}
	}
}

// abandon closes every upstream of a takeover that will not go ahead.
func (tk *takeover) abandon() {
	for _, tu := range tk.ups {
		tu.up.Close()
	}
}

// letGo drops every session from memory, touching nothing in the store:
// another replica took them over. Their streams end, so their clients
// come back, through any replica, to the new owner.
func (set *sessionSet) letGo() {
	all := set.takeAll()
	for _, s := range all {
		s.close()
		set.router.release(s)
		for _, e := range set.servers.of(s.endpoint) {
			e.up.SessionClosed(s.id)
		}
	}
	set.fanout.applyLevels()
	if len(all) > 0 {
		set.log.Warn("let go of every session: another replica took them over", "sessions", len(all))
	}
}

// TakeOver restores, in the background, the sessions this replica claimed
// from one that stopped (the cluster's reaper calls it), so their calls are
// finished and their subscriptions renewed before their clients come back.
func (h *Hub) TakeOver(ids []string) {
	if h.opts.Cluster == nil {
		return
	}
	h.group.Go(func() { h.sessions.takeOver(h.opts.Cluster, ids) })
}

// LetGo drops every session this replica holds: the cluster found that
// another replica took them over while this one was silent.
func (h *Hub) LetGo() { h.sessions.letGo() }

// CutStreams cuts every stream this replica serves: its store is out of
// reach, and another replica may take their sessions; their clients come
// back, and are served once this replica knows where the sessions are.
func (h *Hub) CutStreams() { h.sessions.cutStreams() }

// retryLater answers 503 with Retry-After, for a state that passes.
func retryLater(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", strconv.Itoa(1))
	httpError(w, http.StatusServiceUnavailable, msg)
}

// sessionNotFound answers 404 for a session no replica holds.
func sessionNotFound(w http.ResponseWriter) {
	httpError(w, http.StatusNotFound, "Session not found: it ended or belongs to another endpoint; initialize a new one")
}

// clusterStatePrefix starts the requestStates of a team hub's parked calls:
// the same on every replica of one cluster (derived from its secret), so
// that any replica knows one when a retry brings it, and followed by the
// name of the replica holding the call.
func clusterStatePrefix(secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("mcphub-mrtr"))
	return "mcphub-mrtr:" + hex.EncodeToString(m.Sum(nil))[:16] + ":"
}

// heldElsewhere forwards the retry of a call parked on another replica
// (its requestState names that replica) and reports true; false leaves the
// request to this replica: a state of its own, or not this cluster's.
func (e *edge) heldElsewhere(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, body []byte) bool {
	if e.cluster == nil {
		return false
	}
	state, _ := jsonrpc.StringMember(m.Params, "requestState")
	rest, ok := strings.CutPrefix(state, clusterStatePrefix(e.cluster.Secret()))
	if !ok || e.sessions.parked.ours(state) {
		return false
	}
	enc, _, _ := strings.Cut(rest, ":")
	name, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || e.fromReplica(r) {
		return false // left to the local lookup, which answers that no call waits
	}
	addr, gen, alive, err := e.cluster.Address(r.Context(), string(name))
	switch {
	case err != nil:
		retryLater(w, "Service Unavailable: the hub's store cannot be reached to find the replica holding this call; retry shortly")
	case !alive:
		writeJSONReply(w, http.StatusOK, m.ID, jsonrpc.NewErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeInvalidParams,
			"Invalid params: the mcphub replica holding the call this requestState names stopped, and the call with it; make the request again without it")).Encode())
	case !e.forward(w, r, SessionPlace{Owner: string(name), OwnerGen: gen, Address: addr}, body):
		retryLater(w, "Service Unavailable: the replica holding this call does not answer; retry shortly")
	}
	return true
}

// replicaStatePrefix is the prefix of the states this replica mints.
func replicaStatePrefix(c Cluster) string {
	return clusterStatePrefix(c.Secret()) + base64.RawURLEncoding.EncodeToString([]byte(c.Name())) + ":"
}
