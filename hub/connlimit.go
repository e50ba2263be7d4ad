package hub

import (
	"container/list"
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/mcphub/mcphub/registry"
)

// The pace of the connection caps. They are variables so tests can shorten
// them.
var (
	// headEvictAfter is how long a connection may take over its TLS
	// handshake and first request head before it counts as a slow head
	// (slowloris), closed to make room before any request body: long
	// enough for a client on a slow link, short enough that a flood of
	// trickled heads goes first.
	headEvictAfter = time.Second
	// capLogEvery is the least time between two reports of connections
	// closed or refused at a cap, so that a flood cannot flood the log.
	capLogEvery = 10 * time.Second
)

// connLimited is implemented by a handler whose connection caps can change
// while it is served (the Hub's, from its registry).
type connLimited interface {
	connLimits() (total, perAddress int)
}

// connLimits returns the caps of the registry in force, [hub]
// max_connections and max_connections_per_address.
func (h *Hub) connLimits() (total, perAddress int) {
	hub := h.servers.registry().Hub
	return hub.MaxConnections, hub.MaxConnectionsPerAddress
}

// defaultConnLimits are the caps of a handler that has none of its own.
func defaultConnLimits() (total, perAddress int) {
	return registry.DefaultMaxConnections, registry.DefaultMaxConnectionsPerAddress
}

// The lists a connection is kept in while it may be closed to make room,
// each in the order connections entered it, so that the oldest is first. A
// connection in none of them is serving a request and is never closed.
const (
	listIdle = iota // kept alive between requests (over HTTP/2: no stream open)
	listHead        // the TLS handshake or the first request's head arriving
	listBody        // every running request waits for its body
	nLists
	listNone = -1
)

// trackedConn is what connLimiter knows of one client connection. Its
// fields are guarded by the limiter's mutex.
type trackedConn struct {
	nc    net.Conn
	addr  string         // the client's address, without its port
	state http.ConnState // the last state net/http reported

	handlers int  // requests whose handler is running
	bodies   int  // of those, the ones reading their body
	gone     bool // closed here, or reported closed: counted no more

	list  int       // the list it is in, or listNone
	since time.Time // when it entered that list
	// in are its elements in the list of every connection and in that of
	// its address.
	in [2]*list.Element
}

// group is a set of connections counted together: every connection, or
// those of one address.
type group struct {
	n     int
	lists [nLists]list.List
}

// inRequest is one request on a tracked connection: whether its handler
// is reading the body. guardBody marks the reading through it.
type inRequest struct {
	l      *connLimiter
	c      *trackedConn
	inBody bool
}

type (
	connKey    struct{}
	requestKey struct{}
)

// connLimiter caps the open client connections, in total and per client
// address, and keeps a newcomer served at a cap: it closes the least useful
// connection instead, oldest first: idle kept-alive connections, then those
// whose first head has been arriving for headEvictAfter, then those whose
// requests all wait for their body, then those just accepted. A connection
// with a request being served (an SSE stream, a long call) is never closed;
// when every connection is such, the newcomer is closed at once. Finding
// the one to close takes the same time however many are open.
//
// net/http reports each connection through ConnContext (accepted, before
// anything is read: the place to admit it), ConnState (new, active, idle,
// closed) and the handler wrapped by wrap (a request is being served).
type connLimiter struct {
	log    *slog.Logger
	limits func() (total, perAddress int)

	mu     sync.Mutex
	conns  map[net.Conn]*trackedConn
	all    group
	byAddr map[string]*group
	// evicted and refused count what the next report tells.
	evicted, refused int
	lastAddr         string // of the last connection refused
	reported         time.Time
}

func newConnLimiter(log *slog.Logger, limits func() (total, perAddress int)) *connLimiter {
	return &connLimiter{log: log, limits: limits, conns: map[net.Conn]*trackedConn{}, byAddr: map[string]*group{}}
}

// connContext admits a connection net/http has just accepted, closing
// another one or this one when a cap is reached, and gives the requests on
// it their connection.
func (l *connLimiter) connContext(ctx context.Context, nc net.Conn) context.Context {
	c := &trackedConn{nc: nc, addr: addrKey(nc.RemoteAddr()), state: http.StateNew, list: listNone}
	victims, admitted := l.admit(c)
	for _, v := range victims {
		closeConn(v.nc)
	}
	if !admitted {
		closeConn(nc)
	}
	l.report(c.addr, len(victims), !admitted)
	return context.WithValue(ctx, connKey{}, c)
}

