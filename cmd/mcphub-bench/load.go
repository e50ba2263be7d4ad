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
		mu   sync.Mutex
		lats []time.Duration
		errs int
		wg   sync.WaitGroup
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
				for time.Now().Before(deadline) {
					t0 := time.Now()
					if err := call(cs); err != nil {
						bad++
						continue
					}
					local = append(local, time.Since(t0))
				}
				mu.Lock()
				lats = append(lats, local...)
				errs += bad
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(lats)
	r := result{calls: len(lats), errors: errs, duration: elapsed}
	if len(lats) > 0 {
		r.p50 = lats[len(lats)/2]
		r.p99 = lats[len(lats)*99/100]
	}
	return r, nil
}

// notifyLoad calls the progress tool for n notifications and reports how
// many arrived per second at the client.
func notifyLoad(url, tool string, n, rounds int) (float64, error) {
	ctx := context.Background()
	var got int
	var mu sync.Mutex
	cs, err := connect(ctx, url, &mcp.ClientOptions{ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		got++
		mu.Unlock()
	}})
	if err != nil {
		return 0, err
	}
	defer cs.Close()
	best := 0.0
	for r := 0; r < rounds; r++ {
		mu.Lock()
		got = 0
		mu.Unlock()
		p := &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"n": n}}
		p.SetProgressToken(fmt.Sprintf("bench-%d", r))
		t0 := time.Now()
		if _, err := cs.CallTool(ctx, p); err != nil {
			return 0, err
		}
		el := time.Since(t0)
		mu.Lock()
		g := got
		mu.Unlock()
		if g < n*9/10 {
			return 0, fmt.Errorf("only %d of %d notifications arrived", g, n)
		}
		if rate := float64(g) / el.Seconds(); rate > best {
			best = rate
		}
	}
	return best, nil
}
