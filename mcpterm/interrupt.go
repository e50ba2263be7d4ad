package mcpterm

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
)

// WithInterrupt is ctx cancelled by the first Ctrl-C (or SIGTERM, or
// SIGHUP on Unix), which then ends the request it was made for, so that
// the command can cancel it on the hub (Interrupted); a second one ends the
// process as usual. interrupted reports whether the first one came; stop
// releases the signals.
func WithInterrupt(ctx context.Context) (_ context.Context, interrupted func() bool, stop func()) {
	if ctx == nil {
		ctx = context.Background()
	}
	ictx, cancel := context.WithCancel(ctx)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, signals...)
	var got atomic.Bool
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
			got.Store(true)
			signal.Stop(ch)
			cancel()
		case <-done:
		}
	}()
	stop = sync.OnceFunc(func() {
		signal.Stop(ch)
		close(done)
		cancel()
	})
	return ictx, got.Load, stop
}
