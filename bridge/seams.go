package bridge

import (
	"context"
	"encoding/json"
	"net"
	"time"

	"github.com/mcphub/mcphub/client"
)

// upstreamConn is what a link needs of one upstream connection. *client.Conn
// is the only production implementation; the interface exists so the
// bridge's id, token and supervision logic can be exercised against a fake
// connection whose every step a test controls.
type upstreamConn interface {
	Start(ctx context.Context) error
	Close() error
	Done() <-chan struct{}
	Err() error
	Initialize() *client.InitializeResult
	Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	CallWithID(ctx context.Context, id json.RawMessage, method string, params json.RawMessage) (json.RawMessage, error)
	NextID() json.RawMessage
	Notify(ctx context.Context, method string, params json.RawMessage) error
	ListAll(ctx context.Context, method string) ([]json.RawMessage, error)
	Resumed() []json.RawMessage
	Await(ctx context.Context, id json.RawMessage) (json.RawMessage, error)
	Transport() string
	PID() int
}

var _ upstreamConn = (*client.Conn)(nil)

// dialer makes one upstream connection that reports to h.
type dialer func(cfg client.Config, h client.Handler) upstreamConn

// dialClient is the production dialer.
func dialClient(cfg client.Config, h client.Handler) upstreamConn { return client.New(cfg, h) }

// reacher tries a TCP connection to addr (host:port) within timeout and
// closes it at once: the cheapest proof that a remote server's host is up
// and listening, with no request it must answer.
type reacher func(ctx context.Context, addr string, timeout time.Duration) error

// dialTCP is the production reacher.
func dialTCP(ctx context.Context, addr string, timeout time.Duration) error {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// clock is the bridge's view of time: the supervisor's retry waits, the
// crash-loop window, the stability check and the coalescing of state writes
// all go through it, so they can be driven without waiting in real time.
type clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed.
	After(d time.Duration) <-chan time.Time
	// AfterFunc runs f on its own goroutine once d has passed; stop
	// prevents that when it has not happened yet and reports whether it did.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// realClock is the wall clock.
type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (realClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}
