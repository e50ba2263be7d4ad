package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// result is one load scenario's outcome.
type result struct {
	calls    int
	errors   int
	firstErr error
	lats     []time.Duration // every successful call's latency
	duration time.Duration
	p50, p99 time.Duration
}

func (r result) throughput() float64 { return float64(r.calls) / r.duration.Seconds() }

// connect opens one client session with the official Go SDK.
func connect(ctx context.Context, url string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "mcphub-bench", Version: "1"}, opts)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

// callLoad runs sessions × callers goroutines calling tool for d, after a
// short warm-up, and reports throughput and latency percentiles.
func callLoad(url, tool string, sessions, callers int, d time.Duration) (result, error) {
	ctx := context.Background()
	var css []*mcp.ClientSession
	defer func() {
		for _, cs := range css {
			cs.Close()
		}
	}()
	for range sessions {
		cs, err := connect(ctx, url, nil)
		if err != nil {
			return result{}, fmt.Errorf("connect %s: %w", url, err)
		}
		css = append(css, cs)
	}
	call := func(cs *mcp.ClientSession) error {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "hello from mcphub-bench"}})
		return err
	}
	// Warm-up: connections, pools and caches.
	for _, cs := range css {
		for range 20 {
			if err := call(cs); err != nil {
				return result{}, fmt.Errorf("warm-up call %s: %w", tool, err)
			}
		}
	}
	var (
		mu    sync.Mutex
		lats  []time.Duration
		errs  int
		first error
		wg    sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for _, cs := range css {
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				local := make([]time.Duration, 0, 4096)
				bad := 0
				var firstErr error
				for time.Now().Before(deadline) {
					t0 := time.Now()
					if err := call(cs); err != nil {
						if bad == 0 {
							firstErr = err
						}
						bad++
						continue
					}
					local = append(local, time.Since(t0))
				}
				mu.Lock()
				lats = append(lats, local...)
				errs += bad
				if firstErr != nil && first == nil {
					first = firstErr
				}
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	return result{errors: errs, firstErr: first, duration: elapsed, lats: lats}.summed(), nil
}

// add merges another round of the same scenario into r.
func (r result) add(o result) result {
	if r.firstErr == nil {
		r.firstErr = o.firstErr
	}
	r.errors += o.errors
	r.duration += o.duration
	r.lats = append(r.lats, o.lats...)
	return r.summed()
}

// summed fills in the count and percentiles from the latencies.
func (r result) summed() result {
	slices.Sort(r.lats)
	r.calls = len(r.lats)
	if len(r.lats) > 0 {
		r.p50 = r.lats[len(r.lats)/2]
		r.p99 = r.lats[len(r.lats)*99/100]
	}
	return r
}

// notifier calls the progress tool over one client session and measures
// how fast the notifications arrive.
type notifier struct {
	cs   *mcp.ClientSession
	tool string
	n    int
	best float64 // the best rate of any round, per second

	mu   sync.Mutex
	got  int
	last time.Time
	all  chan struct{}
}

func newNotifier(url, tool string, n int) (*notifier, error) {
	nt := &notifier{tool: tool, n: n}
	cs, err := connect(context.Background(), url, &mcp.ClientOptions{ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
		nt.mu.Lock()
		defer nt.mu.Unlock()
		nt.got++
		nt.last = time.Now()
		if nt.got == nt.n {
			close(nt.all)
		}
	}})
	if err != nil {
		return nil, err
	}
	nt.cs = cs
	return nt, nil
}

// round calls the tool for n notifications. Its rate is n over the time
// from the call to the last of them (the client may hand some to its
// handler after the call returns). Every one of them must arrive.
func (nt *notifier) round(r int) error {
	nt.mu.Lock()
	nt.got, nt.all = 0, make(chan struct{})
	done := nt.all
	nt.mu.Unlock()
	p := &mcp.CallToolParams{Name: nt.tool, Arguments: map[string]any{"n": nt.n}}
	p.SetProgressToken(fmt.Sprintf("bench-%d", r))
	t0 := time.Now()
	if _, err := nt.cs.CallTool(context.Background(), p); err != nil {
		return err
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		nt.mu.Lock()
		g := nt.got
		nt.mu.Unlock()
		return fmt.Errorf("only %d of %d notifications arrived", g, nt.n)
	}
	nt.mu.Lock()
	el := nt.last.Sub(t0)
	nt.mu.Unlock()
	nt.best = max(nt.best, float64(nt.n)/el.Seconds())
	return nil
}
