package hub

import (
	"encoding/json"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// members is a set of params members a route reads.
type members uint8

const (
	mName   members = 1 << iota // name: tools/call, prompts/get
	mURI                        // uri: resources/read, subscribe, unsubscribe
	mCursor                     // cursor: the list methods
	mLevel                      // level: logging/setLevel
	mRef                        // ref: completion/complete
)

// params holds the members of a request's params the router routes on,
// decoded in one pass over params. Everything else (a tool's arguments, for
// one) stays raw in the message and travels upstream as the client sent it.
type params struct {
	name, uri, cursor, level string
	ref                      ref
}

// ref is completion/complete's reference: a prompt by name or a resource
// template by URI. raw keeps its bytes for rewriting the name.
type ref struct {
	raw            json.RawMessage
	typ, name, uri string
}

// decodeParams reads the members of raw that want lists. A member of the
// wrong type is left empty, which the handler refuses as missing.
func decodeParams(raw json.RawMessage, want members) params {
	var p params
	if want == 0 {
		return p
	}
	jsonrpc.Members(raw, func(key []byte, v json.RawMessage) {
		var dst *string
		var flag members
		switch string(key) {
		case "name":
			dst, flag = &p.name, mName
		case "uri":
			dst, flag = &p.uri, mURI
		case "cursor":
			dst, flag = &p.cursor, mCursor
		case "level":
			dst, flag = &p.level, mLevel
		case "ref":
			if want&mRef != 0 {
				p.ref = decodeRef(v)
			}
		}
		if dst != nil && want&flag != 0 {
			*dst, _ = jsonrpc.String(v)
		}
	})
	return p
}

// decodeRef reads a completion reference. raw is the value as sent, of any
// type; a value that is not an object has no type, name or uri.
func decodeRef(v json.RawMessage) ref {
	r := ref{raw: v}
	jsonrpc.Members(v, func(key []byte, m json.RawMessage) {
		switch string(key) {
		case "type":
			r.typ, _ = jsonrpc.String(m)
		case "name":
			r.name, _ = jsonrpc.String(m)
		case "uri":
			r.uri, _ = jsonrpc.String(m)
		}
	})
	return r
}