// admit counts c and brings both counts back under their caps by closing
// the least useful connections; admitted is false when nothing could be
// closed, and c is then not counted.
func (l *connLimiter) admit(c *trackedConn) (victims []*trackedConn, admitted bool) {
	total, perAddress := l.limits()
	total = positiveOr(total, registry.DefaultMaxConnections)
	perAddress = positiveOr(perAddress, registry.DefaultMaxConnectionsPerAddress)
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.add(c, now)
	for _, capped := range [...]struct {
		g     *group
		limit int
	}{{l.byAddr[c.addr], perAddress}, {&l.all, total}} {
		for g := capped.g; g.n > capped.limit; {
			v := g.leastUseful(c, now)
			if v == nil {
				l.remove(c)
				return victims, false
			}
			l.remove(v)
			victims = append(victims, v)
		}
	}
	return victims, true
}

// leastUseful returns the connection of g to close first, never except;
// nil when every one is serving a request. The order: idle connections,
// then heads arriving for headEvictAfter or more (slowloris), then those
// waiting for their bodies, then heads just accepted, oldest first each.
//
// A connection just accepted comes last: it is the newcomer of a moment
// ago, whose head is on its way. Closing it for the next newcomer would
// serve nobody, and a flood of stalled bodies would close every newcomer
// before its request was read; closing the bodies first keeps a newcomer
// until its request is being served, and then it is safe.
func (g *group) leastUseful(except *trackedConn, now time.Time) *trackedConn {
	first := func(list int, stale bool) *trackedConn {
		for e := g.lists[list].Front(); e != nil; e = e.Next() {
			c := e.Value.(*trackedConn)
			if c == except {
				continue
			}
			if stale && now.Sub(c.since) < headEvictAfter {
				return nil // the rest are younger still
			}
			return c
		}
		return nil
	}
	for _, way := range [...]struct {
		list  int
		stale bool
	}{{listIdle, false}, {listHead, true}, {listBody, false}, {listHead, false}} {
		if c := first(way.list, way.stale); c != nil {
			return c
		}
	}
	return nil
}

// listFor is the list c belongs in.
func (c *trackedConn) listFor() int {
	switch {
	case c.handlers > 0 && c.bodies == c.handlers:
		return listBody
	case c.handlers > 0:
		return listNone
	case c.state == http.StateIdle:
		return listIdle
	case c.state == http.StateNew:
		return listHead
	}
	// Active with no handler running: over HTTP/1 the head has just been
	// read and the handler is about to start, or the handler has returned
	// and its response is being sent; over HTTP/2 a stream has just opened.
	return listNone
}

// place moves c to the back of the list it belongs in now, if that is
// another list, or again is set.
func (l *connLimiter) place(c *trackedConn, now time.Time, again bool) {
	want := c.listFor()
	if c.gone || want == c.list && !again {
		return
	}
	l.unlist(c)
	c.list, c.since = want, now
	if want != listNone {
		c.in[0] = l.all.lists[want].PushBack(c)
		c.in[1] = l.byAddr[c.addr].lists[want].PushBack(c)
	}
}

func (l *connLimiter) unlist(c *trackedConn) {
	if c.list != listNone {
		l.all.lists[c.list].Remove(c.in[0])
		l.byAddr[c.addr].lists[c.list].Remove(c.in[1])
		c.list, c.in = listNone, [2]*list.Element{}
	}
}

// connState follows net/http's view of a connection.
func (l *connLimiter) connState(nc net.Conn, state http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.conns[nc]
	if c == nil {
		return // refused, closed to make room, or never admitted
	}
	switch state {
	case http.StateActive, http.StateIdle:
		c.state = state
		l.place(c, time.Now(), false)
	case http.StateHijacked, http.StateClosed:
		l.remove(c)
	}
}

func (l *connLimiter) add(c *trackedConn, now time.Time) {
	l.conns[c.nc] = c
	g := l.byAddr[c.addr]
	if g == nil {
		g = &group{}
		l.byAddr[c.addr] = g
	}
	g.n++
	l.all.n++
	l.place(c, now, false)
}

