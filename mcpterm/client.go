package mcpterm

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/hubclient"
)

// tableWidth is the width the list tables fit in.
const tableWidth = 100

// DefaultCancelWait is how long an interrupted command waits for its
// notifications/cancelled to reach the hub, and for the session to close,
// before it exits: long enough for a hub that answers, short enough that a
// hung one does not hold the terminal.
const DefaultCancelWait = 2 * time.Second

// Client is one terminal command's MCP client of the running hub: where it
// prints, and how it finds the hub. A command fills one in and calls one of
// its methods; they print results on Stdout and notes on Stderr, and return
// the error the command exits with.
type Client struct {
	Stdout, Stderr io.Writer
	// Target finds the hub, as mcphub status does. It is called only once
	// a command's arguments were found good, so that a malformed one is
	// refused before the hub is looked for.
	Target func() (hubclient.Target, error)
	// Options are the session's (the client's version, the caller's
	// registry); the Handler is the Client's own.
	Options hubclient.Options
	// CancelWait bounds the wait of an interrupted command (see
	// Interrupted); DefaultCancelWait when 0.
	CancelWait time.Duration
	// IsTerminal and VirtualTerminal tell whether Stderr is a terminal
	// that shows a progress line; IsTerminal and EnableVirtualTerminal
	// when nil. A test stands in for a terminal with them.
	IsTerminal, VirtualTerminal func(io.Writer) bool
}

// ExitError is the exit of a command that says nothing more on stderr: a
// tool's result that is an error (Code 1, already printed), or an interrupt
// (Code 130, Why the note printed). A command turns it into its process
// exit status.
type ExitError struct {
	Code int
	Why  string
}

func (e ExitError) Error() string {
	if e.Why != "" {
		return e.Why
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

// open opens an MCP session with the running hub on v's endpoint (see
// hubclient.Open). h receives what the hub sends on its own; it may be nil.
func (c *Client) open(ctx context.Context, v hubclient.View, h client.Handler) (*hubclient.Session, error) {
	t, err := c.Target()
	if err != nil {
		return nil, err
	}
	o := c.Options
	o.Handler = h
	return hubclient.Open(ctx, t, v, o)
}

// session opens a session on v, with handler h, whose context a Ctrl-C
// ends: end closes the session and stops watching for Ctrl-C, and
// interrupted says whether one came. A Ctrl-C while the session opens is
// the command's exit (Interrupted).
func (c *Client) session(ctx context.Context, v hubclient.View, h client.Handler) (_ context.Context, s *hubclient.Session, interrupted func() bool, end func(), err error) {
	ctx, interrupted, stop := WithInterrupt(ctx)
	if s, err = c.open(ctx, v, h); err != nil {
		defer stop()
		if interrupted() {
			return nil, nil, nil, nil, c.Interrupted(nil)
		}
		return nil, nil, nil, nil, err
	}
	return ctx, s, interrupted, func() { s.Close(); stop() }, nil
}

// Interrupted is the exit of a command the user interrupted: it sends the
// hub notifications/cancelled for the request in flight on s (so the
// upstream call is cancelled too) and closes the session, waiting at most
// CancelWait in all, says so on Stderr, and exits 130 as a shell does. s
// is nil when no session was open yet. A hub that does not answer in time
// is left to time out on its own.
func (c *Client) Interrupted(s *hubclient.Session) error {
	msg := "interrupted"
	if s != nil {
		wait := c.CancelWait
		if wait == 0 {
			wait = DefaultCancelWait
		}
		msg = "interrupted; the request was cancelled"
		if !s.Interrupt(wait) {
			msg = "interrupted; the hub did not confirm the cancellation"
		}
	}
	fmt.Fprintln(c.Stderr, "mcphub: "+msg)
	return ExitError{Code: 130, Why: msg}
}

// IsTerminal reports whether w is a terminal, so that a caller draws what
// only a terminal shows (a progress line, a browser prompt).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// terminalWidth is w's width in columns when it is a terminal, else 80.
func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 0 {
			return width
		}
	}
	return 80
}
