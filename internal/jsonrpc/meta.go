package jsonrpc

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"
)

// The reserved _meta keys of the 2026-07-28 revision: what a request says of
// its client, and what a result says of its server.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
)

// The JSON-RPC codes the 2026-07-28 revision allocates.
const (
	CodeHeaderMismatch             = -32020
	CodeMissingRequiredCapability  = -32021
	CodeUnsupportedProtocolVersion = -32022
)

// MetaMember returns a member of params._meta.
func MetaMember(params json.RawMessage, key string) (json.RawMessage, bool) {
	meta, ok := Member(params, "_meta")
	if !ok {
		return nil, false
	}
	return Member(meta, key)
}

// StripHopMeta returns params ready for a session-era server: without the
// _meta keys of a 2026-07-28 request that belong to its one hop, the
// protocol version (a server that reads it would answer that request as
// stateless, on a connection negotiated in the session era) and the log
// level (asked of such a server with logging/setLevel). What the request
// says of its client, its capabilities and info, stays: a server that reads
// them (SEP-2575 lets a session-era server prefer them to the session's)
// then asks only for what that client can give. An _meta left empty is
// removed; params without such keys come back as they are, not copied.
func StripHopMeta(params json.RawMessage) json.RawMessage {
	meta, ok := Member(params, "_meta")
	if !ok {
		return params
	}
	var drop []string
	others := 0
	Members(meta, func(k []byte, _ json.RawMessage) {
		switch string(k) {
		case MetaProtocolVersion, MetaLogLevel:
			drop = append(drop, string(k))
		default:
			others++
		}
	})
	if len(drop) == 0 {
		return params
	}
	var out json.RawMessage
	var err error
	if others == 0 {
		out, err = DeleteMember(params, "_meta")
	} else {
		for _, k := range drop {
			if meta, err = DeleteMember(meta, k); err != nil {
				break
			}
		}
		if err == nil {
			out, err = SetMember(params, "_meta", meta)
		}
	}
	if err != nil {
		return params
	}
	return out
}

// SetMeta returns obj with _meta[key] set to value, creating _meta when it
// is missing; every other byte of obj is kept.
func SetMeta(obj json.RawMessage, key string, value json.RawMessage) (json.RawMessage, error) {
	meta, ok := Member(obj, "_meta")
	if !ok || len(meta) == 0 || meta[0] != '{' {
		meta = json.RawMessage(`{}`)
	}
	meta, err := SetMember(meta, key, value)
	if err != nil {
		return nil, err
	}
	return SetMember(obj, "_meta", meta)
}

// The markers of a header value carried as base64 (SEP-2243): a value that
// is not plain visible ASCII, or that looks like an encoded one itself.
const (
	headerB64Prefix = "=?base64?"
	headerB64Suffix = "?="
)

// errHeaderEncoding is returned for a header value whose base64 form is
// broken.
var errHeaderEncoding = errors.New("malformed =?base64?...?= header value")

// EncodeHeaderValue returns s as an Mcp-Name or Mcp-Param-* header value:
// as it is when it is visible ASCII or inner spaces, else (and when it
// would read as an encoded value) base64 of its UTF-8 between the markers.
func EncodeHeaderValue(s string) string {
	plain := s == "" || (s[0] != ' ' && s[len(s)-1] != ' ' && s[0] != '\t' && s[len(s)-1] != '\t')
	for i := 0; plain && i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			plain = false
		}
	}
	if plain && !(strings.HasPrefix(s, headerB64Prefix) && strings.HasSuffix(s, headerB64Suffix)) {
		return s
	}
	return headerB64Prefix + base64.StdEncoding.EncodeToString([]byte(s)) + headerB64Suffix
}

// DecodeHeaderValue undoes EncodeHeaderValue: a value between the base64
// markers is decoded (it must be valid UTF-8), any other is taken as it is.
func DecodeHeaderValue(v string) (string, error) {
	if !strings.HasPrefix(v, headerB64Prefix) || !strings.HasSuffix(v, headerB64Suffix) || len(v) < len(headerB64Prefix)+len(headerB64Suffix) {
		return v, nil
	}
	b, err := base64.StdEncoding.DecodeString(v[len(headerB64Prefix) : len(v)-len(headerB64Suffix)])
	if err != nil || !utf8.Valid(b) {
		return "", errHeaderEncoding
	}
	return string(b), nil
}