func (l *connLimiter) remove(c *trackedConn) {
	if c.gone {
		return
	}
	l.unlist(c)
	c.gone = true
	delete(l.conns, c.nc)
	l.all.n--
	if g := l.byAddr[c.addr]; g != nil {
		if g.n--; g.n == 0 {
			delete(l.byAddr, c.addr)
		}
	}
}

// counts returns the connections counted in total and from one address.
func (l *connLimiter) counts(addr string) (total, fromAddr int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if g := l.byAddr[addr]; g != nil {
		fromAddr = g.n
	}
	return l.all.n, fromAddr
}

// report logs what the caps closed, at most once per capLogEvery: a
// warning when newcomers were refused (every connection was serving a
// request), else an info line.
func (l *connLimiter) report(addr string, evicted int, refused bool) {
	if evicted == 0 && !refused {
		return
	}
	now := time.Now()
	l.mu.Lock()
	l.evicted += evicted
	if refused {
		l.refused++
		l.lastAddr = addr
	}
	if now.Sub(l.reported) < capLogEvery {
		l.mu.Unlock()
		return
	}
	ev, ref, last := l.evicted, l.refused, l.lastAddr
	l.evicted, l.refused, l.reported = 0, 0, now
	open := l.all.n
	l.mu.Unlock()
	total, perAddress := l.limits()
	attrs := []any{"closed_to_make_room", ev, "refused", ref, "open", open,
		"max_connections", total, "max_connections_per_address", perAddress}
	if ref > 0 {
		l.log.Warn("refused new client connections: at the connection cap every connection is serving a request",
			append(attrs, "address", last)...)
		return
	}
	l.log.Info("closed idle or slow client connections to make room at the connection cap", attrs...)
}

// wrap marks, for the requests on tracked connections, that their handler
// is running, and gives guardBody the request to mark its body reading on.
func (l *connLimiter) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(*trackedConn)
		if c == nil {
			next.ServeHTTP(w, r)
			return
		}
		req := &inRequest{l: l, c: c}
		l.mu.Lock()
		c.handlers++
		l.place(c, time.Now(), false)
		l.mu.Unlock()
		defer req.done()
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestKey{}, req)))
	})
}

// requestFrom returns the request's tracking, nil when its connection is
// not tracked (a handler served without NewServer's server).
func requestFrom(ctx context.Context) *inRequest {
	req, _ := ctx.Value(requestKey{}).(*inRequest)
	return req
}

// startBody marks that the handler has begun reading the body.
func (req *inRequest) startBody() {
	if req == nil {
		return
	}
	req.l.mu.Lock()
	defer req.l.mu.Unlock()
	if !req.inBody {
		req.inBody = true
		req.c.bodies++
		// Over HTTP/2, a body that begins on a connection already
		// waiting for others makes it younger.
		req.l.place(req.c, time.Now(), true)
	}
}

// endBody marks that the body has been read, or failed; idempotent.
func (req *inRequest) endBody() {
	if req == nil {
		return
	}
	req.l.mu.Lock()
	defer req.l.mu.Unlock()
	req.endBodyLocked()
}

func (req *inRequest) endBodyLocked() {
	if req.inBody {
		req.inBody = false
		req.c.bodies--
		req.l.place(req.c, time.Now(), false)
	}
}

// done marks that the handler has returned.
func (req *inRequest) done() {
	req.l.mu.Lock()
	defer req.l.mu.Unlock()
	req.endBodyLocked()
	req.c.handlers--
	req.l.place(req.c, time.Now(), false)
}

// addrKey is the client address connections are counted by: the IP
// address without its port (an IPv4 address written as IPv6 counts as the
// IPv4 one), or the whole address when it is not an IP address and port.
func addrKey(a net.Addr) string {
	if a == nil {
		return ""
	}
	s := a.String()
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone("").String()
	}
	return s
}

// closeConn closes a connection at once. A TLS connection is closed
// underneath: closing it as TLS sends an alert, which may wait on a peer
// that does not read.
func closeConn(nc net.Conn) {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	nc.Close()
}

func positiveOr(n, fallback int) int {
	if n > 0 {
		return n
	}
	return fallback
}
