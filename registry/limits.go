package registry

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Limits is the [hub.limits] table: what each caller (the hub's token, an
// API key, a signed-in user) may use by default; a key's own limits
// replace them.
type Limits struct {
	// Rate is the requests a caller may make; zero for no limit.
	Rate Rate
	// ConcurrentCalls caps a caller's tool calls in progress at once; 0
	// for no cap.
	ConcurrentCalls int
}

// Rate is a rate limit: Per requests each Every, in bursts of up to Burst
// (a token bucket). The zero Rate is no limit.
type Rate struct {
	Per   int
	Every time.Duration
	Burst int
}

// IsZero reports the absence of a limit.
func (r Rate) IsZero() bool { return r.Per == 0 }

// PerSecond is the rate in requests per second.
func (r Rate) PerSecond() float64 {
	if r.Per == 0 || r.Every <= 0 {
		return 0
	}
	return float64(r.Per) / r.Every.Seconds()
}

// String writes the rate as ParseRate reads it ("10/s", "600/m").
func (r Rate) String() string {
	if r.IsZero() {
		return ""
	}
	unit := map[time.Duration]string{time.Second: "s", time.Minute: "m", time.Hour: "h"}[r.Every]
	return strconv.Itoa(r.Per) + "/" + unit
}

// ParseRate reads a rate written N/s, N/m or N/h (N a positive integer up
// to a million). Its burst is one second's worth, at least one request.
func ParseRate(s string) (Rate, error) {
	n, unit, ok := strings.Cut(strings.TrimSpace(s), "/")
	per, err := strconv.Atoi(n)
	every := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[unit]
	if !ok || err != nil || per <= 0 || per > 1_000_000 || every == 0 {
		return Rate{}, fmt.Errorf("%q is not a rate; write requests per second, minute or hour, like \"10/s\", \"600/m\" or \"1000/h\"", s)
	}
	r := Rate{Per: per, Every: every}
	r.Burst = max(1, int(r.PerSecond()))
	return r, nil
}

var hubLimitsKeys = []string{"rate", "concurrent_calls"}

// hubLimits reads [hub.limits].
func (p *parser) hubLimits(t *table, raw any) Limits {
	var l Limits
	m, ok := raw.(map[string]any)
	if !ok {
		t.errf("limits", `must be a table; write [hub.limits] with rate = "20/s" and concurrent_calls = 8`)
		return l
	}
	sub := &table{p: p, m: m, path: append(append([]string{}, t.path...), "limits")}
	sub.unknown(hubLimitsKeys, map[string]string{"rate_limit": "rate", "concurrency": "concurrent_calls", "max_concurrent_calls": "concurrent_calls"})
	var rate string
	if sub.str("rate", &rate) {
		r, err := ParseRate(rate)
		if err != nil {
			sub.errf("rate", "%s", err.Error())
		}
		l.Rate = r
	}
	sub.count("concurrent_calls", &l.ConcurrentCalls)
	return l
}
