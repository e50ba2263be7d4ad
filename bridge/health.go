package bridge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// A remote server can vanish without its connection noticing: a process
// whose host went away, a listener closed while no request was in flight.
// Until a call fails, the status would go on saying connected. So the
// shared connection to a remote server is pinged when it has been silent
// for Config.PingInterval, and every remote connection at once when the
// client sees a transport failure; a ping that fails ends the connection,
// and the link reconnects with backoff. Per-session connections get no idle
// pings: they reach the same server as the shared one, whose health stands
// for theirs. Stdio servers need none of this: their exit is seen at once.
//
// A ping can also go unanswered because the server is busy: one that
// handles a request at a time queues it behind a long tools/call. So when
// calls are in flight, an unanswered ping ends the connection only if a TCP
// connection to the server cannot be made either (refused, reset, no such
// host); one that connects says the server is alive and busy.
//
// While a remote link waits out its backoff it dials the server's host and
// port every PingInterval, and connects as soon as one that failed
// succeeds, so a server back from a long outage is reconnected within about
// PingInterval instead of at the end of a wait that has grown to Max.

// PingBudget spreads the idle pings of every Server that shares it: one
// per spacing on average, with a burst of up to burst pings at once, so
// that as many servers as fall due together (all of them connect at the
// hub's start) are pinged at once. Past that, each is pinged less often
// than PingInterval asks, and an idle hub stays idle (200 servers at 1.5 s
// would be 133 pings a second). A transport failure still brings its ping
// at once.
type PingBudget struct {
	spacing time.Duration
	burst   time.Duration // (burst pings - 1) × spacing
	mu      sync.Mutex
	next    time.Time // when the budget is spent, booked pings counted
}

// NewPingBudget returns a budget of one idle ping per spacing on average,
// up to burst at once.
func NewPingBudget(spacing time.Duration, burst int) *PingBudget {
	return &PingBudget{spacing: spacing, burst: time.Duration(max(burst, 1)-1) * spacing}
}

// The hub's budget: 20 idle pings a second, 30 at once, so that up to 30
// remote servers are pinged every DefaultPingInterval as if there were no
// budget.
const (
	DefaultPingSpacing = 50 * time.Millisecond
	DefaultPingBurst   = 30
)

// reserve books the next idle ping slot at or after now and returns how
// long until it.
func (b *PingBudget) reserve(now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.next.Before(now) {
		b.next = now
	}
	at := b.next.Add(-b.burst)
	if at.Before(now) {
		at = now
	}
	b.next = b.next.Add(b.spacing)
	return at.Sub(now)
}

// errPingTimeout is the cause that ends a ping nobody answered in time.
var errPingTimeout = errors.New("no answer to ping")

// health is what one remote connection's check knows: when the server last
// showed it is alive, and whether the client has reported a transport
// failure since the last ping.
type health struct {
	clk clock
	// idle says whether the connection is pinged when silent; when false
	// only reported transport failures bring a ping.
	idle bool

	mu sync.Mutex
	// last is the clock's time of the last sign of life. Times of the
	// wall clock carry a monotonic reading, which Sub and After use, so a
	// step of the wall clock does not move it.
	last time.Time

	// trouble holds the first transport failure reported since the last
	// ping; later ones while it waits add nothing.
	trouble chan error
}

func newHealth(clk clock, idle bool) *health {
	h := &health{clk: clk, idle: idle, trouble: make(chan error, 1)}
	h.alive()
	return h
}

// alive records a sign of life: a message from the server, a request it
// accepted, an answered ping.
func (h *health) alive() {
	now := h.clk.Now()
	h.mu.Lock()
	h.last = now
	h.mu.Unlock()
}

// troubled asks for a ping at once; it never blocks.
func (h *health) troubled(err error) {
	select {
	case h.trouble <- err:
	default:
	}
}

// settle forgets a transport failure reported while a ping was out: the
// answer settles it, and a failure that goes on is reported again.
func (h *health) settle() {
	select {
	case <-h.trouble:
	default:
	}
}

