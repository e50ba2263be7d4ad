package client

import (
	"encoding/json"
	"fmt"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// A message over the size limit (Config.MaxMessageBytes) is never read
// whole, and the call that waits for it fails at once instead of waiting out
// its timeout. On stdio the start of the line is kept, up to the limit, and
// the rest discarded; from that start scanPrefix tells whose response it
// was (see oversized). Over HTTP a JSON reply fails its own call; an SSE
// event fails the call of the POST whose stream carried it, or the calls
// waiting on the stream that did (streamable_stream.go, legacy.go).

// defaultMaxMessage is the size bound of one message when
// Config.MaxMessageBytes is 0.
const defaultMaxMessage = 16 << 20

// maxMessage is the size bound of one message: a stdio line, a JSON reply,
// an SSE event.
func (c *Conn) maxMessage() int {
	if c.cfg.MaxMessageBytes > 0 {
		return c.cfg.MaxMessageBytes
	}
	return defaultMaxMessage
}

// tooLarge is the error a call gets when its response is over limit bytes.
func tooLarge(limit int) error {
	return fmt.Errorf("%w: response over %d bytes", ErrMessageTooLarge, limit)
}

// prefixInfo is what the start of a JSON-RPC message tells about it.
type prefixInfo struct {
	// id is the top-level "id" member's value, when it is a string or a
	// number that ends inside the prefix; nil otherwise.
	id json.RawMessage
	// ids counts the top-level "id" members seen.
	ids int
	// method reports a top-level "method" member: the message is a request
	// or a notification, not a response.
	method bool
	// cut names the member inside whose value the prefix ends.
	cut string
}

// scanPrefix reads the top-level members of the JSON object that prefix
// starts, as far as prefix goes. It is tolerant: it stops, keeping what it
// found, at the first byte that ends the prefix or is not JSON, and it never
// allocates more than the id it returns.
func scanPrefix(prefix []byte) prefixInfo {
	var info prefixInfo
	i := skipWS(prefix, 0)
	if i >= len(prefix) || prefix[i] != '{' {
		return info
	}
	i++
	for {
		i = skipWS(prefix, i)
		if i >= len(prefix) || prefix[i] != '"' {
			return info
		}
		kend := scanString(prefix, i)
		if kend < 0 {
			return info
		}
		key := memberName(prefix[i:kend])
		i = skipWS(prefix, kend)
		if i >= len(prefix) || prefix[i] != ':' {
			return info
		}
		vstart := skipWS(prefix, i+1)
		vend := scanValue(prefix, vstart)
		switch key {
		case "method":
			info.method = true
		case "id":
			info.ids++
			info.id = nil
			if vend >= 0 && (prefix[vstart] == '"' || prefix[vstart] == '-' || prefix[vstart] >= '0' && prefix[vstart] <= '9') {
				info.id = append(json.RawMessage(nil), prefix[vstart:vend]...)
			}
		}
		if vend < 0 {
			info.cut = key // the prefix ends inside this member's value
			return info
		}
		i = skipWS(prefix, vend)
		if i >= len(prefix) || prefix[i] != ',' {
			return info
		}
		i++
	}
}

// memberName decodes a member name (a complete JSON string, quotes
// included); one that does not decode names nothing.
func memberName(raw []byte) string {
	for _, c := range raw {
		if c == '\\' {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				return ""
			}
			return s
		}
	}
	return string(raw[1 : len(raw)-1])
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the index just past the string that starts at b[i]
// (a '"'), or -1 if b ends first.
func scanString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// scanValue returns the index just past the value that starts at b[i], or
// -1 if b ends inside it or it is not JSON. A number or a literal counts as
// ended only when a byte that cannot continue it follows inside b: "12" at
// the very end of a prefix may be the start of 123.
func scanValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		return scanString(b, i)
	case c == '{' || c == '[':
		return scanNested(b, i)
	case c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z':
		j := i
		for j < len(b) && (b[j] == '-' || b[j] == '+' || b[j] == '.' || b[j] >= '0' && b[j] <= '9' || b[j] >= 'a' && b[j] <= 'z' || b[j] == 'E') {
			j++
		}
		if j == len(b) {
			return -1
		}
		return j
	}
	return -1
}

// scanNested returns the index just past the object or array that starts at
// b[i], or -1 if b ends inside it. Brackets are counted, not matched: the
// scan only needs to find where the value ends in a well-formed message.
func scanNested(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			end := scanString(b, i)
			if end < 0 {
				return -1
			}
			i = end - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// oversized handles a message of which only prefix was read because it
// went over limit bytes. A response fails the call it answers, found by its
// id; a request or notification fails nothing; a message whose kind or id
// the prefix does not tell fails every call in flight, since one of them
// may be waiting for it.
func (c *Conn) oversized(prefix []byte, limit int) {
	info := scanPrefix(prefix)
	switch {
	case info.method || info.cut == "params":
		c.log.Error("skipped a message from the server over the size limit", "limit_bytes", limit, "kind", "request or notification")
		if info.ids == 1 && info.id != nil {
			// A request: the server waits for an answer, so it gets one.
			reply := jsonrpc.NewErrorResponse(info.id, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "request over %d bytes", limit))
			c.handlers.Go(func() { c.sendReply("", reply) })
		}
	case info.ids == 1 && info.id != nil:
		if c.failCall(info.id, tooLarge(limit)) {
			c.log.Error("a response over the size limit failed its call", "limit_bytes", limit, "rpc_id", string(info.id))
		} else {
			c.log.Error("skipped a response over the size limit for no pending request", "limit_bytes", limit, "rpc_id", string(info.id))
		}
	default:
		n := c.failAll(tooLarge(limit))
		c.log.Error("a message over the size limit whose call cannot be told failed every call in flight", "limit_bytes", limit, "calls", n)
	}
}
