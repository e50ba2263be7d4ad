package hub

import (
	"mime"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// acceptMode is what a POST's Accept header allows the reply to be (seed 003).
type acceptMode int

const (
	// acceptInvalid: neither JSON nor SSE is listed; answer JSON anyway.
	acceptInvalid acceptMode = iota
	// acceptJSONOnly: application/json or */* only (MCP Inspector and
	// others); never SSE.
	acceptJSONOnly
	// acceptSSEOnly: only text/event-stream; SSE when the hub allows it.
	acceptSSEOnly
	// acceptBoth: the spec-compliant header; the hub chooses per method.
	acceptBoth
)

func (m acceptMode) String() string {
	return [...]string{"invalid", "json-only", "sse-only", "compliant"}[m]
}

// accept is a parsed Accept header.
type accept struct {
	mode acceptMode
	// prefersSSE: both are listed and text/event-stream ranks first, by
	// q-value or, at equal q, by order.
	prefersSSE bool
}

// parseAccept classifies an Accept header. */* counts as JSON only, since a
// client that names no type cannot be assumed to parse an event stream; a
// type with q=0 is refused, not accepted.
func parseAccept(header string) accept {
	// A client sends the same header on every request: the last one
	// parsed is kept with its answer.
	if l := lastAccept.Load(); l != nil && l.header == header {
		return l.a
	}
	a := parseAcceptHeader(header)
	lastAccept.Store(&parsedAccept{header, a})
	return a
}

type parsedAccept struct {
	header string
	a      accept
}

var lastAccept atomic.Pointer[parsedAccept]

// mediaType is a Content-Type's media type, lower-case and without
// parameters; "" when it is malformed.
func mediaType(v string) string {
	if v == "application/json" {
		return v // what every client sends: no need to parse it
	}
	mt, _, _ := mime.ParseMediaType(v)
	return mt
}

func parseAcceptHeader(header string) accept {
	jsonQ, sseQ := -1.0, -1.0
	jsonAt, sseAt := -1, -1
	for i, part := range strings.Split(header, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		if q <= 0 {
			continue
		}
		switch mt {
		case "application/json", "*/*", "application/*":
			if q > jsonQ {
				jsonQ, jsonAt = q, i
			}
		case "text/event-stream":
			if q > sseQ {
				sseQ, sseAt = q, i
			}
		}
	}
	switch {
	case jsonAt >= 0 && sseAt >= 0:
		return accept{mode: acceptBoth, prefersSSE: sseQ > jsonQ || (sseQ == jsonQ && sseAt < jsonAt)}
	case jsonAt >= 0:
		return accept{mode: acceptJSONOnly}
	case sseAt >= 0:
		return accept{mode: acceptSSEOnly}
	}
	return accept{mode: acceptInvalid}
}

// replyMode is how a request is answered.
type replyMode int

const (
	// replyJSON: one application/json body.
	replyJSON replyMode = iota
	// replySSE: an SSE stream from the start.
	replySSE
	// replyLazy: JSON if the result comes before anything else and soon;
	// otherwise the reply turns into an SSE stream (see lazyStream).
	replyLazy
)

// replyModeFor applies useSSE's rules and picks, among the SSE replies, a
// lazy one for compliant clients that rank JSON first: a tool call that
// answers at once needs no stream.
func replyModeFor(a accept, postSSE bool, m *jsonrpc.Message) replyMode {
	switch {
	case !useSSE(a, postSSE, m):
		return replyJSON
	case a.mode == acceptBoth && !a.prefersSSE:
		return replyLazy
	}
	return replySSE
}

// useSSE decides whether a request's reply may be an SSE stream (seed 003):
// never when post_sse is off or the client accepts only JSON; always when it
// accepts only SSE; and for compliant clients, for the requests that may
// produce progress or server-to-client requests (tools/call, or any request
// that carries a progress token), while cheap requests answer JSON unless
// the client ranks text/event-stream first.
func useSSE(a accept, postSSE bool, m *jsonrpc.Message) bool {
	if !postSSE {
		return false
	}
	switch a.mode {
	case acceptSSEOnly:
		return true
	case acceptBoth:
		return a.prefersSSE || mayStream(m)
	}
	return false
}

// mayStream reports whether a request may produce messages before its result.
func mayStream(m *jsonrpc.Message) bool {
	if m.Method == "tools/call" {
		return true
	}
	if meta, ok := jsonrpc.Member(m.Params, "_meta"); ok {
		if _, ok := jsonrpc.Member(meta, "progressToken"); ok {
			return true
		}
	}
	return false
}