// aliveSince reports whether the server showed a sign of life after t.
func (h *health) aliveSince(t time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last.After(t)
}

// silent is how long the server has been silent.
func (h *health) silent() time.Duration {
	now := h.clk.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	return now.Sub(h.last)
}

// checks reports whether the link's remote server is checked at all.
func (l *link) checks() bool { return l.srv.remote() && l.srv.cfg.PingInterval > 0 }

// newHealth returns the check of the link's next connection: nil for a
// stdio server or when checks are off. Only the shared link pings when
// idle.
func (l *link) newHealth() *health {
	if !l.checks() {
		return nil
	}
	return newHealth(l.srv.cfg.clk, l.primary())
}

// watch waits until the connection is lost or the link stops (nil), or the
// server fails a health check (why). With h nil it only waits.
func (l *link) watch(conn upstreamConn, h *health) error {
	if h == nil {
		select {
		case <-conn.Done():
		case <-l.ctx.Done():
		}
		return nil
	}
	every, budget, clk := l.srv.cfg.PingInterval, l.srv.cfg.PingBudget, l.srv.cfg.clk
	var slot time.Time // the idle ping slot booked in the budget; zero when none
	for {
		select {
		case <-conn.Done():
			return nil
		case <-l.ctx.Done():
			return nil
		default:
		}
		var due <-chan time.Time // nil, never ready, without idle pings
		if h.idle {
			wait := every - h.silent()
			switch {
			case wait > 0:
				if !slot.After(clk.Now()) {
					slot = time.Time{} // used, or the server spoke since
				}
			case budget != nil:
				now := clk.Now()
				if slot.IsZero() {
					slot = now.Add(budget.reserve(now))
				}
				wait = slot.Sub(now)
			}
			if wait <= 0 {
				slot = time.Time{}
				if err := l.ping(conn, h); err != nil {
					return err
				}
				continue
			}
			due = clk.After(wait)
		}
		select {
		case <-conn.Done():
			return nil
		case <-l.ctx.Done():
			return nil
		case cause := <-h.trouble:
			l.logger().Debug("the connection saw a transport failure; pinging the server", "err", cause, "session", l.session)
			if err := l.ping(conn, h); err != nil {
				return err
			}
		case <-due:
		}
	}
}

// ping asks the server whether it is alive. It returns nil when it is (see
// pingAnswered; anything it sent while the ping went unanswered counts too,
// and so does a TCP connection made while calls are in flight), and also
// when the connection or the link ended meanwhile, which watch then sees;
// otherwise why the server is taken for gone.
//
// A ping that failed on the way (not for want of an answer in time, nor by
// a refusal the server meant) is sent once more within the same timeout: a
// kept-alive connection the server closed just as the ping went out fails
// it although the server is fine, and a needless reconnect would fail
// every call in flight.
func (l *link) ping(conn upstreamConn, h *health) error {
	timeout := l.srv.cfg.PingTimeout
	ctx, cancel := context.WithCancelCause(l.ctx)
	defer cancel(nil)
	stop := l.srv.cfg.clk.AfterFunc(timeout, func() { cancel(errPingTimeout) })
	defer stop()
	began := l.srv.cfg.clk.Now()
	var err error
	for try := 1; ; try++ {
		_, err = conn.Call(ctx, "ping", nil)
		if pingAnswered(err) {
			h.alive()
			h.settle()
			return nil
		}
		select {
		case <-conn.Done():
			return nil // lost on its own: its own error says why
		case <-l.ctx.Done():
			return nil
		default:
		}
		if try > 1 || ctx.Err() != nil || !retryPing(err) {
			break
		}
		l.logger().Debug("a ping failed on the way; sending it once more", "err", err, "session", l.session)
	}
	if !errors.Is(context.Cause(ctx), errPingTimeout) {
		return fmt.Errorf("the server stopped answering: ping: %w", err)
	}
	if h.aliveSince(began) {
		// Slow to answer, but it sent something meanwhile: busy, not
		// gone. The next check is an interval from then.
		l.logger().Debug("a ping went unanswered, but the server sent something meanwhile", "timeout", timeout, "session", l.session)
		return nil
	}
	if n := l.inFlight(); n > 0 {
		derr := l.reach()
		if derr == nil {
			// It takes connections: busy with the calls, not gone.
			// That counts as a sign of life, so it is not pinged again
			// before an interval has passed.
			h.alive()
			l.logger().Debug("a ping went unanswered while calls are in flight, but the server takes connections: busy", "timeout", timeout, "calls", n, "session", l.session)
			return nil
		}
		return fmt.Errorf("the server stopped answering: no answer to a ping within %v, and no connection to it: %w", timeout, derr)
	}
	return fmt.Errorf("the server stopped answering: no answer to a ping within %v", timeout)
}

// pingAnswered reports whether a ping's outcome shows the server alive: an
// answer, an error answer (a server that does not know ping), or any HTTP
// status but a refusal that asks for sign-in, a session that is gone and
// could not be renewed, and the gateway errors (502, 503, 504) a proxy or
// load balancer gives for a server behind it that is gone.
func pingAnswered(err error) bool {
	if err == nil {
		return true
	}
	var authErr *client.AuthRequiredError
	if errors.As(err, &authErr) || errors.Is(err, client.ErrSessionExpired) {
		return false
	}
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return true
	}
	var he *client.HTTPError
	if errors.As(err, &he) {
		switch he.Status {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return false
		}
		return true
	}
	return false
}

// retryPing reports whether a failed ping is worth one more try: not when
// the server said no (sign-in wanted, session gone) or the connection is
// closed.
func retryPing(err error) bool {
	var authErr *client.AuthRequiredError
	return !errors.As(err, &authErr) && !errors.Is(err, client.ErrSessionExpired) && !errors.Is(err, client.ErrClosed)
}

// inFlight counts the calls in flight on the link.
func (l *link) inFlight() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.calls)
}

// reach tries a TCP connection to the server (see probeAddr) within the
// ping timeout.
func (l *link) reach() error {
	addr := l.srv.probeAddr
	if addr == "" {
		return fmt.Errorf("no host and port to dial in the server's URL")
	}
	return l.srv.cfg.reach(l.ctx, addr, l.srv.cfg.PingTimeout)
}

// waitRetry waits delay before the next connection attempt; false when the
// link stopped meanwhile. A checked remote link dials the server at once
// and, while that fails, every PingInterval, and cuts the wait short when a
// dial succeeds: the server is back. When the first dial succeeds the server
// was reachable all along (it failed the handshake, or stopped answering),
// and the whole delay is waited, so such a server still backs off to Max.
func (l *link) waitRetry(delay time.Duration) bool {
	clk := l.srv.cfg.clk
	due := clk.After(delay)
	if l.checks() && l.reach() != nil {
		for {
			select {
			case <-due:
				return true
			case <-l.ctx.Done():
				return false
			case <-clk.After(l.srv.cfg.PingInterval):
			}
			if l.reach() == nil {
				l.logger().Info("the server takes connections again; reconnecting without waiting out the backoff", "session", l.session)
				return true
			}
		}
	}
	select {
	case <-due:
		return true
	case <-l.ctx.Done():
		return false
	}
}

// probeAddr is the host:port a TCP probe of a remote server dials: the
// proxy's when one is configured for its URL (the server is reached through
// it), else the URL's own, the port defaulting by scheme; "" when the URL
// names no host.
func probeAddr(cfg client.Config) string {
	u, err := url.Parse(cfg.URL)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	proxy := http.ProxyFromEnvironment // what http.DefaultTransport uses
	if hc := cfg.HTTPClient; hc != nil && hc.Transport != nil {
		proxy = nil
		if tr, ok := hc.Transport.(*http.Transport); ok {
			proxy = tr.Proxy
		}
	}
	if proxy != nil {
		if pu, err := proxy(&http.Request{Method: http.MethodPost, URL: u, Header: http.Header{}}); err == nil && pu != nil && pu.Hostname() != "" {
			u = pu
		}
	}
	return client.HostPort(u)
}
